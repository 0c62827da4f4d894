import Foundation
import NotifiableCore
import Testing

private let english = LocalizedText(title: "Hello", message: "Default text")
private let portuguese = LocalizedText(title: "Olá", message: "Texto")
private let brazilian = LocalizedText(title: "Oi", message: "Texto do Brasil")
private let french = LocalizedText(title: "Bonjour")

private let localizedContent = NotificationContent(
    text: english, localized: ["pt": portuguese, "pt-br": brazilian, "fr": french]
)

private func roundTrip<T: Codable & Equatable>(_ value: T) throws -> T {
    try JSONDecoder().decode(T.self, from: JSONEncoder().encode(value))
}

/// The stored JSON of `value`, decoded for inspection.
private func storedJSON(_ value: some Encodable) throws -> [String: JSONValue] {
    let data = try JSONEncoder().encode(value)
    return try #require(try JSONValue.decode(data).objectValue)
}

@Suite struct NotificationContentTests {}

extension NotificationContentTests {
    @Suite struct LocaleFallback {
        @Test func exactLanguageAndCountry() {
            #expect(localizedContent.text(language: "pt", country: "br") == brazilian)
        }

        @Test func languageOnlyWhenCountryHasNoVariant() {
            #expect(localizedContent.text(language: "pt", country: "pt") == portuguese)
            #expect(localizedContent.text(language: "pt", country: nil) == portuguese)
            // French gives only a title: the message falls back on the default's, field by field.
            #expect(localizedContent.text(language: "fr", country: "ca") == LocalizedText(title: "Bonjour", message: "Default text"))
        }

        /// Each field falls back on its own: `lang-COUNTRY`, then `lang`, then the default.
        @Test(
            arguments: [
                ("pt", "br", LocalizedText(title: "Oi", subtitle: "Sub PT", message: "Msg BR")),
                ("pt", "pt", LocalizedText(title: "Olá", subtitle: "Sub PT", message: "Default message")),
                ("pt", nil, LocalizedText(title: "Olá", subtitle: "Sub PT", message: "Default message")),
                ("es", "br", LocalizedText(title: "Default title", subtitle: "Default sub", message: "Default message")),
                ("fr", "fr", LocalizedText(title: "Default title", subtitle: "Default sub", message: "Message FR")),
            ] as [(String, String?, LocalizedText)])
        func eachFieldFallsBackOnItsOwn(language: String, country: String?, expected: LocalizedText) {
            let content = NotificationContent(
                text: LocalizedText(title: "Default title", subtitle: "Default sub", message: "Default message"),
                localized: [
                    "pt": LocalizedText(title: "Olá", subtitle: "Sub PT"),
                    "pt-br": LocalizedText(title: "Oi", message: "Msg BR"),
                    "fr": LocalizedText(message: "Message FR"),
                ]
            )
            #expect(content.text(language: language, country: country) == expected)
        }

        @Test func defaultWhenNoVariantFits() {
            #expect(localizedContent.text(language: "de", country: "de") == english)
            #expect(localizedContent.text(language: nil, country: "br") == english)
            #expect(localizedContent.text(language: nil, country: nil) == english)
            #expect(NotificationContent(text: english).text(language: "pt", country: "br") == english)
        }

        @Test func countryVariantIsNotUsedForOtherLanguages() {
            let content = NotificationContent(text: english, localized: ["pt-br": brazilian])
            #expect(content.text(language: "pt", country: "br") == brazilian)
            #expect(content.text(language: "pt", country: nil) == english)
            #expect(content.text(language: "es", country: "br") == english)
        }

        @Test func languageAndCountryAreCaseInsensitive() {
            #expect(localizedContent.text(language: "PT", country: "BR") == brazilian)
            #expect(localizedContent.text(language: "Pt", country: "Pt") == portuguese)
            #expect(localizedContent.text(language: "FR", country: nil).title == french.title)
        }

