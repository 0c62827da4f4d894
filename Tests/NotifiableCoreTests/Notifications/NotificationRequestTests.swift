import Foundation
import NotifiableCore
import Testing

/// 2026-11-20T00:00:00Z.
private let now = Date(timeIntervalSince1970: 1_795_132_800)

private func parse(_ text: String) throws -> NotificationRequest {
    try NotificationRequest.parse(json(text), now: now)
}

private func parseError(_ text: String) throws -> ValidationError? {
    let body = try json(text)
    return validationError { () throws(ValidationError) in try NotificationRequest.parse(body, now: now) }
}

/// A body with a title and a target, plus `members`.
private func withContent(_ members: String) -> String { #"{"title": "Hi", \#(members)}"# }
/// A body with a title and user alias target, plus `members`.
private func withTarget(_ members: String) -> String { #"{"user_aliases": ["alice"], \#(members)}"# }
/// A body whose only filter is `filter`.
private func withFilter(_ filter: String) -> String { withContent(#""filters": [\#(filter)]"#) }

private func repeated(_ character: String, _ count: Int) -> String { String(repeating: character, count: count) }

@Suite struct NotificationRequestTests {}

extension NotificationRequestTests {
    @Suite struct Parsing {
        @Test func fullExample() throws {
            let request = try parse(
                #"""
                {
                  "notification": {
                    "title": "Sale", "subtitle": "Today only", "message": "50% off everything",
                    "localized": {"fr": {"title": "Soldes", "message": "50 % de réduction"},
                                  "pt_BR": {"title": "Promoção", "subtitle": "Só hoje", "message": "50% de desconto"}},
                    "parameters": {"deep_link": "app://sale", "count": 3, "nested": {"a": [1, 2]}},
                    "sound": "chime.caf", "badge": 4, "thread_id": "sales", "category": "OFFER",
                    "content_available": true, "mutable_content": true, "priority": "normal",
                    "collapse_id": "sale-2026", "expires_at": "2026-11-22T10:00:00Z",
                    "user_aliases": ["alice", "bob", "alice"],
                    "device_ids": [12, "7", 12],
                    "filters": [{"field": "language", "op": "=", "value": "EN"},
                                {"property": "onsite", "op": "exists"}],
                    "all": false,
                    "idempotency_key": "campaign-42"
                  }
                }
                """#)
            let content = request.content
            #expect(content.text == LocalizedText(title: "Sale", subtitle: "Today only", message: "50% off everything"))
            #expect(
                content.localized == [
                    "fr": LocalizedText(title: "Soldes", message: "50 % de réduction"),
                    "pt-br": LocalizedText(title: "Promoção", subtitle: "Só hoje", message: "50% de desconto"),
                ])
            #expect(
                content.parameters == [
                    "deep_link": .string("app://sale"), "count": .integer(3),
                    "nested": .object(["a": .array([.integer(1), .integer(2)])]),
                ])
            #expect(content.sound == "chime.caf")
            #expect(content.badge == 4)
            #expect(content.threadID == "sales")
            #expect(content.category == "OFFER")
            #expect(content.contentAvailable)
            #expect(content.mutableContent)
            #expect(content.priority == .normal)
            #expect(content.collapseID == "sale-2026")
            #expect(content.expiresAt == Date(timeIntervalSince1970: 1_795_341_600))
            #expect(
                request.targeting
                    == Targeting(
                        userAliases: ["alice", "bob"],
                        deviceIDs: [12, 7],
                        filters: [
                            DeviceFilter(subject: .language, op: .equals, value: .string("en")),
                            DeviceFilter(subject: .customProperty("onsite"), op: .exists, value: nil),
                        ],
                        all: false
                    ))
            #expect(request.idempotencyKey == "campaign-42")
        }

        @Test func minimalRequestTakesDefaults() throws {
            let request = try parse(#"{"message": "Hello", "all": true}"#)
            #expect(request.content == NotificationContent(text: LocalizedText(message: "Hello")))
            #expect(request.content.priority == .high)
            #expect(!request.content.contentAvailable)
            #expect(request.content.expiresAt == nil)
            #expect(request.targeting == Targeting(all: true))
            #expect(request.idempotencyKey == nil)
        }

        @Test func topLevelAndEnvelopeAreEquivalent() throws {
            let members = #""title": "Hi", "badge": 2, "user_aliases": ["alice"], "idempotency_key": "k""#
            #expect(try parse("{\(members)}") == (try parse(#"{"notification": {\#(members)}}"#)))
        }

        @Test func envelopeAndTopLevelMayBeMixed() throws {
            let request = try parse(#"{"notification": {"title": "Hi"}, "user_aliases": ["alice"], "idempotency_key": "k"}"#)
            #expect(request.content.text.title == "Hi")
            #expect(request.targeting.userAliases == ["alice"])
            #expect(request.idempotencyKey == "k")
        }

        @Test func nullEnvelopeIsAbsent() throws {
            #expect(try parse(#"{"notification": null, "title": "Hi", "all": true}"#).content.text.title == "Hi")
        }

        @Test func nullMeansAbsent() throws {
            let request = try parse(
                #"""
                {"title": "Hi", "subtitle": null, "message": null, "localized": null, "parameters": null, "sound": null,
                 "badge": null, "thread_id": null, "category": null, "content_available": null, "mutable_content": null,
                 "priority": null, "collapse_id": null, "expires_at": null, "ttl_seconds": null, "device_ids": null,
                 "filters": null, "all": null, "idempotency_key": null, "user_aliases": ["alice"]}
                """#)
            #expect(request.content == NotificationContent(text: LocalizedText(title: "Hi")))
            #expect(request.targeting == Targeting(userAliases: ["alice"]))
        }

        @Test func emptyStringsReadAsAbsent() throws {
            let request = try parse(
                withTarget(#""title": "Hi", "message": "", "subtitle": "", "sound": "", "thread_id": "", "category": "", "collapse_id": """#))
            #expect(request.content == NotificationContent(text: LocalizedText(title: "Hi")))
        }

        @Test func textLimitsAreInclusive() throws {
            let long = repeated("é", 2048)
            let request = try parse(
                withTarget(
                    #""title": "\#(long)", "message": "\#(long)", "subtitle": "\#(long)", "thread_id": "\#(repeated("t", 255))", "category": "\#(repeated("c", 255))""#
                ))
            #expect(request.content.text.title?.count == 2048)
            #expect(request.content.threadID?.count == 255)
            #expect(request.content.category?.count == 255)
        }

        @Test func collapseIDLimitIsInUTF8Bytes() throws {
            let ascii = repeated("a", 64)
            #expect(try parse(withContent(#""collapse_id": "\#(ascii)", "all": true"#)).content.collapseID == ascii)
            let twoByte = repeated("é", 32)
            #expect(try parse(withContent(#""collapse_id": "\#(twoByte)", "all": true"#)).content.collapseID == twoByte)
        }

        @Test func badgeLimitsAreInclusive() throws {
            #expect(try parse(withTarget(#""badge": 0"#)).content.badge == 0)
            #expect(try parse(withTarget(#""badge": 99999"#)).content.badge == 99_999)
        }

        @Test func priorityIsCaseInsensitive() throws {
            #expect(try parse(withContent(#""priority": "HIGH", "all": true"#)).content.priority == .high)
            #expect(try parse(withContent(#""priority": "Normal", "all": true"#)).content.priority == .normal)
        }

        @Test func parametersUpToTheLimit() throws {
            // {"k":"…"} is 8 bytes of JSON around the value.
            let value = repeated("x", NotificationRequest.maxParametersBytes - 8)
            let request = try parse(withContent(#""parameters": {"k": "\#(value)"}, "all": true"#))
            #expect(request.content.parameters["k"] == .string(value))
        }

        @Test func idempotencyKeyLimits() throws {
            #expect(try parse(withContent(#""idempotency_key": "k", "all": true"#)).idempotencyKey == "k")
            let long = repeated("k", 255)
            #expect(try parse(withContent(#""idempotency_key": "\#(long)", "all": true"#)).idempotencyKey == long)
        }
    }
}

extension NotificationRequestTests {
    @Suite struct ShowsSomething {
        @Test(arguments: [
            #"{"title": "Hi", "all": true}"#,
            #"{"message": "Hi", "all": true}"#,
            #"{"localized": {"fr": {"title": "Salut"}}, "all": true}"#,
            #"{"localized": {"fr": {"message": "Salut"}}, "all": true}"#,
            #"{"content_available": true, "all": true}"#,
            #"{"badge": 0, "all": true}"#,
            #"{"sound": "default", "all": true}"#,
        ])
        func acceptsNotificationsThatShowOrDoSomething(body: String) throws {
            // Accepted is the whole claim: parse refuses what neither shows nor does anything.
            #expect(try parse(body).targeting.all)
        }

        @Test(arguments: [
            #"{"all": true}"#,
            #"{"subtitle": "Only a subtitle", "all": true}"#,
            #"{"title": "", "message": "", "all": true}"#,
            #"{"content_available": false, "mutable_content": true, "all": true}"#,
            #"{"localized": {"fr": {"subtitle": "Sous-titre"}}, "all": true}"#,
            #"{"localized": {"fr": {}}, "parameters": {"a": 1}, "all": true}"#,
            #"{"notification": {"category": "X", "thread_id": "t", "priority": "high"}, "all": true}"#,
        ])
        func refusesEmptyNotifications(body: String) throws {
            let error = try parseError(body)
            #expect(error?.code == "empty_notification")
            #expect(error?.field == nil)
        }

        @Test func backgroundUpdate() throws {
            let content = try parse(#"{"content_available": true, "parameters": {"sync": true}, "all": true}"#).content
            #expect(content.isBackgroundOnly)
        }
    }
}

extension NotificationRequestTests {
    @Suite struct Normalisation {
        @Test func localeKeysAreNormalised() throws {
            let request = try parse(
                withTarget(
                    #"""
                    "localized": {"pt_BR": {"title": "Oi"}, "FR": {"title": "Salut"}, "zh_TW": {"title": "Hi"}, "ast": {"title": "Hola"}}
                    """#))
            #expect(
                request.content.localized == [
                    "pt-br": LocalizedText(title: "Oi"), "fr": LocalizedText(title: "Salut"),
                    "zh-tw": LocalizedText(title: "Hi"), "ast": LocalizedText(title: "Hola"),
                ])
        }

        @Test func nullAndEmptyLocalizedVariantsAreDropped() throws {
            let request = try parse(withContent(#""localized": {"fr": null, "de": {}, "es": {"title": ""}, "it": {"title": "Ciao"}}, "all": true"#))
            #expect(request.content.localized == ["it": LocalizedText(title: "Ciao")])
        }

        @Test func userAliasesAreDedupedInOrder() throws {
            let request = try parse(withContent(#""user_aliases": ["carol", "alice", "carol", "bob", "alice", "Alice"]"#))
            #expect(request.targeting.userAliases == ["carol", "alice", "bob", "Alice"])
        }

        @Test func deviceIDsAcceptNumericStringsAndAreDeduped() throws {
            let request = try parse(withContent(#""device_ids": ["12", 7, 12, "7", 9223372036854775807, 3.0]"#))
            #expect(request.targeting.deviceIDs == [12, 7, Int64.max, 3])
        }

        @Test func providerValuesAreNormalised() throws {
            let equals = try parse(withFilter(#"{"field": "provider", "op": "=", "value": "GCM"}"#))
            #expect(equals.targeting.filters == [DeviceFilter(subject: .provider, op: .equals, value: .string("fcm"))])
            let list = try parse(withFilter(#"{"field": "provider", "op": "in", "value": ["gcm", "APNS", "fcm"]}"#))
            #expect(list.targeting.filters == [DeviceFilter(subject: .provider, op: .isIn, value: .array([.string("fcm"), .string("apns")]))])
            let notEquals = try parse(withFilter(#"{"field": "provider", "op": "!=", "value": "apns"}"#))
            #expect(notEquals.targeting.filters == [DeviceFilter(subject: .provider, op: .notEquals, value: .string("apns"))])
        }

        @Test func languageAndCountryValuesAreLowerCased() throws {
            let request = try parse(
                withContent(
                    #"""
                    "filters": [{"field": "language", "op": "in", "value": ["EN", "Pt", "ast"]},
                                {"field": "country", "op": "!=", "value": "GB"}]
                    """#))
            #expect(
                request.targeting.filters == [
                    DeviceFilter(subject: .language, op: .isIn, value: .array([.string("en"), .string("pt"), .string("ast")])),
                    DeviceFilter(subject: .country, op: .notEquals, value: .string("gb")),
                ])
        }

        @Test func fieldNamesAndOperatorsAreCaseInsensitive() throws {
            let request = try parse(withFilter(#"{"field": "Language", "op": "IN", "value": ["en"]}"#))
            #expect(request.targeting.filters == [DeviceFilter(subject: .language, op: .isIn, value: .array([.string("en")]))])
        }

        @Test func customPropertyFiltersKeepTheirValues() throws {
            let request = try parse(
                withContent(
                    #"""
                    "filters": [{"property": "onsite", "op": "=", "value": true},
                                {"property": "tier", "op": "!=", "value": "Gold"},
                                {"property": "score", "op": "<", "value": 2.5},
                                {"property": "level", "op": ">", "value": 3},
                                {"property": "team", "op": "in", "value": ["Red", 7, false, 1.5, "Red"]},
                                {"property": "beta", "op": "exists", "value": null}]
                    """#))
            #expect(
                request.targeting.filters == [
                    DeviceFilter(subject: .customProperty("onsite"), op: .equals, value: .bool(true)),
                    DeviceFilter(subject: .customProperty("tier"), op: .notEquals, value: .string("Gold")),
                    DeviceFilter(subject: .customProperty("score"), op: .lessThan, value: .number(2.5)),
                    DeviceFilter(subject: .customProperty("level"), op: .greaterThan, value: .integer(3)),
                    DeviceFilter(
                        subject: .customProperty("team"), op: .isIn,
                        value: .array([.string("Red"), .integer(7), .bool(false), .number(1.5)])),
                    DeviceFilter(subject: .customProperty("beta"), op: .exists, value: nil),
                ])
        }

        @Test func emptyArraysCountAsAbsent() throws {
            let request = try parse(withContent(#""user_aliases": [], "device_ids": [], "filters": [], "all": true"#))
            #expect(request.targeting == Targeting(all: true))
            let aliasesOnly = try parse(withContent(#""user_aliases": ["a"], "device_ids": [], "filters": []"#))
            #expect(aliasesOnly.targeting == Targeting(userAliases: ["a"]))
        }

        @Test func targetLimitsAreInclusive() throws {
            let aliases = (1...10_000).map { "\"u\($0)\"" }.joined(separator: ",")
            #expect(try parse(withContent(#""user_aliases": [\#(aliases)]"#)).targeting.userAliases.count == 10_000)
            let ids = (1...10_000).map(String.init).joined(separator: ",")
            #expect(try parse(withContent(#""device_ids": [\#(ids)]"#)).targeting.deviceIDs.count == 10_000)
            let filters = Array(repeating: #"{"property": "p", "op": "exists"}"#, count: 20).joined(separator: ",")
            #expect(try parse(withContent(#""filters": [\#(filters)]"#)).targeting.filters.count == 20)
            let values = (1...1_000).map(String.init).joined(separator: ",")
            let inFilter = try parse(withFilter(#"{"property": "p", "op": "in", "value": [\#(values)]}"#))
            #expect(inFilter.targeting.filters.first?.value == .array((1...1_000).map { .integer(Int64($0)) }))
            #expect(try parse(withContent(#""user_aliases": ["\#(repeated("a", 255))"]"#)).targeting.userAliases.count == 1)
        }
    }
}

extension NotificationRequestTests {
    @Suite struct Expiry {
        @Test func ttlCountsFromNow() throws {
            #expect(try parse(withTarget(#""title": "Hi", "ttl_seconds": 3600"#)).content.expiresAt == now.addingTimeInterval(3_600))
            // Zero is now or never at the gateways; the queue keeps it for the grace.
            let zero = try parse(withTarget(#""title": "Hi", "ttl_seconds": 0"#)).content
            #expect(zero.expiresAt == now.addingTimeInterval(NotificationContent.nowOrNeverGrace) && zero.nowOrNever)
            #expect(try parse(withTarget(#""title": "Hi", "ttl_seconds": 2419200"#)).content.expiresAt == now.addingTimeInterval(2_419_200))
        }

        @Test(arguments: [
            (#""2026-11-22T10:00:00Z""#, 1_795_341_600.0),
            (#""2026-11-22t10:00:00z""#, 1_795_341_600.0),
            (#""2026-11-22 10:00:00Z""#, 1_795_341_600.0),
            (#""2026-11-22T10:00:00.5Z""#, 1_795_341_600.5),
            (#""2026-11-22T10:00:00.250000Z""#, 1_795_341_600.25),
            (#""2026-11-22T10:00:00,125Z""#, 1_795_341_600.125),
            (#""2026-11-22T11:00:00+01:00""#, 1_795_341_600.0),
            (#""2026-11-22T05:30:00-0430""#, 1_795_341_600.0),
            (#""2026-11-22T12:00:00+02""#, 1_795_341_600.0),
            (#""2028-02-29T00:00:00Z""#, 1_835_395_200.0),
            ("1795341600", 1_795_341_600.0),
            ("1795341600.75", 1_795_341_600.75),
        ])
        func expiresAtForms(value: String, seconds: Double) throws {
            let request = try parse(withTarget(#""title": "Hi", "expires_at": \#(value)"#))
            #expect(request.content.expiresAt == Date(timeIntervalSince1970: seconds))
        }

        @Test func expiresAtIsKeptToTheMillisecond() throws {
            let request = try parse(withTarget(#""title": "Hi", "expires_at": "2026-11-22T10:00:00.123456789Z""#))
            #expect(request.content.expiresAt == Date(timeIntervalSince1970: 1_795_341_600.123))
        }

        @Test func expiresAtJustAfterNowIsAccepted() throws {
            let request = try parse(withTarget(#""title": "Hi", "expires_at": 1795132801"#))
            #expect(request.content.expiresAt == now.addingTimeInterval(1))
        }
    }
}

/// A body that must be refused, the error code and the field it names.
struct RefusalCase: Sendable, CustomTestStringConvertible {
    let body: String
    let code: String
    let field: String?
    init(_ body: String, _ code: String, _ field: String?) {
        self.body = body
        self.code = code
        self.field = field
    }
    var testDescription: String { "\(code) \(field ?? "-"): \(body.prefix(120))" }
}

private let bodyCases: [RefusalCase] = [
    RefusalCase("[1]", "invalid_body", nil),
    RefusalCase(#""hello""#, "invalid_body", nil),
    RefusalCase("null", "invalid_body", nil),
    RefusalCase("42", "invalid_body", nil),
    RefusalCase(#"{"notification": 3, "all": true}"#, "invalid_type", "notification"),
    RefusalCase(#"{"notification": ["title"], "all": true}"#, "invalid_type", "notification"),
    RefusalCase(#"{"notification": {"title": "Hi"}, "title": "Hi", "all": true}"#, "conflicting_fields", "title"),
    RefusalCase(#"{"title": "Hi\u0000", "all": true}"#, "invalid_character", "title"),
    RefusalCase(#"{"notification": {"title": "a\u0000b"}, "all": true}"#, "invalid_character", "notification.title"),
    RefusalCase(#"{"title": "Hi", "all": true, "parameters": {"k": ["\u0000"]}}"#, "invalid_character", "parameters.k.0"),
]

private let unknownFieldCases: [RefusalCase] = [
    RefusalCase(withTarget(#""titel": "Hi""#), "unknown_field", "titel"),
    RefusalCase(#"{"notification": {"body": "Hi"}, "all": true}"#, "unknown_field", "notification.body"),
    RefusalCase(withContent(#""all": true, "device_tokens": [1]"#), "unknown_field", "device_tokens"),
    RefusalCase(withContent(#""localized": {"fr": {"body": "Salut"}}, "all": true"#), "unknown_field", "localized.fr.body"),
    RefusalCase(withFilter(#"{"property": "p", "op": "=", "valeu": 1}"#), "unknown_field", "filters.0.valeu"),
    RefusalCase(#"{"notification": {"title": "Hi", "notification": {}}, "all": true}"#, "unknown_field", "notification.notification"),
]

private let typeCases: [RefusalCase] = [
    RefusalCase(withTarget(#""title": 5"#), "invalid_type", "title"),
    RefusalCase(withTarget(#""message": ["Hi"]"#), "invalid_type", "message"),
    RefusalCase(withTarget(#""title": "Hi", "subtitle": true"#), "invalid_type", "subtitle"),
    RefusalCase(#"{"notification": {"title": 5}, "all": true}"#, "invalid_type", "notification.title"),
    RefusalCase(withTarget(#""localized": ["fr"]"#), "invalid_type", "localized"),
    RefusalCase(withTarget(#""localized": {"fr": "Salut"}"#), "invalid_type", "localized.fr"),
    RefusalCase(withTarget(#""localized": {"fr": {"title": 1}}"#), "invalid_type", "localized.fr.title"),
    RefusalCase(withTarget(#""title": "Hi", "parameters": [1]"#), "invalid_type", "parameters"),
    RefusalCase(withTarget(#""title": "Hi", "parameters": "{\"a\":1}""#), "invalid_type", "parameters"),
    RefusalCase(withTarget(#""sound": 1"#), "invalid_type", "sound"),
    // A string badge counts up ("+1"); any other string is refused as a badge.
    RefusalCase(withTarget(#""badge": "3""#), "invalid_badge", "badge"),
    RefusalCase(withTarget(#""badge": "++1""#), "invalid_badge", "badge"),
    RefusalCase(withTarget(#""badge": 1.5"#), "invalid_type", "badge"),
    RefusalCase(withTarget(#""title": "Hi", "thread_id": 7"#), "invalid_type", "thread_id"),
    RefusalCase(withTarget(#""title": "Hi", "category": {}"#), "invalid_type", "category"),
    RefusalCase(withTarget(#""content_available": "true""#), "invalid_type", "content_available"),
    RefusalCase(withTarget(#""title": "Hi", "mutable_content": 1"#), "invalid_type", "mutable_content"),
    RefusalCase(withTarget(#""title": "Hi", "priority": 10"#), "invalid_type", "priority"),
    RefusalCase(withTarget(#""title": "Hi", "collapse_id": 1"#), "invalid_type", "collapse_id"),
    RefusalCase(withTarget(#""title": "Hi", "expires_at": true"#), "invalid_type", "expires_at"),
    RefusalCase(withTarget(#""title": "Hi", "ttl_seconds": "60""#), "invalid_type", "ttl_seconds"),
    RefusalCase(withTarget(#""title": "Hi", "ttl_seconds": 60.5"#), "invalid_type", "ttl_seconds"),
    RefusalCase(withContent(#""user_aliases": "alice""#), "invalid_type", "user_aliases"),
    RefusalCase(withContent(#""user_aliases": ["alice", 5]"#), "invalid_type", "user_aliases.1"),
    RefusalCase(withContent(#""device_ids": 12"#), "invalid_type", "device_ids"),
    RefusalCase(withContent(#""device_ids": [1, true]"#), "invalid_type", "device_ids.1"),
    RefusalCase(withContent(#""device_ids": [{"id": 1}]"#), "invalid_type", "device_ids.0"),
    RefusalCase(withContent(#""filters": {"field": "language"}"#), "invalid_type", "filters"),
    RefusalCase(withContent(#""filters": ["language = en"]"#), "invalid_type", "filters.0"),
    RefusalCase(withFilter(#"{"field": 1, "op": "=", "value": "en"}"#), "invalid_type", "filters.0.field"),
    RefusalCase(withFilter(#"{"property": ["p"], "op": "exists"}"#), "invalid_type", "filters.0.property"),
    RefusalCase(withFilter(#"{"property": "p", "op": 1, "value": 1}"#), "invalid_type", "filters.0.op"),
    RefusalCase(withFilter(#"{"property": "p", "op": "=", "value": {"a": 1}}"#), "invalid_type", "filters.0.value"),
    RefusalCase(withFilter(#"{"property": "p", "op": "!=", "value": [1]}"#), "invalid_type", "filters.0.value"),
    RefusalCase(withFilter(#"{"property": "p", "op": "<", "value": "5"}"#), "invalid_type", "filters.0.value"),
    RefusalCase(withFilter(#"{"property": "p", "op": ">", "value": true}"#), "invalid_type", "filters.0.value"),
    RefusalCase(withFilter(#"{"property": "p", "op": "in", "value": "a"}"#), "invalid_type", "filters.0.value"),
    RefusalCase(withFilter(#"{"property": "p", "op": "in", "value": ["a", ["b"]]}"#), "invalid_type", "filters.0.value.1"),
    RefusalCase(withFilter(#"{"property": "p", "op": "in", "value": ["a", null]}"#), "invalid_type", "filters.0.value.1"),
    RefusalCase(withFilter(#"{"field": "provider", "op": "=", "value": 1}"#), "invalid_type", "filters.0.value"),
    RefusalCase(withFilter(#"{"field": "language", "op": "in", "value": ["en", 1]}"#), "invalid_type", "filters.0.value.1"),
    RefusalCase(withFilter(#"{"field": "country", "op": "=", "value": true}"#), "invalid_type", "filters.0.value"),
    RefusalCase(withContent(#""all": "yes""#), "invalid_type", "all"),
    RefusalCase(withContent(#""all": true, "idempotency_key": 42"#), "invalid_type", "idempotency_key"),
]

private let contentCases: [RefusalCase] = [
    RefusalCase(withTarget(#""title": "\#(repeated("a", 2049))""#), "too_long", "title"),
    RefusalCase(withTarget(#""message": "\#(repeated("é", 2049))""#), "too_long", "message"),
    RefusalCase(withTarget(#""title": "Hi", "subtitle": "\#(repeated("s", 2049))""#), "too_long", "subtitle"),
    RefusalCase(#"{"notification": {"message": "\#(repeated("m", 2049))"}, "all": true}"#, "too_long", "notification.message"),
    RefusalCase(withTarget(#""localized": {"fr": {"title": "\#(repeated("t", 2049))"}}"#), "too_long", "localized.fr.title"),
    RefusalCase(withTarget(#""title": "Hi", "thread_id": "\#(repeated("t", 256))""#), "too_long", "thread_id"),
    RefusalCase(withTarget(#""title": "Hi", "category": "\#(repeated("c", 256))""#), "too_long", "category"),
    RefusalCase(withTarget(#""sound": "\#(repeated("s", 256))""#), "too_long", "sound"),
    RefusalCase(withTarget(#""title": "Hi", "collapse_id": "\#(repeated("a", 65))""#), "too_long", "collapse_id"),
    RefusalCase(withTarget(#""title": "Hi", "collapse_id": "\#(repeated("é", 33))""#), "too_long", "collapse_id"),
    RefusalCase(withTarget(#""title": "Hi", "collapse_id": "line\nbreak""#), "invalid_collapse_id", "collapse_id"),
    RefusalCase(withTarget(#""title": "Hi", "collapse_id": "nul\u0000""#), "invalid_character", "collapse_id"),
    RefusalCase(withTarget(#""title": "Hi", "collapse_id": "return\r""#), "invalid_collapse_id", "collapse_id"),
    RefusalCase(withTarget(#""title": "Hi", "collapse_id": "del\u007f""#), "invalid_collapse_id", "collapse_id"),
    RefusalCase(withTarget(#""localized": {"english": {"title": "Hi"}}"#), "invalid_locale", "localized.english"),
    RefusalCase(withTarget(#""localized": {"e": {"title": "Hi"}}"#), "invalid_locale", "localized.e"),
    RefusalCase(withTarget(#""localized": {"pt-BRA": {"title": "Oi"}}"#), "invalid_locale", "localized.pt-BRA"),
    RefusalCase(withTarget(#""localized": {"es-419": {"title": "Hola"}}"#), "invalid_locale", "localized.es-419"),
    RefusalCase(withTarget(#""localized": {"pt--br": {"title": "Oi"}}"#), "invalid_locale", "localized.pt--br"),
    RefusalCase(withTarget(#""localized": {"": {"title": "Oi"}}"#), "invalid_locale", "localized."),
    RefusalCase(withTarget(#""localized": {"pt-br": {"title": "Oi"}, "pt_BR": {"title": "Oi"}}"#), "conflicting_fields", "localized.pt_BR"),
    RefusalCase(#"{"notification": {"title": "Hi", "localized": {"fr": {}, "FR": null}}, "all": true}"#, "conflicting_fields", "notification.localized.fr"),
    RefusalCase(withTarget(#""title": "Hi", "parameters": {"aps": {"alert": "x"}}"#), "reserved_parameter", "parameters.aps"),
    RefusalCase(withTarget(#""title": "Hi", "parameters": {"ok": 1, "n_id": 5}"#), "reserved_parameter", "parameters.n_id"),
    RefusalCase(#"{"notification": {"title": "Hi", "parameters": {"n_id": 5}}, "all": true}"#, "reserved_parameter", "notification.parameters.n_id"),
    RefusalCase(withTarget(#""title": "Hi", "parameters": {"from": "alice"}"#), "reserved_parameter", "parameters.from"),
    // The Android SDK reads the notification's text from these data keys, in any case.
    RefusalCase(withTarget(#""title": "Hi", "parameters": {"title": "other"}"#), "reserved_parameter", "parameters.title"),
    RefusalCase(withTarget(#""title": "Hi", "parameters": {"Message": "other"}"#), "reserved_parameter", "parameters.Message"),
    RefusalCase(withTarget(#""title": "Hi", "parameters": {"google.c.a.e": "1"}"#), "reserved_parameter", "parameters.google.c.a.e"),
    RefusalCase(withTarget(#""title": "Hi", "parameters": {"gcm.notification.x": "1"}"#), "reserved_parameter", "parameters.gcm.notification.x"),
    RefusalCase(withTarget(#""title": "Hi", "parameters": {"k": "\#(repeated("x", 3065))"}"#), "too_large", "parameters"),
    RefusalCase(withTarget(#""badge": -1"#), "out_of_range", "badge"),
    RefusalCase(withTarget(#""badge": 100000"#), "out_of_range", "badge"),
    RefusalCase(withTarget(#""title": "Hi", "ttl_seconds": -1"#), "out_of_range", "ttl_seconds"),
    RefusalCase(withTarget(#""title": "Hi", "ttl_seconds": 2419201"#), "out_of_range", "ttl_seconds"),
    RefusalCase(withTarget(#""title": "Hi", "priority": "urgent""#), "invalid_priority", "priority"),
    RefusalCase(withTarget(#""title": "Hi", "priority": "10""#), "invalid_priority", "priority"),
    RefusalCase(#"{"notification": {"title": "Hi", "priority": ""}, "all": true}"#, "invalid_priority", "notification.priority"),
    RefusalCase(withTarget(#""title": "Hi", "ttl_seconds": 60, "expires_at": "2026-11-22T10:00:00Z""#), "conflicting_fields", "ttl_seconds"),
    RefusalCase(
        #"{"notification": {"title": "Hi", "ttl_seconds": 60}, "expires_at": 1795341600, "all": true}"#, "conflicting_fields", "notification.ttl_seconds"),
    RefusalCase(withTarget(#""title": "Hi", "expires_at": "2026-11-19T23:59:59Z""#), "already_expired", "expires_at"),
    RefusalCase(withTarget(#""title": "Hi", "expires_at": "2026-11-20T00:00:00Z""#), "already_expired", "expires_at"),
    RefusalCase(withTarget(#""title": "Hi", "expires_at": 1795132800"#), "already_expired", "expires_at"),
    RefusalCase(withTarget(#""title": "Hi", "expires_at": 0"#), "already_expired", "expires_at"),
    RefusalCase(withTarget(#""title": "Hi", "expires_at": -5"#), "already_expired", "expires_at"),
    RefusalCase(#"{"notification": {"title": "Hi", "expires_at": "2020-01-01T00:00:00Z"}, "all": true}"#, "already_expired", "notification.expires_at"),
    RefusalCase(withTarget(#""title": "Hi", "expires_at": "tomorrow""#), "invalid_date", "expires_at"),
    RefusalCase(withTarget(#""title": "Hi", "expires_at": "2026-11-22T10:00:00""#), "invalid_date", "expires_at"),
    RefusalCase(withTarget(#""title": "Hi", "expires_at": "2026-11-22""#), "invalid_date", "expires_at"),
    RefusalCase(withTarget(#""title": "Hi", "expires_at": "2026-02-30T10:00:00Z""#), "invalid_date", "expires_at"),
    RefusalCase(withTarget(#""title": "Hi", "expires_at": "2026-11-22T24:00:00Z""#), "invalid_date", "expires_at"),
    RefusalCase(withTarget(#""title": "Hi", "expires_at": "2026-11-22T10:00:00.Z""#), "invalid_date", "expires_at"),
    RefusalCase(withTarget(#""title": "Hi", "expires_at": "2026-11-22T10:00:00Zjunk""#), "invalid_date", "expires_at"),
    RefusalCase(withTarget(#""title": "Hi", "expires_at": "Sun, 22 Nov 2026 10:00:00 GMT""#), "invalid_date", "expires_at"),
    RefusalCase(withTarget(#""title": "Hi", "expires_at": 1795341600000"#), "invalid_date", "expires_at"),
    RefusalCase(withTarget(#""title": "Hi", "expires_at": 1e300"#), "invalid_date", "expires_at"),
]

private let targetingCases: [RefusalCase] = [
    RefusalCase(#"{"title": "Hi"}"#, "no_target", nil),
    RefusalCase(withContent(#""all": false"#), "no_target", nil),
    RefusalCase(withContent(#""user_aliases": [], "device_ids": [], "filters": [], "all": false"#), "no_target", nil),
    RefusalCase(#"{"notification": {"title": "Hi", "user_aliases": null}}"#, "no_target", nil),
    RefusalCase(withContent(#""user_aliases": [""]"#), "invalid_user_alias", "user_aliases.0"),
    RefusalCase(withContent(#""user_aliases": ["alice", "\#(repeated("a", 256))"]"#), "invalid_user_alias", "user_aliases.1"),
    RefusalCase(withContent(#""user_aliases": ["a\tb"]"#), "invalid_user_alias", "user_aliases.0"),
    RefusalCase(withContent(#""user_aliases": [\#(Array(repeating: "\"a\"", count: 10_001).joined(separator: ","))]"#), "too_many", "user_aliases"),
    RefusalCase(withContent(#""device_ids": [\#(Array(repeating: "1", count: 10_001).joined(separator: ","))]"#), "too_many", "device_ids"),
    RefusalCase(withContent(#""device_ids": [0]"#), "invalid_device_id", "device_ids.0"),
    RefusalCase(withContent(#""device_ids": [1, -3]"#), "invalid_device_id", "device_ids.1"),
    RefusalCase(withContent(#""device_ids": ["abc"]"#), "invalid_device_id", "device_ids.0"),
    RefusalCase(withContent(#""device_ids": ["12a"]"#), "invalid_device_id", "device_ids.0"),
    RefusalCase(withContent(#""device_ids": [" 12"]"#), "invalid_device_id", "device_ids.0"),
    RefusalCase(withContent(#""device_ids": ["-12"]"#), "invalid_device_id", "device_ids.0"),
    RefusalCase(withContent(#""device_ids": ["0"]"#), "invalid_device_id", "device_ids.0"),
    RefusalCase(withContent(#""device_ids": [""]"#), "invalid_device_id", "device_ids.0"),
    RefusalCase(withContent(#""device_ids": ["99999999999999999999"]"#), "invalid_device_id", "device_ids.0"),
    RefusalCase(withContent(#""device_ids": [1.5]"#), "invalid_device_id", "device_ids.0"),
    RefusalCase(#"{"notification": {"title": "Hi", "device_ids": [2, 0]}}"#, "invalid_device_id", "notification.device_ids.1"),
    RefusalCase(
        withContent(#""filters": [\#(Array(repeating: #"{"property": "p", "op": "exists"}"#, count: 21).joined(separator: ","))]"#), "too_many", "filters"),
    RefusalCase(
        withFilter(#"{"property": "p", "op": "in", "value": [\#((0...1_000).map(String.init).joined(separator: ","))]}"#), "too_many", "filters.0.value"),
    RefusalCase(withFilter(#"{"property": "p", "op": "~", "value": 1}"#), "invalid_operator", "filters.0.op"),
    RefusalCase(withFilter(#"{"property": "p", "op": "==", "value": 1}"#), "invalid_operator", "filters.0.op"),
    RefusalCase(withFilter(#"{"property": "p", "op": "", "value": 1}"#), "invalid_operator", "filters.0.op"),
    RefusalCase(withFilter(#"{"field": "language", "op": "exists"}"#), "invalid_operator", "filters.0.op"),
    RefusalCase(withFilter(#"{"field": "country", "op": "<", "value": 3}"#), "invalid_operator", "filters.0.op"),
    RefusalCase(withFilter(#"{"field": "provider", "op": ">", "value": 3}"#), "invalid_operator", "filters.0.op"),
    RefusalCase(
        #"{"notification": {"title": "Hi", "filters": [{"property": "p", "op": "exists"}, {"property": "q", "op": "like", "value": "x"}]}}"#,
        "invalid_operator", "notification.filters.1.op"),
    RefusalCase(withFilter(#"{"property": "p", "value": 1}"#), "missing_field", "filters.0.op"),
    RefusalCase(withFilter(#"{"op": "=", "value": 1}"#), "missing_field", "filters.0"),
    RefusalCase(withFilter(#"{"property": "p", "op": "="}"#), "missing_field", "filters.0.value"),
    RefusalCase(withFilter(#"{"field": "language", "op": "!=", "value": null}"#), "missing_field", "filters.0.value"),
    RefusalCase(withFilter(#"{"property": "p", "op": "in"}"#), "missing_field", "filters.0.value"),
    RefusalCase(withFilter(#"{"property": "p", "op": "<"}"#), "missing_field", "filters.0.value"),
    RefusalCase(withFilter(#"{"field": "language", "property": "lang", "op": "=", "value": "en"}"#), "conflicting_fields", "filters.0.property"),
    RefusalCase(withFilter(#"{"field": "user_alias", "op": "=", "value": "alice"}"#), "invalid_filter_field", "filters.0.field"),
    RefusalCase(withFilter(#"{"field": "", "op": "=", "value": "x"}"#), "invalid_filter_field", "filters.0.field"),
    RefusalCase(withFilter(#"{"property": "", "op": "exists"}"#), "invalid_value", "filters.0.property"),
    RefusalCase(withFilter(#"{"property": "\#(repeated("p", 256))", "op": "exists"}"#), "too_long", "filters.0.property"),
    RefusalCase(withFilter(#"{"property": "p", "op": "exists", "value": true}"#), "invalid_value", "filters.0.value"),
    RefusalCase(withFilter(#"{"property": "p", "op": "in", "value": []}"#), "invalid_value", "filters.0.value"),
    RefusalCase(withFilter(#"{"field": "provider", "op": "=", "value": "huawei"}"#), "invalid_provider", "filters.0.value"),
    RefusalCase(withFilter(#"{"field": "provider", "op": "in", "value": ["apns", "hms"]}"#), "invalid_provider", "filters.0.value.1"),
    RefusalCase(withFilter(#"{"field": "language", "op": "=", "value": "english"}"#), "invalid_language", "filters.0.value"),
    RefusalCase(withFilter(#"{"field": "language", "op": "=", "value": "pt-br"}"#), "invalid_language", "filters.0.value"),
    RefusalCase(withFilter(#"{"field": "country", "op": "in", "value": ["gb", "GBR"]}"#), "invalid_country", "filters.0.value.1"),
    RefusalCase(withContent(#""all": true, "idempotency_key": """#), "invalid_value", "idempotency_key"),
    RefusalCase(withContent(#""all": true, "idempotency_key": "\#(repeated("k", 256))""#), "too_long", "idempotency_key"),
]

extension NotificationRequestTests {
    @Suite struct Refusals {
        private func check(_ refusal: RefusalCase) throws {
            let error = try parseError(refusal.body)
            #expect(error?.code == refusal.code)
            #expect(error?.field == refusal.field)
            #expect(error?.message.isEmpty == false)
        }

        @Test(arguments: bodyCases) func body(_ refusal: RefusalCase) throws { try check(refusal) }
        @Test(arguments: unknownFieldCases) func unknownFields(_ refusal: RefusalCase) throws { try check(refusal) }
        @Test(arguments: typeCases) func types(_ refusal: RefusalCase) throws { try check(refusal) }
        @Test(arguments: contentCases) func content(_ refusal: RefusalCase) throws { try check(refusal) }
        @Test(arguments: targetingCases) func targeting(_ refusal: RefusalCase) throws { try check(refusal) }
    }
}

extension NotificationRequestTests {
    @Suite struct Messages {
        @Test func noTargetTellsWhichKeysToSend() throws {
            let message = try #require(try parseError(#"{"title": "Hi"}"#)).message
            for key in ["user_aliases", "device_ids", "filters", "\"all\": true"] {
                #expect(message.contains(key))
            }
        }

        @Test func unknownFieldSuggestsTheLikelyKey() throws {
            #expect(try parseError(withTarget(#""body": "Hi""#))?.message.contains("did you mean message?") == true)
            #expect(try parseError(withTarget(#""title": "Hi", "threadId": "t""#))?.message.contains("did you mean thread_id?") == true)
            #expect(try parseError(withTarget(#""title": "Hi", "content-available": true"#))?.message.contains("did you mean content_available?") == true)
            #expect(try parseError(withTarget(#""title": "Hi", "ttl": 60"#))?.message.contains("did you mean ttl_seconds?") == true)
        }

        @Test func unknownFieldWithoutAGuessListsTheFields() throws {
            let message = try #require(try parseError(withTarget(#""title": "Hi", "zzz": 1"#))).message
            #expect(message.contains("zzz"))
            #expect(message.contains("idempotency_key"))
        }

        @Test func emptyNotificationSaysWhatWouldDo() throws {
            let message = try #require(try parseError(#"{"all": true}"#)).message
            #expect(message.contains("title"))
            #expect(message.contains("content_available"))
        }

        @Test func errorsNameTheFirstProblemDeterministically() throws {
            // Two unknown keys: the first by path is named, every time.
            for _ in 0..<5 {
                #expect(try parseError(withTarget(#""zeta": 1, "alpha": 2"#))?.field == "alpha")
            }
        }
    }
}

extension NotificationRequestTests {
    /// What a body leaves unsaid comes from the app's `PushDefaults`.
    @Suite struct AppDefaults {
        let defaults = PushDefaults(androidStyle: .notification, timeToLiveSeconds: 3600, mutableContent: true, contentAvailable: true)

        @Test func withoutAnExpiryItExpiresTheAppsTimeToLiveAfterItIsSent() throws {
            let request = try parse(#"{"title": "Hi", "all": true}"#).applying(defaults, now: now)
            #expect(request.content.expiresAt == now.addingTimeInterval(3600))
            // The standard default: four weeks, FCM's own.
            let standard = try parse(#"{"title": "Hi", "all": true}"#).applying(PushDefaults(), now: now)
            #expect(standard.content.expiresAt == now.addingTimeInterval(28 * 24 * 3600))
        }

        @Test func aScheduledOneCountsFromItsSend() throws {
            let at = try parse(#"{"title": "Hi", "all": true, "send_at": "2026-11-21T00:00:00Z"}"#).applying(defaults, now: now)
            #expect(at.content.expiresAt == now.addingTimeInterval(86_400 + 3600))
            // With local_time, from the last time zone's send (UTC−12).
            let local = try parse(#"{"title": "Hi", "all": true, "send_at": "2026-11-21T00:00:00", "local_time": true}"#)
                .applying(defaults, now: now)
            #expect(local.content.expiresAt == now.addingTimeInterval(86_400 + 12 * 3600 + 3600))
        }

        @Test func anExpiryTheSenderGaveIsKeptAndZeroMeansNowOrNever() throws {
            let ttl = try parse(#"{"title": "Hi", "all": true, "ttl_seconds": 60}"#).applying(defaults, now: now)
            #expect(ttl.content.expiresAt == now.addingTimeInterval(60))
            // Zero: now or never at the gateways; the queue may still try it for a minute.
            let zero = try parse(#"{"title": "Hi", "all": true, "ttl_seconds": 0}"#).applying(defaults, now: now)
            #expect(zero.content.nowOrNever)
            #expect(zero.content.expiresAt == now.addingTimeInterval(NotificationContent.nowOrNeverGrace))
            #expect(!ttl.content.nowOrNever)
            let at = try parse(#"{"title": "Hi", "all": true, "expires_at": "2026-11-20T00:10:00Z"}"#).applying(defaults, now: now)
            #expect(at.content.expiresAt == now.addingTimeInterval(600))
        }

        @Test func iOSFlagsComeFromTheAppUnlessTheBodySays() throws {
            let unsaid = try parse(#"{"title": "Hi", "all": true}"#).applying(defaults, now: now).content
            #expect(unsaid.mutableContent && unsaid.contentAvailable)
            let said = try parse(#"{"title": "Hi", "all": true, "mutable_content": false, "content_available": false}"#)
                .applying(defaults, now: now).content
            #expect(!said.mutableContent && !said.contentAvailable)
            // mutable-content only where there is an alert for an extension to change.
            let badgeOnly = try parse(#"{"badge": 1, "all": true}"#).applying(defaults, now: now).content
            #expect(!badgeOnly.mutableContent && badgeOnly.contentAvailable)
            let off = try parse(#"{"title": "Hi", "all": true}"#).applying(PushDefaults(), now: now).content
            #expect(!off.mutableContent && !off.contentAvailable)
        }

        @Test func theAndroidStyleIsTheApps() throws {
            #expect(try parse(#"{"title": "Hi", "all": true}"#).applying(defaults, now: now).content.androidStyle == .notification)
            #expect(try parse(#"{"title": "Hi", "all": true}"#).applying(PushDefaults(), now: now).content.androidStyle == .data)
        }
    }

    @Suite struct IdempotencyDigest {
        func digest(_ text: String) throws -> [UInt8] { NotificationRequest.digest(of: try json(text)) }

        @Test func theSameRequestHasTheSameDigestWhereverTheKeyIsAndHoweverItIsWritten() throws {
            let plain = try digest(#"{"title": "Hi", "all": true}"#)
            #expect(plain.count == 32)
            #expect(try digest(#"{"all":true,"title":"Hi"}"#) == plain)
            #expect(try digest(#"{"title": "Hi", "all": true, "idempotency_key": "k1"}"#) == plain)
            #expect(
                try digest(#"{"notification": {"title": "Hi", "idempotency_key": "k1"}, "all": true}"#)
                    == digest(#"{"notification": {"title": "Hi"}, "all": true}"#))
        }

        @Test func anyOtherChangeIsAnotherRequest() throws {
            let plain = try digest(#"{"title": "Hi", "all": true}"#)
            #expect(try digest(#"{"title": "Hi!", "all": true}"#) != plain)
            #expect(try digest(#"{"title": "Hi", "user_aliases": ["alice"]}"#) != plain)
            #expect(try digest(#"{"title": "Hi", "all": true, "ttl_seconds": 60}"#) != plain)
        }
    }
}
