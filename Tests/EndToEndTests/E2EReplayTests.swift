import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import PostgresNIO
import Testing

/// A signed request is accepted once: the same bytes sent again within the signature's window are
/// refused with 401 `replayed_request`, by whichever API process they reach, while a request signed
/// again (a new Date, as the SDKs' retries are) goes through.
@Suite struct E2EReplayTests {
    @Test func theSamePostTwiceIsOneNotificationAndAReplayEvenDatedAhead() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let path = "/api/v1/notifications"
            let body = #"{"message": "A broadcast", "all": true}"#
            // Dated 14 minutes ahead: the longest a captured request stays good.
            let headers = signedHeaders(
                method: .post, path: path, body: body, credential: app.serverCredential, date: Int64(Date().timeIntervalSince1970) + 14 * 60)
            var statuses: [HTTPResponse.Status] = []
            var codes: [String?] = []
            for _ in 0..<3 {
                let answer = try await client.execute(uri: path, method: .post, headers: headers, body: ByteBuffer(string: body))
                statuses.append(answer.status)
                codes.append(answer.errorCode)
            }
            #expect(statuses == [.accepted, .unauthorized, .unauthorized])
            #expect(codes == [nil, "replayed_request", "replayed_request"])
            #expect(try await service.integer("SELECT count(*) FROM notifications WHERE app_id = \(app.app.id)") == 1)
            // The same notification signed again (another Date) is a new request.
            let again = try await client.signed(.post, path, body: body, as: app.serverCredential, date: Int64(Date().timeIntervalSince1970) - 1)
            #expect(again.status == .accepted)
        }
    }

    @Test func deviceRequestsAndReadsAreNotCheckedAndACorrectedRequestGoesThrough() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let now = Int64(Date().timeIntervalSince1970)
            // Device credentials ship inside every install: whoever could replay a device request can
            // sign a new one, so the SDKs' requests are not refused (and registrations cost no write).
            let body = #"{"provider": "apns", "token": "\#(Pipeline.token(0x72))"}"#
            for _ in 0..<2 {
                #expect(try await client.signed(.post, "/api/v1/device_tokens", body: body, as: app.deviceCredential, date: now).status == .ok)
            }
            // Reads are not refused: a GET changes nothing.
            for _ in 0..<2 {
                #expect(try await client.signed(.get, "/api/v1/notifications?limit=1", as: app.serverCredential, date: now).status == .ok)
            }
            // A request refused for another reason did nothing, and may be sent again once corrected.
            let path = "/api/v1/notifications"
            let sent = #"{"message": "x", "all": true}"#
            let headers = signedHeaders(method: .post, path: path, body: sent, credential: app.serverCredential, date: now)
            let altered = try await client.execute(uri: path, method: .post, headers: headers, body: ByteBuffer(string: sent + " "))
            #expect(altered.errorCode == "content_hash_mismatch")
            #expect(try await client.execute(uri: path, method: .post, headers: headers, body: ByteBuffer(string: sent)).status == .accepted)
            // What the signature does not cover cannot make a captured request new: an unsigned
            // header, or a query added to a path-only signature.
            var keyed = headers
            keyed.append(HTTPField(name: HTTPField.Name("Idempotency-Key")!, value: "k-1"))
            #expect(try await client.execute(uri: path, method: .post, headers: keyed, body: ByteBuffer(string: sent)).errorCode == "replayed_request")
            #expect(
                try await client.execute(uri: path + "?again=1", method: .post, headers: headers, body: ByteBuffer(string: sent)).errorCode
                    == "replayed_request")
            #expect(try await service.integer("SELECT count(*) FROM notifications WHERE app_id = \(app.app.id)") == 1)
        }
    }

    /// An answer that asks the client to come back (429) did nothing: a retry middleware's resend
    /// of the very same signed request is answered on its merits, not as a replay.
    @Test func aRequestAnswered429MayBeSentAgainAsIs() async throws {
        try await withTestService(configure: { $0.rateLimits.perCredential[.sends] = RateLimit(count: 1, periodSeconds: 3600) }) { client, service in
            let app = try await service.createApp()
            let path = "/api/v1/notifications"
            #expect(try await client.signed(.post, path, body: #"{"message": "one", "all": true}"#, as: app.serverCredential).status == .accepted)
            let body = #"{"message": "two", "all": true}"#
            let headers = signedHeaders(method: .post, path: path, body: body, credential: app.serverCredential)
            for _ in 0..<2 {
                let answer = try await client.execute(uri: path, method: .post, headers: headers, body: ByteBuffer(string: body))
                #expect(answer.status == .tooManyRequests, "\(answer.status) \(answer.errorCode ?? "")")
            }
        }
    }

    @Test func aReplayToAnotherAPIProcessIsRefusedToo() async throws {
        try await TestDatabase.withFreshDatabase { url in
            let app = try await withTestService(onDatabase: url) { _, service in try await service.createApp() }
            let ports = [freeLoopbackPort(), freeLoopbackPort()]
            let processes = try ports.map { port in
                try NotifiableProcess(
                    ["serve", "--no-workers"],
                    environment: [
                        "DATABASE_URL": url, "NOTIFIABLE_MASTER_KEY": TestDatabase.masterKey.base64,
                        "NOTIFIABLE_MIGRATIONS_DIR": TestDatabase.migrationsDirectory.path, "PORT": "\(port)", "LOG_LEVEL": "error",
                    ])
            }
            for port in ports {
                let deadline = ContinuousClock.now + .seconds(60)
                while ContinuousClock.now < deadline,
                    await !RawConnection.exchange(port: port, "GET /health/ready HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").hasPrefix("HTTP/1.1 200")
                {
                    try await Task.sleep(for: .milliseconds(200))
                }
            }
            let path = "/api/v1/notifications"
            let body = #"{"message": "Once", "all": true}"#
            let headers = signedHeaders(method: .post, path: path, body: body, credential: app.serverCredential)
            var text = "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: \(body.utf8.count)\r\n"
            for field in headers { text += "\(field.name): \(field.value)\r\n" }
            let firstAnswer = await RawConnection.exchange(port: ports[0], text + "\r\n" + body)
            let secondAnswer = await RawConnection.exchange(port: ports[1], text + "\r\n" + body)
            #expect(firstAnswer.hasPrefix("HTTP/1.1 202"), "\(firstAnswer)")
            #expect(secondAnswer.hasPrefix("HTTP/1.1 401") && secondAnswer.contains("replayed_request"), "\(secondAnswer)")
            for process in processes { await process.terminate() }
        }
    }
}
