import Foundation
import HTTPTypes
import HummingbirdTesting
import NotifiableCore
import NotifiableSandbox
import NotifiableTesting
import Testing

/// Rich content: pushes wait for it, carry `rich: true`, and only the devices they reached may
/// fetch it, with its media type, ETag, caching and byte ranges.
@Suite struct E2ERichContentTests {
    /// 300 KB that do not compress, standing in for an image.
    static let image: [UInt8] = {
        var generator = SystemRandomNumberGenerator()
        return [0x89, 0x50, 0x4E, 0x47] + (0..<(300 * 1024)).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }()

    @Test func theTargetedDeviceGetsTheBytesAndNoOtherDeviceDoes() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                let other = try await service.createApp(name: "Other")
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let token = Pipeline.token(0xC0)
                let device = try await Pipeline.register(client, app.deviceCredential, token: token, alias: "kim")
                let bystander = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0xC1), alias: "lee")
                let stranger = try await Pipeline.register(client, other.deviceCredential, token: Pipeline.token(0xC2), alias: "kim")

                let sent = try await client.signed(
                    .post, "/api/v1/notifications", body: #"{"title": "New photo", "user_aliases": ["kim"], "rich": true}"#, as: app.serverCredential
                )
                #expect(sent.json["state"]?.stringValue == "awaiting_content")
                #expect(sent.json["rich"] == .bool(true))
                let id = try #require(sent.json["id"]?.intValue)
                try await Task.sleep(for: .milliseconds(500))
                #expect(gateway.pushes(to: token).isEmpty, "no push before its content exists")

                let uploaded = try await client.signed(
                    .put, "/api/v1/notifications/\(id)/content", bytes: Self.image, contentType: "image/png", as: app.serverCredential)
                #expect(uploaded.status == .created, "\(String(buffer: uploaded.body))")
                let etag = try #require(uploaded.json["etag"]?.stringValue)
                #expect(uploaded.json["size"]?.intValue == Int64(Self.image.count))
                #expect(
                    try await client.signed(.put, "/api/v1/notifications/\(id)/content", bytes: [1], contentType: "image/png", as: app.serverCredential)
                        .errorCode == "content_already_set")

                #expect(try await Pipeline.settled(service, id))
                let push = try #require(gateway.pushes(to: token).first)
                let payload = try JSONValue.decode(push.payload)
                #expect(payload["rich"] == .bool(true))
                #expect(payload["n_id"]?.intValue == id)
                #expect(payload["aps"]?["mutable-content"]?.intValue == 1, "a service extension may fetch it before the alert shows")

                let uri = "/api/v1/notifications/\(id)/content?device_token_id=\(device)"
                let whole = try await client.signed(.get, uri, as: app.deviceCredential)
                #expect(whole.status == .ok)
                #expect(Array(whole.body.readableBytesView) == Self.image)
                #expect(whole.headers[.contentType] == "image/png")
                #expect(whole.headers[.eTag] == etag)
                #expect(whole.headers[.cacheControl]?.contains("private") == true)

                let cached = try await client.signed(uri, as: app.deviceCredential, headers: [HTTPField.Name("If-None-Match")!: etag])
                #expect(cached.status == .notModified)
                #expect(cached.body.readableBytes == 0)

                let part = try await client.signed(uri, as: app.deviceCredential, headers: [HTTPField.Name("Range")!: "bytes=100-199"])
                #expect(part.status == .partialContent)
                #expect(Array(part.body.readableBytesView) == Array(Self.image[100...199]))
                #expect(part.headers[HTTPField.Name("Content-Range")!] == "bytes 100-199/\(Self.image.count)")
                let tail = try await client.signed(uri, as: app.deviceCredential, headers: [HTTPField.Name("Range")!: "bytes=-4"])
                #expect(Array(tail.body.readableBytesView) == Array(Self.image.suffix(4)))
                let beyond = try await client.signed(uri, as: app.deviceCredential, headers: [HTTPField.Name("Range")!: "bytes=999999999-"])
                #expect(beyond.status == .rangeNotSatisfiable)
                #expect(beyond.headers[HTTPField.Name("Content-Range")!] == "bytes */\(Self.image.count)")

                // Devices it was not sent to, of this app or another: 404.
                #expect(
                    try await client.signed(.get, "/api/v1/notifications/\(id)/content?device_token_id=\(bystander)", as: app.deviceCredential).status
                        == .notFound)
                #expect(
                    try await client.signed(.get, "/api/v1/notifications/\(id)/content?device_token_id=\(stranger)", as: other.deviceCredential).status
                        == .notFound)
                #expect(try await client.signed(.get, "/api/v1/notifications/\(id)/content", as: app.deviceCredential).errorField == "device_token_id")
                #expect(try await client.signed(.get, "/api/v1/notifications/\(id)/content", as: app.serverCredential).status == .ok)
            }
        }
    }

    /// With verified aliases required, a device that has a user reads that user's content only
    /// with the user's token: device credentials and a guessed device id are not enough.
    @Test func underVerifiedAliasesTheContentNeedsItsUsersToken() async throws {
        try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                func fetch(_ uri: String, token: String?) async throws -> TestResponse {
                    var headers = signedHeaders(method: .get, path: String(uri.split(separator: "?")[0]), body: "", credential: app.deviceCredential)
                    if let token { headers[HTTPField.Name("X-Notifiable-User-Token")!] = token }
                    return try await client.execute(uri: uri, method: .get, headers: headers, body: nil)
                }
                let token = Pipeline.token(0xC5)
                let device = try await Pipeline.register(client, app.deviceCredential, token: token, alias: "kim")
                let anonymous = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0xC6))
                let switched = try await client.admin(.patch, "/admin/apps/\(app.app.id)", body: #"{"require_verified_alias": true}"#, service: service)
                #expect(switched.status == .ok)

                let sent = try await client.signed(
                    .post, "/api/v1/notifications", body: #"{"title": "Private", "device_ids": [\#(device), \#(anonymous)], "rich": true}"#,
                    as: app.serverCredential
                )
                let id = try #require(sent.json["id"]?.intValue)
                let uploaded = try await client.signed(
                    .put, "/api/v1/notifications/\(id)/content", bytes: [1, 2, 3], contentType: "image/png", as: app.serverCredential)
                #expect(uploaded.status == .created)
                #expect(try await Pipeline.settled(service, id))

                let uri = "/api/v1/notifications/\(id)/content?device_token_id=\(device)"
                let bare = try await fetch(uri, token: nil)
                #expect(bare.status == .forbidden)
                #expect(bare.errorCode == "user_token_required")
                let others = try await fetch(uri, token: try await client.userToken(for: "lee", as: app.serverCredential))
                #expect(others.status == .forbidden)
                #expect(others.errorCode == "user_token_mismatch")
                let own = try await fetch(uri, token: try await client.userToken(for: "kim", as: app.serverCredential))
                #expect(own.status == .ok)
                #expect(Array(own.body.readableBytesView) == [1, 2, 3])
                // A device without a user has no one to prove, and the backend is trusted.
                #expect(try await fetch("/api/v1/notifications/\(id)/content?device_token_id=\(anonymous)", token: nil).status == .ok)
                #expect(try await client.signed(.get, "/api/v1/notifications/\(id)/content", as: app.serverCredential).status == .ok)
            }
        }
    }

    @Test func uploadsAreCheckedAndBoundedAtOneMebibyte() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let server = app.serverCredential
            let rich = try await client.signed(.post, "/api/v1/notifications", body: #"{"title": "x", "all": true, "rich": true}"#, as: server)
            let id = try #require(rich.json["id"]?.intValue)
            let plain = try #require(
                try await client.signed(.post, "/api/v1/notifications", body: #"{"title": "x", "all": true}"#, as: server).json["id"]?.intValue)
            let path = "/api/v1/notifications/\(id)/content"

            let tooBig = try await client.signed(.put, path, bytes: [UInt8](repeating: 7, count: 1024 * 1024 + 1), contentType: "image/png", as: server)
            #expect(tooBig.status == .contentTooLarge)
            #expect(try await client.signed(.put, path, bytes: [], contentType: "image/png", as: server).errorCode == "empty_content")
            #expect(try await client.signed(.put, path, bytes: Array("{".utf8), contentType: "application/json", as: server).errorCode == "invalid_json")
            #expect(try await client.signed(.put, path, bytes: [1], contentType: "png", as: server).errorField == "Content-Type")
            #expect(try await client.signed(.put, path, bytes: [1], contentType: "image/png", as: app.deviceCredential).status == .forbidden)
            #expect(
                try await client.signed(.put, "/api/v1/notifications/\(plain)/content", bytes: [1], contentType: "image/png", as: server).errorCode
                    == "not_rich")
            #expect(
                try await client.signed(.put, "/api/v1/notifications/999999999/content", bytes: [1], contentType: "image/png", as: server).status == .notFound)
            // Exactly 1 MiB of JSON-typed content is fine; other routes still stop at 64 KiB.
            let document = Array(("[" + String(repeating: "0,", count: 524_286) + "0 ]").utf8)
            #expect(document.count == 1024 * 1024)
            let accepted = try await client.signed(.put, path, bytes: document, contentType: "application/json; charset=utf-8", as: server)
            #expect(accepted.status == .created, "\(String(buffer: accepted.body))")
            #expect(accepted.json["media_type"]?.stringValue == "application/json")
            let bigJSON = #"{"title": "\#(String(repeating: "x", count: 70_000))", "all": true}"#
            #expect(try await client.signed(.post, "/api/v1/notifications", body: bigJSON, as: server).status == .contentTooLarge)
            #expect(try await client.signed(.get, "/api/v1/notifications/\(id)", as: server).json["state"]?.stringValue == "queued")
            // Other PUT routes, and device credentials on this one, stay at 64 KiB.
            let bigDevice = #"{"name": "\#(String(repeating: "x", count: 70_000))"}"#
            #expect(try await client.signed(.put, "/api/v1/device_tokens/1", body: bigDevice, as: app.deviceCredential).status == .contentTooLarge)
            let deviceUpload = try await client.signed(
                .put, path, bytes: [UInt8](repeating: 1, count: 70_000), contentType: "image/png", as: app.deviceCredential)
            #expect(deviceUpload.status == .contentTooLarge)
        }
    }
}
