import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NotifiableCore
import NotifiableTesting
import Testing

/// CONTRACT §2: the APIAuth HMAC scheme, as the Notifiable SDKs sign requests.
@Suite struct AuthenticationTests {
    static let token = String(repeating: "ab", count: 32)

    /// Exactly what the iOS SDK sends: pretty-printed JSON, its Content-Type, path without query.
    static let sdkBody = """
    {
      "device_token" : {
        "provider" : "apns",
        "token" : "\(token)",
        "name" : "iPhone",
        "language" : "en",
        "country" : "GB",
        "custom_properties" : "{\\"onsite\\":true}"
      }
    }
    """

    @Test func requestSignedAsTheIOSSDKSignsItIsAccepted() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let response = try await client.signed(.post, "/api/v1/device_tokens", body: Self.sdkBody, as: app.deviceCredential)
            #expect(response.status == .ok)
            #expect(response.json["id"]?.intValue != nil)
        }
    }

    @Test func sha256SignaturesAndContentMD5AreAccepted() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let response = try await client.signed(
                .post, "/api/v1/device_tokens", body: Self.sdkBody, as: app.serverCredential,
                algorithm: .hmacSHA256, contentMD5: true
            )
            #expect(response.status == .ok)
        }
    }

    @Test func aSignatureOverPathAndQueryIsAcceptedLikeOneOverThePathAlone() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let uri = "/api/v1/device_tokens?user_alias=alice"
            let overPath = try await client.signed(.get, uri, as: app.deviceCredential)
            #expect(overPath.status == .ok)
            let headers = signedHeaders(method: .get, path: uri, body: "", credential: app.deviceCredential)
            let overQuery = try await client.execute(uri: uri, method: .get, headers: headers, body: nil)
            #expect(overQuery.status == .ok)
        }
    }

    @Test func refusals() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let credential = app.deviceCredential
            let path = "/api/v1/device_tokens"
            let now = Int64(Date().timeIntervalSince1970)
            let body = ByteBuffer(string: Self.sdkBody)

            func expectRefused(_ headers: HTTPFields, method: HTTPRequest.Method = .post, uri: String = path,
                               sentBody: ByteBuffer? = body, code: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
                let response = try await client.execute(uri: uri, method: method, headers: headers, body: sentBody)
                #expect(response.status == .unauthorized, sourceLocation: sourceLocation)
                #expect(response.errorCode == code, "\(String(buffer: response.body))", sourceLocation: sourceLocation)
                #expect(response.headers[.contentType]?.hasPrefix("application/json") == true, sourceLocation: sourceLocation)
            }
            func headers(method: HTTPRequest.Method = .post, path: String = path, date: Int64 = now,
                         credential: Credential = credential) -> HTTPFields {
                signedHeaders(method: method, path: path, body: Self.sdkBody, credential: credential, date: date)
            }

            // A wrong signature: signed with another secret.
            let forged = Credential(role: .device, accessID: credential.accessID, secretKey: "not-the-secret")
            try await expectRefused(headers(credential: forged), code: "invalid_signature")
            // An access id no app has.
            let stranger = Credential(role: .device, accessID: "nosuchaccessid", secretKey: credential.secretKey)
            try await expectRefused(headers(credential: stranger), code: "unknown_access_id")
            var oddAccessID = headers()
            oddAccessID[.authorization] = "APIAuth a'b;c:c2ln"
            try await expectRefused(oddAccessID, code: "unknown_access_id")
            // A Date 16 minutes off, either way.
            try await expectRefused(headers(date: now - 16 * 60), code: "date_out_of_range")
            try await expectRefused(headers(date: now + 16 * 60), code: "date_out_of_range")
            // No Date, and a Date that is not RFC 1123.
            var noDate = headers()
            noDate[.date] = nil
            try await expectRefused(noDate, code: "missing_date")
            var isoDate = headers()
            isoDate[.date] = "2026-11-22T06:01:44Z"
            try await expectRefused(isoDate, code: "invalid_date")
            // Method or path changed after signing.
            try await expectRefused(headers(method: .post), method: .get, code: "invalid_signature")
            try await expectRefused(headers(path: path), uri: "/api/v1/device_tokens.json", code: "invalid_signature")
            // A Content-MD5 put in after signing: the signature covers it, and is checked before the
            // body is read.
            var wrongMD5 = headers()
            wrongMD5[HTTPField.Name("Content-MD5")!] = APIAuth.contentMD5(of: Array("other body".utf8))
            try await expectRefused(wrongMD5, code: "invalid_signature")
            // Body changed after signing with Content-MD5 (the signature covers the MD5).
            let withMD5 = signedHeaders(method: .post, path: path, body: Self.sdkBody, credential: credential, contentMD5: true)
            try await expectRefused(withMD5, sentBody: ByteBuffer(string: Self.sdkBody + " "), code: "content_md5_mismatch")
            // No Authorization at all, and one of another scheme.
            var unsigned = headers()
            unsigned[.authorization] = nil
            try await expectRefused(unsigned, code: "missing_authorization")
            var bearer = headers()
            bearer[.authorization] = "Bearer abc"
            try await expectRefused(bearer, code: "invalid_authorization")

            // None of the refused requests registered anything.
            let count = try await service.integer("SELECT count(*) FROM devices WHERE app_id = \(app.app.id)")
            #expect(count == 0)
        }
    }

    @Test func dateWithinFifteenMinutesIsAccepted() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let now = Int64(Date().timeIntervalSince1970)
            let response = try await client.signed(
                .post, "/api/v1/device_tokens", body: Self.sdkBody, as: app.deviceCredential, date: now - 14 * 60
            )
            #expect(response.status == .ok)
        }
    }
}