        @Test func parsedLocaleKeysAreFoundByDeviceLocale() throws {
            let body = try json(
                #"""
                {"title": "Hello", "localized": {"pt_BR": {"title": "Oi"}, "PT": {"title": "Olá"}}, "all": true}
                """#)
            let content = try NotificationRequest.parse(body, now: Date(timeIntervalSince1970: 1_795_132_800)).content
            #expect(content.text(language: "pt", country: "BR").title == "Oi")
            #expect(content.text(language: "pt", country: "pt").title == "Olá")
            #expect(content.text(language: "en", country: "gb").title == "Hello")
        }

        @Test func backgroundOnly() {
            #expect(NotificationContent(contentAvailable: true).isBackgroundOnly)
            #expect(!NotificationContent(text: english, contentAvailable: true).isBackgroundOnly)
            #expect(!NotificationContent(badge: 1, contentAvailable: true).isBackgroundOnly)
        }
    }
}

extension NotificationContentTests {
    @Suite struct ContentCodable {
        static let full = NotificationContent(
            text: LocalizedText(title: "Sale", subtitle: "Today only", message: "50% off"),
            localized: ["fr": LocalizedText(title: "Soldes", message: "50 % de réduction"), "pt-br": brazilian],
            parameters: [
                "deep_link": .string("app://sale"), "count": .integer(3), "ratio": .number(0.5),
                "nested": .object(["ok": .bool(true), "none": .null, "list": .array([.integer(1), .string("x")])]),
            ],
            sound: "chime.caf", badge: 4, threadID: "sales", category: "OFFER", contentAvailable: true,
            mutableContent: true, priority: .normal, collapseID: "sale-1",
            expiresAt: Date(timeIntervalSince1970: 1_795_341_600.125)
        )

        @Test func fullContentRoundTrips() throws {
            #expect(try roundTrip(Self.full) == Self.full)
        }

        @Test func defaultContentRoundTrips() throws {
            #expect(try roundTrip(NotificationContent()) == NotificationContent())
            #expect(try roundTrip(NotificationContent(androidStyle: .notification)).androidStyle == .notification)
        }

        @Test func contentStoredBeforeAndroidStylesIsDataStyle() throws {
            let old = try JSONDecoder().decode(NotificationContent.self, from: Data(#"{"text": {"title": "t"}}"#.utf8))
            #expect(old.androidStyle == .data)
        }

        @Test func storedContentUsesSnakeCaseKeys() throws {
            let stored = try storedJSON(Self.full)
            #expect(
                Set(stored.keys) == [
                    "text", "localized", "parameters", "sound", "badge", "thread_id", "category", "content_available",
                    "mutable_content", "priority", "collapse_id", "expires_at", "android_style",
                ])
            #expect(stored["android_style"] == .string("data"))
            #expect(stored["text"] == .object(["title": .string("Sale"), "subtitle": .string("Today only"), "message": .string("50% off")]))
            #expect(stored["priority"] == .string("normal"))
            #expect(stored["expires_at"] == .number(1_795_341_600.125))
        }

        @Test func expiryIsStoredAsSecondsSince1970WhateverTheDateStrategy() throws {
            let content = NotificationContent(expiresAt: Date(timeIntervalSince1970: 1_795_341_600))
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .iso8601
            let stored = try JSONValue.decode(encoder.encode(content)).objectValue
            #expect(stored?["expires_at"] == .integer(1_795_341_600))
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            #expect(try decoder.decode(NotificationContent.self, from: encoder.encode(content)) == content)
        }

        @Test func absentOptionalsAreLeftOut() throws {
            let stored = try storedJSON(NotificationContent(text: LocalizedText(title: "Hi")))
            #expect(stored["sound"] == nil)
            #expect(stored["badge"] == nil)
            #expect(stored["expires_at"] == nil)
            #expect(stored["text"] == .object(["title": .string("Hi")]))
        }

        @Test func missingKeysDecodeToDefaults() throws {
            let content = try JSONDecoder().decode(NotificationContent.self, from: Data(#"{"text": {"message": "Hi"}}"#.utf8))
            #expect(content == NotificationContent(text: LocalizedText(message: "Hi")))
        }

        @Test func parsedRequestRoundTrips() throws {
            let body = try json(
                #"""
                {"title": "Hi", "message": "There", "localized": {"pt_BR": {"message": "Oi"}},
                 "parameters": {"a": 1, "b": 2.5, "c": "x", "d": [true, null]}, "badge": 0, "sound": "default",
                 "ttl_seconds": 3600, "expires_at": null,
                 "user_aliases": ["a", "b"], "device_ids": [3, "4"],
                 "filters": [{"field": "provider", "op": "in", "value": ["gcm", "apns"]},
                             {"property": "score", "op": ">", "value": 2.5},
                             {"property": "onsite", "op": "exists"}],
                 "all": false}
                """#)
            let request = try NotificationRequest.parse(body, now: Date(timeIntervalSince1970: 1_795_132_800.5))
            #expect(try roundTrip(request.content) == request.content)
            #expect(try roundTrip(request.targeting) == request.targeting)
        }

        @Test(arguments: [1_795_132_800.001, 1_795_132_800.123, 1_795_999_999.999, 2_000_000_000.5, 4_102_444_800.777])
        func parsedExpiryRoundTripsExactly(seconds: Double) throws {
            let body = try json(#"{"title": "Hi", "all": true, "expires_at": \#(seconds)}"#)
            let content = try NotificationRequest.parse(body, now: Date(timeIntervalSince1970: 1_795_132_800)).content
            #expect(content.expiresAt == Date(timeIntervalSince1970: seconds))
            #expect(try roundTrip(content) == content)
        }
    }
}

extension NotificationContentTests {
    @Suite struct TargetingCodable {
        static let filters = [
            DeviceFilter(subject: .provider, op: .isIn, value: .array([.string("fcm"), .string("apns")])),
            DeviceFilter(subject: .language, op: .equals, value: .string("en")),
            DeviceFilter(subject: .country, op: .notEquals, value: .string("gb")),
            DeviceFilter(subject: .customProperty("onsite"), op: .exists, value: nil),
            DeviceFilter(subject: .customProperty("score"), op: .lessThan, value: .number(2.5)),
            DeviceFilter(subject: .customProperty("level"), op: .greaterThan, value: .integer(3)),
        ]
        static let full = Targeting(userAliases: ["alice", "bob"], deviceIDs: [12, 7], filters: filters, all: true)

        @Test func targetingRoundTrips() throws {
            #expect(try roundTrip(Self.full) == Self.full)
            #expect(try roundTrip(Targeting()) == Targeting())
        }

        @Test func storedTargetingUsesSnakeCaseKeys() throws {
            let stored = try storedJSON(Self.full)
            #expect(Set(stored.keys) == ["user_aliases", "device_ids", "filters", "all"])
            #expect(stored["device_ids"] == .array([.integer(12), .integer(7)]))
        }

        @Test func filtersAreStoredAsClientsSendThem() throws {
            let data = try JSONEncoder().encode(Self.filters)
            let stored = try JSONValue.decode(data)
            let expected = try json(
                #"""
                [{"field": "provider", "op": "in", "value": ["fcm", "apns"]},
                 {"field": "language", "op": "=", "value": "en"},
                 {"field": "country", "op": "!=", "value": "gb"},
                 {"property": "onsite", "op": "exists"},
                 {"property": "score", "op": "<", "value": 2.5},
                 {"property": "level", "op": ">", "value": 3}]
                """#)
            #expect(stored == expected)
        }

        @Test func subjectHasAReadableForm() throws {
            let subjects: [DeviceFilter.Subject] = [.provider, .language, .country, .customProperty("onsite")]
            let stored = try JSONValue.decode(JSONEncoder().encode(subjects))
            #expect(stored == (try json(#"[{"field": "provider"}, {"field": "language"}, {"field": "country"}, {"property": "onsite"}]"#)))
            #expect(try roundTrip(subjects) == subjects)
        }

        @Test func unknownStoredSubjectFailsToDecode() {
            #expect(throws: DecodingError.self) {
                try JSONDecoder().decode(DeviceFilter.self, from: Data(#"{"field": "name", "op": "="}"#.utf8))
            }
            #expect(throws: DecodingError.self) {
                try JSONDecoder().decode(DeviceFilter.self, from: Data(#"{"op": "exists"}"#.utf8))
            }
        }

        @Test func missingKeysDecodeToDefaults() throws {
            #expect(try JSONDecoder().decode(Targeting.self, from: Data("{}".utf8)) == Targeting())
            let targeting = try JSONDecoder().decode(Targeting.self, from: Data(#"{"all": true}"#.utf8))
            #expect(targeting == Targeting(all: true))
        }
    }
}
