import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NotifiableCore
import NotifiableTesting
import Testing

/// Bad input always gets a clear JSON error naming the field; never a 500.
@Suite struct BadInputTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let body: String
        let status: HTTPResponse.Status
        let code: String
        let field: String?
        var testDescription: String { name }
    }

    static let hex = String(repeating: "ab", count: 32)

    static let registrationCases: [Case] = [
        Case(name: "malformed JSON", body: #"{"device_token": {"provider": "apns""#, status: .badRequest, code: "malformed_json", field: nil),
        Case(name: "not an object", body: #"["apns"]"#, status: .unprocessableContent, code: "invalid_body", field: nil),
        Case(
            name: "token of the wrong type", body: #"{"device_token": {"provider": "apns", "token": 12345}}"#, status: .unprocessableContent,
            code: "invalid_type", field: "device_token.token"),
        Case(name: "device_token not an object", body: #"{"device_token": "abc"}"#, status: .unprocessableContent, code: "invalid_type", field: "device_token"),
        Case(
            name: "missing token", body: #"{"device_token": {"provider": "apns"}}"#, status: .unprocessableContent, code: "missing_field",
            field: "device_token.token"),
        Case(
            name: "missing provider", body: #"{"device_token": {"token": "\#(hex)"}}"#, status: .unprocessableContent, code: "missing_field",
            field: "device_token.provider"),
        Case(
            name: "non-hex APNs token", body: #"{"device_token": {"provider": "apns", "token": "\#(String(repeating: "zz", count: 32))"}}"#,
            status: .unprocessableContent, code: "invalid_token", field: "device_token.token"),
        Case(
            name: "short APNs token", body: #"{"device_token": {"provider": "apns", "token": "abcd"}}"#, status: .unprocessableContent, code: "invalid_token",
            field: "device_token.token"),
        Case(
            name: "unknown provider", body: #"{"device_token": {"provider": "wns", "token": "\#(hex)"}}"#, status: .unprocessableContent,
            code: "invalid_provider", field: "device_token.provider"),
        Case(
            name: "300-character alias",
            body: #"{"device_token": {"provider": "apns", "token": "\#(hex)", "user_alias": "\#(String(repeating: "a", count: 300))"}}"#,
            status: .unprocessableContent, code: "too_long", field: "device_token.user_alias"),
        Case(
            name: "300-character name", body: #"{"device_token": {"provider": "apns", "token": "\#(hex)", "name": "\#(String(repeating: "n", count: 300))"}}"#,
            status: .unprocessableContent, code: "too_long", field: "device_token.name"),
        Case(
            name: "custom_properties a JSON array", body: #"{"device_token": {"provider": "apns", "token": "\#(hex)", "custom_properties": [1, 2]}}"#,
            status: .unprocessableContent, code: "invalid_custom_properties", field: "device_token.custom_properties"),
        Case(
            name: "custom_properties an invalid JSON string",
            body: #"{"device_token": {"provider": "apns", "token": "\#(hex)", "custom_properties": "{onsite: yes"}}"#, status: .unprocessableContent,
            code: "invalid_custom_properties", field: "device_token.custom_properties"),
        Case(
            name: "custom_properties a string holding an array",
            body: #"{"device_token": {"provider": "apns", "token": "\#(hex)", "custom_properties": "[1]"}}"#, status: .unprocessableContent,
            code: "invalid_custom_properties", field: "device_token.custom_properties"),
        Case(
            name: "language too long", body: #"{"device_token": {"provider": "apns", "token": "\#(hex)", "language": "english"}}"#,
            status: .unprocessableContent, code: "invalid_language", field: "device_token.language"),
        Case(
            name: "country of three letters", body: #"{"device_token": {"provider": "apns", "token": "\#(hex)", "country": "GBR"}}"#,
            status: .unprocessableContent, code: "invalid_country", field: "device_token.country"),
        Case(
            name: "alias of the wrong type", body: #"{"device_token": {"provider": "apns", "token": "\#(hex)", "user_alias": ["a"]}}"#,
            status: .unprocessableContent, code: "invalid_type", field: "device_token.user_alias"),
        Case(
            name: "NUL in the alias", body: #"{"device_token": {"provider": "apns", "token": "\#(hex)", "user_alias": "a\u0000b"}}"#,
            status: .unprocessableContent, code: "invalid_character", field: "device_token.user_alias"),
        Case(
            name: "NUL inside custom properties",
            body: #"{"device_token": {"provider": "apns", "token": "\#(hex)", "custom_properties": {"k": ["ok", "x\u0000"]}}}"#, status: .unprocessableContent,
            code: "invalid_character", field: "device_token.custom_properties.k.1"),
        // The SDKs send custom_properties as a string of JSON: its escapes decode to NUL only when it is read.
        Case(
            name: "NUL in a key of string-form custom properties",
            body: #"{"device_token": {"provider": "apns", "token": "\#(hex)", "custom_properties": "{\"k\\u0000\": 1}"}}"#, status: .unprocessableContent,
            code: "invalid_character", field: "device_token.custom_properties"),
        Case(
            name: "NUL in a value of string-form custom properties",
            body: #"{"device_token": {"provider": "apns", "token": "\#(hex)", "custom_properties": "{\"k\": [\"a\\u0000\"]}"}}"#, status: .unprocessableContent,
            code: "invalid_character", field: "device_token.custom_properties"),
        Case(
            name: "NUL in a platform property's key", body: #"{"provider": "apns", "token": "\#(hex)", "a\u0000": 1}"#, status: .unprocessableContent,
            code: "invalid_character", field: "a\u{0}"),
        Case(
            name: "FCM token with spaces", body: #"{"provider": "fcm", "token": "a b"}"#, status: .unprocessableContent, code: "invalid_token", field: "token"),
    ]

    @Test(arguments: registrationCases)
    func registrationIsRefusedWithAJSONErrorNamingTheField(_ testCase: Case) async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let response = try await client.signed(.post, "/api/v1/device_tokens", body: testCase.body, as: app.deviceCredential)
            #expect(response.status == testCase.status, "\(String(buffer: response.body))")
            #expect(response.errorCode == testCase.code)
            #expect(response.errorField == testCase.field)
            #expect(response.json["error"]?["message"]?.stringValue?.isEmpty == false)
            let count = try await service.integer("SELECT count(*) FROM devices WHERE app_id = \(app.app.id)")
            #expect(count == 0)
        }
    }

    @Test func oversizeBodyIs413() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let padding = String(repeating: "x", count: 70 * 1024)
            let body = #"{"device_token": {"provider": "apns", "token": "\#(Self.hex)", "name": "\#(padding)"}}"#
            let response = try await client.signed(.post, "/api/v1/device_tokens", body: body, as: app.deviceCredential)
            #expect(response.status == .contentTooLarge)
            #expect(response.errorCode == "body_too_large")
        }
    }

    @Test func oversizeCustomPropertiesAre422() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let big = String(repeating: "y", count: 17 * 1024)
            let body = #"{"device_token": {"provider": "apns", "token": "\#(Self.hex)", "custom_properties": {"big": "\#(big)"}}}"#
            let response = try await client.signed(.post, "/api/v1/device_tokens", body: body, as: app.deviceCredential)
            #expect(response.status == .unprocessableContent)
            #expect(response.errorField == "device_token.custom_properties")
        }
    }

    @Test func badUpdatesAndIdsAreRefusedCleanly() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let credential = app.deviceCredential
            let id = try #require(
                try await client.signed(
                    .post, "/api/v1/device_tokens", body: #"{"provider": "apns", "token": "\#(Self.hex)"}"#, as: credential
                ).json["id"]?.intValue)

            let badToken = try await client.signed(.patch, "/api/v1/device_tokens/\(id)", body: #"{"token": "nothex"}"#, as: credential)
            #expect(badToken.status == .unprocessableContent)
            #expect(badToken.errorField == "token")
            let malformed = try await client.signed(.patch, "/api/v1/device_tokens/\(id)", body: "{", as: credential)
            #expect(malformed.status == .badRequest)
            // String-form custom properties holding NUL, through PATCH and PUT: 422, never PostgreSQL's 22P05 as a 500.
            for method in [HTTPRequest.Method.patch, .put] {
                let nul = try await client.signed(
                    method, "/api/v1/device_tokens/\(id)", body: #"{"device_token": {"custom_properties": "{\"a\\u0000\": \"b\"}"}}"#,
                    as: credential
                )
                #expect(nul.status == .unprocessableContent, "\(method): \(String(buffer: nul.body))")
                #expect(nul.errorCode == "invalid_character")
                #expect(nul.errorField == "device_token.custom_properties")
            }
            for badID in ["abc", "0", "-1", "99999999999999999999999"] {
                let response = try await client.signed(.delete, "/api/v1/device_tokens/\(badID)", as: credential)
                #expect(response.status == .notFound, "id \(badID)")
                #expect(response.errorCode == "not_found")
            }
            let nulAlias = try await client.signed(.get, "/api/v1/device_tokens?user_alias=a%00b", as: credential)
            #expect(nulAlias.status == .unprocessableContent)
            let noAlias = try await client.signed(.get, "/api/v1/device_tokens", as: credential)
            #expect(noAlias.status == .unprocessableContent)
            #expect(noAlias.errorField == "user_alias")
        }
    }

    @Test func unknownRoutesAnswerJSON() async throws {
        try await withTestService { client, _ in
            let response = try await client.execute(uri: "/nowhere", method: .get, headers: [:], body: nil)
            #expect(response.status == .notFound)
            #expect(response.errorCode == "not_found")
        }
    }
}
