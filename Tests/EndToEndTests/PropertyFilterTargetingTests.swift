import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import PostgresNIO
import Testing

/// `filters` through POST /api/v1/notifications and the fan-out, against a seeded population:
/// which devices get a delivery. Each expected set is written from the filter's meaning:
///
/// - Values keep their JSON type: `5` is not `"5"`, `true` is not `"true"`; strings compare exactly
///   (`"gold"` is not `"Gold"`), and property keys too (`Tier` is not `tier`).
/// - `!=` holds for every device whose value is not that one, a device without the property or
///   field included (it does not have that value).
/// - `<` and `>` compare numbers as numbers (100 > 12 > 9.5 > 5), exactly; a string, a boolean or
///   a missing property is never less or greater than anything.
/// - `exists` is true when the device's custom properties have the key, whatever its value.
/// - provider, language and country compare as stored: provider by canonical name (`gcm` is
///   `fcm`), language and country case-insensitively (devices send `GB`, filters `gb`).
/// - Several filters must all hold; the filter rule is unioned with the other rules.
/// - An unregistered device and another app's device are never reached.
@Suite struct PropertyFilterTargetingTests {
    /// The app's devices by name, and devices no notification of the app may reach.
    struct Population {
        let app: AppStore.CreatedApp
        let devices: [String: Int64]
        let outsiders: [Int64]
    }

    /// Registers a device the way an app does; `fields` are further members of `device_token`.
    static func register(
        _ client: some TestClientProtocol, _ app: AppStore.CreatedApp, _ n: Int, provider: String, _ fields: String
    ) async throws -> Int64 {
        let token = Provider(wireName: provider) == .apns ? Pipeline.token(0x7B1_000 + n) : "fcm-property-filter-\(n)"
        let more = fields.isEmpty ? "" : ", \(fields)"
        return try await Pipeline.register(client, app.deviceCredential, provider: provider, token: token, extra: more)
    }

