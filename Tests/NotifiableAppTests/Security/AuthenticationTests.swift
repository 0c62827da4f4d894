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
                algorithm: .hmacSHA256, bodyHash: .hashed(.md5)
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

            func expectRefused(
                _ headers: HTTPFields, method: HTTPRequest.Method = .post, uri: String = path,
                sentBody: ByteBuffer? = body, code: String, sourceLocation: SourceLocation = #_sourceLocation
            ) async throws {
                let response = try await client.execute(uri: uri, method: method, headers: headers, body: sentBody)
                #expect(response.status == .unauthorized, sourceLocation: sourceLocation)
                #expect(response.errorCode == code, "\(String(buffer: response.body))", sourceLocation: sourceLocation)
                #expect(response.headers[.contentType]?.hasPrefix("application/json") == true, sourceLocation: sourceLocation)
            }
            func headers(
                method: HTTPRequest.Method = .post, path: String = path, date: Int64 = now,
                credential: Credential = credential
            ) -> HTTPFields {
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
            wrongMD5[HTTPField.Name("Content-MD5")!] = APIAuth.BodyHash.md5.value(of: Array("other body".utf8))
            try await expectRefused(wrongMD5, code: "invalid_signature")
            // Body changed after signing with Content-MD5 (the signature covers the MD5).
            let withMD5 = signedHeaders(method: .post, path: path, body: Self.sdkBody, credential: credential, bodyHash: .hashed(.md5))
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

    /// A browser cannot set Date (a forbidden header name for fetch): X-Date, or X-HMAC-Date before
    /// it, carries the signed date, as the api_auth gem's request drivers read it.
    @Test func aBrowsersXDateStandsInForDate() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let uri = "/api/v1/device_tokens?user_alias=alice"
            for name in ["X-Date", "X-HMAC-Date"] {
                var headers = signedHeaders(method: .get, path: uri, body: "", credential: app.deviceCredential)
                let date = try #require(headers[.date])
                headers[.date] = nil
                headers[HTTPField.Name(name)!] = date
                #expect(try await client.execute(uri: uri, method: .get, headers: headers, body: nil).status == .ok, "\(name)")
            }
            // The first of them that is present is the one signed: a stale X-Date is not rescued by Date.
            var headers = signedHeaders(method: .get, path: uri, body: "", credential: app.deviceCredential)
            headers[HTTPField.Name("X-Date")!] = "Sun, 22 Nov 2026 06:01:44 GMT"
            let stale = try await client.execute(uri: uri, method: .get, headers: headers, body: nil)
            #expect(stale.status == .unauthorized)
            // The refusal names the header the date came in.
            #expect(stale.json["error"]?["message"]?.stringValue?.hasPrefix("The X-Date header is") == true, "\(String(buffer: stale.body))")
        }
    }

    /// CONTRACT §6: a backend's POST, PUT or PATCH covers its body, with the current api_auth
    /// gem's X-Authorization-Content-SHA256 or the older Content-MD5, under either algorithm;
    /// otherwise one captured request would send any body to its path for fifteen minutes.
    @Test func serverCredentialsMustSignTheBodyOfPostPutAndPatch() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let server = app.serverCredential
            let path = "/api/v1/notifications"
            let body = #"{"message": "to one", "user_aliases": ["alice"]}"#
            func send(_ headers: HTTPFields, body sent: String = body, method: HTTPRequest.Method = .post, uri: String = path) async throws -> TestResponse {
                try await client.execute(uri: uri, method: method, headers: headers, body: ByteBuffer(string: sent))
            }

            // Unhashed, as the SDKs sign: refused for the server credential, naming the fix.
            let unhashed = try await send(signedHeaders(method: .post, path: path, body: body, credential: server, bodyHash: .unhashed))
            #expect(unhashed.status == .unauthorized)
            #expect(unhashed.errorCode == "body_not_signed")
            #expect(unhashed.json["error"]?["message"]?.stringValue?.contains("X-Authorization-Content-SHA256") == true)

            // Each hash under each algorithm is accepted.
            for algorithm in [APIAuth.Algorithm.hmacSHA1, .hmacSHA256] {
                for hash in APIAuth.BodyHash.allCases {
                    let headers = signedHeaders(method: .post, path: path, body: body, credential: server, algorithm: algorithm, bodyHash: .hashed(hash))
                    #expect(try await send(headers).status == .accepted, "\(algorithm) \(hash)")
                }
            }

            // A captured request replayed with another body (a broadcast): the hash no longer matches.
            let captured = signedHeaders(method: .post, path: path, body: body, credential: server)
            #expect(captured[HTTPField.Name("X-Authorization-Content-SHA256")!] != nil)
            let replayed = try await send(captured, body: #"{"message": "to everyone", "all": true}"#)
            #expect(replayed.status == .unauthorized)
            #expect(replayed.errorCode == "content_hash_mismatch")
            // The hash header swapped for the new body's: the signature covers the hash.
            var swapped = captured
            swapped[HTTPField.Name("X-Authorization-Content-SHA256")!] = APIAuth.BodyHash.sha256.value(of: Array(#"{"all": true, "message": "x"}"#.utf8))
            #expect(try await send(swapped, body: #"{"all": true, "message": "x"}"#).errorCode == "invalid_signature")
            #expect(try await service.integer("SELECT count(*) FROM notifications WHERE app_id = \(app.app.id) AND targeting->>'all' = 'true'") == 0)

            // PUT and PATCH too; GET and DELETE carry no body to cover.
            let device = try await client.signed(
                .post, "/api/v1/device_tokens", body: #"{"provider": "apns", "token": "\#(String(repeating: "ab", count: 32))"}"#, as: app.deviceCredential
            )
            let id = try #require(device.json["id"]?.intValue)
            for method in [HTTPRequest.Method.put, .patch] {
                let uri = "/api/v1/device_tokens/\(id)"
                let bare = try await send(
                    signedHeaders(method: method, path: uri, body: #"{"name": "x"}"#, credential: server, bodyHash: .unhashed),
                    body: #"{"name": "x"}"#, method: method, uri: uri)
                #expect(bare.errorCode == "body_not_signed", "\(method)")
                #expect(try await client.signed(method, uri, body: #"{"name": "x"}"#, as: server).status == .ok, "\(method)")
            }
            #expect(try await client.signed(.get, "/api/v1/notifications", as: server, bodyHash: .unhashed).status == .ok)

            // Device credentials keep the SDKs' form, and may hash too.
            let sdk = try await client.signed(.patch, "/api/v1/device_tokens/\(id)", body: #"{"name": "y"}"#, as: app.deviceCredential, bodyHash: .unhashed)
            #expect(sdk.status == .ok)
            let hashedDevice = try await client.signed(
                .patch, "/api/v1/device_tokens/\(id)", body: #"{"name": "z"}"#, as: app.deviceCredential, bodyHash: .hashed(.sha256)
            )
            #expect(hashedDevice.status == .ok)
        }
    }
}