    /// The population every test filters:
    ///
    /// | device | provider (sent) | language (sent) | country (sent) | custom properties                                  |
    /// |--------|-----------------|-----------------|----------------|----------------------------------------------------|
    /// | ana    | apns            | en              | GB             | tier "gold", level 5, score 2.5, beta true, team "red", last_seen_us 1700000000000005 |
    /// | ben    | gcm             | fr              | fr             | tier "silver", level 12, score -1, beta false      |
    /// | cleo   | fcm             | EN              | us             | (sent as a JSON string) tier "Gold", level "5", beta "true", team "blue" |
    /// | dan    | apns            | de              | —              | level 3, score 0, team "blue"; user alias dan      |
    /// | eve    | apns            | —               | —              | —                                                  |
    /// | finn   | FCM             | pt              | BR             | tier "gold", level 100, score 10.75, team "red"    |
    /// | gus    | apns            | en              | US             | tier "bronze", level 9.5, team 7                   |
    /// | hana   | gcm             | ast             | gb             | Tier "gold", last_seen_us 1700000000000012         |
    /// | ivan   | APNS            | FR              | Fr             | tier "", level -7, score 1e2                       |
    ///
    /// Outsiders, carrying values most filters below would match: a device registered and then
    /// unregistered, and a device of another app.
    static func seed(_ client: some TestClientProtocol, _ service: TestService) async throws -> Population {
        let app = try await service.createApp()
        var devices: [String: Int64] = [:]
        devices["ana"] = try await register(
            client, app, 1, provider: "apns",
            #"""
            "language": "en", "country": "GB", "custom_properties": {"tier": "gold", "level": 5, "score": 2.5, "beta": true, "team": "red", "last_seen_us": 1700000000000005}
            """#)
        devices["ben"] = try await register(
            client, app, 2, provider: "gcm",
            #"""
            "language": "fr", "country": "fr", "custom_properties": {"tier": "silver", "level": 12, "score": -1, "beta": false}
            """#)
        // As the iOS SDK sends them: a string holding the JSON object.
        devices["cleo"] = try await register(
            client, app, 3, provider: "fcm",
            #"""
            "language": "EN", "country": "us", "custom_properties": "{\"tier\": \"Gold\", \"level\": \"5\", \"beta\": \"true\", \"team\": \"blue\"}"
            """#)
        devices["dan"] = try await register(
            client, app, 4, provider: "apns",
            #"""
            "user_alias": "dan", "language": "de", "custom_properties": {"level": 3, "score": 0, "team": "blue"}
            """#)
        devices["eve"] = try await register(client, app, 5, provider: "apns", "")
        devices["finn"] = try await register(
            client, app, 6, provider: "FCM",
            #"""
            "language": "pt", "country": "BR", "custom_properties": {"tier": "gold", "level": 100, "score": 10.75, "team": "red"}
            """#)
        devices["gus"] = try await register(
            client, app, 7, provider: "apns",
            #"""
            "language": "en", "country": "US", "custom_properties": {"tier": "bronze", "level": 9.5, "team": 7}
            """#)
        devices["hana"] = try await register(
            client, app, 8, provider: "gcm",
            #"""
            "language": "ast", "country": "gb", "custom_properties": {"Tier": "gold", "last_seen_us": 1700000000000012}
            """#)
        devices["ivan"] = try await register(
            client, app, 9, provider: "APNS",
            #"""
            "language": "FR", "country": "Fr", "custom_properties": {"tier": "", "level": -7, "score": 1e2}
            """#)
        #expect(Set(devices.values).count == 9)

        let everything = #"""
            "language": "en", "country": "GB", "custom_properties": {"tier": "gold", "Tier": "gold", "level": 5, "score": 2.5, "beta": true, "team": "red", "last_seen_us": 1700000000000010}
            """#
        let gone = try await register(client, app, 20, provider: "apns", everything)
        let deleted = try await client.signed(.delete, "/api/v1/device_tokens/\(gone)", as: app.deviceCredential)
        #expect(deleted.status == .noContent)
        let otherApp = try await service.createApp(name: "Other")
        let foreign = try await register(client, otherApp, 21, provider: "fcm", everything)
        return Population(app: app, devices: devices, outsiders: [gone, foreign])
    }

    /// `{"property": key, "op": op, "value": value}`, value as JSON text (none for `exists`).
    static func property(_ key: String, _ op: String, _ value: String? = nil) -> String {
        #"{"property": \#(TagExpressionTargetingTests.quoted(key)), "op": "\#(op)""# + (value.map { #", "value": \#($0)"# } ?? "") + "}"
    }

    /// `{"field": name, "op": op, "value": value}`, value as JSON text.
    static func field(_ name: String, _ op: String, _ value: String) -> String {
        #"{"field": "\#(name)", "op": "\#(op)", "value": \#(value)}"#
    }

    /// Sends one notification per case (`filters` plus `extra` members), fans them all out, and
    /// checks that each reached exactly its expected devices, and no outsider anything.
    static func check(
        _ client: some TestClientProtocol, _ service: TestService, _ population: Population,
        _ cases: [(filters: [String], extra: String, expected: Set<String>)]
    ) async throws {
        var sent: [(String, Set<String>, Int64)] = []
        for (filters, extra, expected) in cases {
            let body = #"{"message": "m", "filters": [\#(filters.joined(separator: ", "))]\#(extra.isEmpty ? "" : ", " + extra)}"#
            let id = try await Pipeline.send(client, population.app.serverCredential, body)
            sent.append((body, expected, id))
        }
        try await Pipeline.fanOut(service)

        let names = Dictionary(uniqueKeysWithValues: population.devices.map { ($0.value, $0.key) })
        for (body, expected, id) in sent {
            let reached = Set(try await TagExpressionTargetingTests.targeted(service, id).map { names[$0] ?? "outsider #\($0)" })
            #expect(reached == expected, "\(body): reached \(reached.sorted()), expected \(expected.sorted())")
        }
        let ids = sent.map { String($0.2) }.joined(separator: ", ")
        #expect(
            try await service.integer(
                "SELECT count(*) FROM notifications WHERE id IN (\(unescaped: ids)) AND state = 'fanned_out'"
            ) == Int64(sent.count))
        let outsiders = population.outsiders.map(String.init).joined(separator: ", ")
        #expect(
            try await service.integer(
                "SELECT count(*) FROM deliveries WHERE device_id IN (\(unescaped: outsiders))"
            ) == 0)
    }

    @Test func customPropertyFiltersReachExactlyTheDevicesWhoseValuesMatch() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let population = try await Self.seed(client, service)
            func p(_ key: String, _ op: String, _ value: String? = nil) -> String { Self.property(key, op, value) }
            let cases: [(filters: [String], extra: String, expected: Set<String>)] = [
                // = : the value, of the same JSON type, exactly.
                ([p("tier", "=", #""gold""#)], "", ["ana", "finn"]),
                ([p("tier", "=", #""Gold""#)], "", ["cleo"]),
                ([p("tier", "=", #""""#)], "", ["ivan"]),
                ([p("Tier", "=", #""gold""#)], "", ["hana"]),
                ([p("level", "=", "5")], "", ["ana"]),
                ([p("level", "=", "5.0")], "", ["ana"]),
                ([p("level", "=", #""5""#)], "", ["cleo"]),
                ([p("level", "=", "9.5")], "", ["gus"]),
                ([p("score", "=", "100")], "", ["ivan"]),
                ([p("team", "=", "7")], "", ["gus"]),
                ([p("team", "=", #""7""#)], "", []),
                ([p("beta", "=", "true")], "", ["ana"]),
                ([p("beta", "=", "false")], "", ["ben"]),
                ([p("beta", "=", #""true""#)], "", ["cleo"]),
                ([p("nobody", "=", #""gold""#)], "", []),
                // != : every other device, those without the property included.
                ([p("tier", "!=", #""gold""#)], "", ["ben", "cleo", "dan", "eve", "gus", "hana", "ivan"]),
                ([p("level", "!=", "5")], "", ["ben", "cleo", "dan", "eve", "finn", "gus", "hana", "ivan"]),
                ([p("beta", "!=", "true")], "", ["ben", "cleo", "dan", "eve", "finn", "gus", "hana", "ivan"]),
                ([p("nobody", "!=", "1")], "", ["ana", "ben", "cleo", "dan", "eve", "finn", "gus", "hana", "ivan"]),
                // in : any of the values, each with its own type.
                ([p("team", "in", #"["red", 7]"#)], "", ["ana", "finn", "gus"]),
                ([p("team", "IN", #"["7"]"#)], "", []),
                ([p("level", "in", "[5, 12, 100]")], "", ["ana", "ben", "finn"]),
                ([p("level", "in", #"["5", 3]"#)], "", ["cleo", "dan"]),
                ([p("beta", "in", "[true, false]")], "", ["ana", "ben"]),
                ([p("tier", "in", #"["silver", "bronze", ""]"#)], "", ["ben", "gus", "ivan"]),
                // exists : the key is there, whatever its value ("" and false included).
                ([p("beta", "exists")], "", ["ana", "ben", "cleo"]),
                ([p("tier", "exists")], "", ["ana", "ben", "cleo", "finn", "gus", "ivan"]),
                ([p("Tier", "EXISTS")], "", ["hana"]),
                ([p("nobody", "exists")], "", []),
                // < and > : numbers as numbers ("100" < "20" as text, 100 > 20 as numbers).
                ([p("level", ">", "9")], "", ["ben", "finn", "gus"]),
                ([p("level", ">", "20")], "", ["finn"]),
                ([p("level", "<", "20")], "", ["ana", "ben", "dan", "gus", "ivan"]),
                ([p("level", "<", "0")], "", ["ivan"]),
                ([p("level", ">", "9.5")], "", ["ben", "finn"]),
                ([p("level", "<", "9.5")], "", ["ana", "dan", "ivan"]),
                ([p("level", ">", "-100")], "", ["ana", "ben", "dan", "finn", "gus", "ivan"]),
                ([p("level", "<", "5")], "", ["dan", "ivan"]),
                ([p("score", "<", "2.5")], "", ["ben", "dan"]),
                ([p("score", ">", "2.5")], "", ["finn", "ivan"]),
                ([p("score", ">", "10.5")], "", ["finn", "ivan"]),
                ([p("score", "<", "10.8")], "", ["ana", "ben", "dan", "finn"]),
                ([p("score", "<", "1e3")], "", ["ana", "ben", "dan", "finn", "ivan"]),
                // Strings and booleans are never ordered against numbers.
                ([p("tier", ">", "0")], "", []),
                ([p("tier", "<", "0")], "", []),
                ([p("beta", "<", "1")], "", []),
                ([p("nobody", ">", "-1")], "", []),
            ]
            try await Self.check(client, service, population, cases)
        }
    }

    @Test func providerLanguageAndCountryFiltersReachExactlyTheMatchingDevices() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let population = try await Self.seed(client, service)
            let f = Self.field
            let apns: Set<String> = ["ana", "dan", "eve", "gus", "ivan"]
            let fcm: Set<String> = ["ben", "cleo", "finn", "hana"]
            let cases: [(filters: [String], extra: String, expected: Set<String>)] = [
                ([f("provider", "=", #""apns""#)], "", apns),
                ([f("provider", "=", #""APNs""#)], "", apns),
                ([f("provider", "=", #""gcm""#)], "", fcm),
                ([f("provider", "=", #""FCM""#)], "", fcm),
                ([f("provider", "!=", #""apns""#)], "", fcm),
                ([f("provider", "!=", #""gcm""#)], "", apns),
                ([f("provider", "in", #"["fcm"]"#)], "", fcm),
                ([f("provider", "in", #"["APNS", "gcm"]"#)], "", apns.union(fcm)),
                ([f("language", "=", #""en""#)], "", ["ana", "cleo", "gus"]),
                ([f("language", "=", #""EN""#)], "", ["ana", "cleo", "gus"]),
                ([f("language", "=", #""ast""#)], "", ["hana"]),
                ([f("language", "=", #""es""#)], "", []),
                // A device without a language is not "en".
                ([f("language", "!=", #""en""#)], "", ["ben", "dan", "eve", "finn", "hana", "ivan"]),
                ([f("language", "!=", #""Fr""#)], "", ["ana", "cleo", "dan", "eve", "finn", "gus", "hana"]),
                ([f("language", "in", #"["fr", "PT"]"#)], "", ["ben", "finn", "ivan"]),
                ([f("language", "in", #"["de", "xx"]"#)], "", ["dan"]),
                ([f("country", "=", #""gb""#)], "", ["ana", "hana"]),
                ([f("country", "=", #""GB""#)], "", ["ana", "hana"]),
                ([f("country", "=", #""us""#)], "", ["cleo", "gus"]),
                ([f("country", "!=", #""us""#)], "", ["ana", "ben", "dan", "eve", "finn", "hana", "ivan"]),
                ([f("country", "!=", #""GB""#)], "", ["ben", "cleo", "dan", "eve", "finn", "gus", "ivan"]),
                ([f("country", "in", #"["BR", "fr"]"#)], "", ["ben", "finn", "ivan"]),
                ([f("country", "in", #"["de"]"#)], "", []),
                ([f("Country", "=", #""br""#)], "", ["finn"]),
            ]
            try await Self.check(client, service, population, cases)
        }
    }

    @Test func severalFiltersMustAllHoldAndTheRuleIsUnionedWithTheOthers() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let population = try await Self.seed(client, service)
            func p(_ key: String, _ op: String, _ value: String? = nil) -> String { Self.property(key, op, value) }
            let f = Self.field
            let dan = try #require(population.devices["dan"])
            let eve = try #require(population.devices["eve"])
            let cases: [(filters: [String], extra: String, expected: Set<String>)] = [
                ([f("provider", "=", #""gcm""#), p("tier", "=", #""gold""#)], "", ["finn"]),
                ([f("language", "=", #""en""#), f("country", "!=", #""gb""#)], "", ["cleo", "gus"]),
                ([p("level", ">", "4"), p("level", "<", "20"), f("provider", "=", #""apns""#)], "", ["ana", "gus"]),
                ([p("beta", "exists"), p("beta", "!=", "true")], "", ["ben", "cleo"]),
                ([f("country", "in", #"["gb", "us"]"#), p("tier", "!=", #""gold""#), f("language", "!=", #""fr""#)], "", ["cleo", "gus", "hana"]),
                (
                    [p("tier", "!=", #""gold""#), p("tier", "!=", #""silver""#), f("provider", "!=", #""fcm""#), f("language", "!=", #""de""#)], "",
                    ["eve", "gus", "ivan"]
                ),
                ([p("team", "exists"), p("team", "!=", #""red""#), f("country", "!=", #""us""#)], "", ["dan"]),
                ([p("level", ">", "4"), p("level", ">", "4")], "", ["ana", "ben", "finn", "gus"]),
                ([p("level", ">", "10"), p("level", "<", "5")], "", []),
                ([f("provider", "=", #""apns""#), f("provider", "=", #""fcm""#)], "", []),
                ([p("score", "exists"), p("score", "<", "1"), f("language", "in", #"["de", "fr"]"#)], "", ["ben", "dan"]),
                // Unioned with the other rules: dan by alias or id, eve by id, the rest by filters.
                ([p("tier", "=", #""gold""#)], #""user_aliases": ["dan"]"#, ["ana", "dan", "finn"]),
                ([p("level", ">", "50")], #""device_ids": [\#(eve), \#(dan)]"#, ["dan", "eve", "finn"]),
                ([p("nobody", "exists")], #""tag_expression": "nobody""#, []),
                // All: every device, whatever the filters say.
                ([p("nobody", "exists")], #""all": true"#, Set(population.devices.keys)),
            ]
            try await Self.check(client, service, population, cases)
        }
    }

    /// Sixteen-digit integers (microsecond timestamps, large ids) are exact JSON numbers; a
    /// comparison with one must be as exact as `=` is, not rounded to fifteen digits.
    @Test func orderComparisonsAreExactForSixteenDigitNumbers() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let population = try await Self.seed(client, service)
            func p(_ key: String, _ op: String, _ value: String? = nil) -> String { Self.property(key, op, value) }
            let cases: [(filters: [String], extra: String, expected: Set<String>)] = [
                ([p("last_seen_us", "=", "1700000000000012")], "", ["hana"]),
                ([p("last_seen_us", "in", "[1700000000000005, 1700000000000013]")], "", ["ana"]),
                ([p("last_seen_us", ">", "1700000000000004")], "", ["ana", "hana"]),
                ([p("last_seen_us", ">", "1700000000000011")], "", ["hana"]),
                ([p("last_seen_us", "<", "1700000000000006")], "", ["ana"]),
                // 1700000000000012 < 1700000000000013, and is not > 1700000000000014.
                ([p("last_seen_us", "<", "1700000000000013")], "", ["ana", "hana"]),
                ([p("last_seen_us", ">", "1700000000000014")], "", []),
                ([p("last_seen_us", ">", "1700000000000005")], "", ["hana"]),
            ]
            try await Self.check(client, service, population, cases)
        }
    }
}
