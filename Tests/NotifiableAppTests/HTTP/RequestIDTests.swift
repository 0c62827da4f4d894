import HTTPTypes
import HummingbirdTesting
import NotifiableTesting
import Testing

@testable import NotifiableApp

/// Every answer carries `X-Request-Id`: the caller's when it is safe to log, otherwise a new
/// one; the request's log line carries the same id.
@Suite struct RequestIDTests {
    static let requestID = HTTPField.Name("X-Request-Id")!

    @Test func aCallersIDIsEchoedAndLogged() async throws {
        let capture = LogCapture()
        try await withTestService(logger: capture.logger(level: .info)) { client, _ in
            let answer = try await client.execute(uri: "/health/live", method: .get, headers: [Self.requestID: "trace-42/abc"], body: nil)
            #expect(answer.headers[Self.requestID] == "trace-42/abc")
        }
        #expect(capture.text.contains("request_id=trace-42/abc"))
        #expect(capture.text.contains("path=/health/live"))
    }

    @Test func anIDIsGeneratedWhenNoneIsSentAndEvenOnErrors() async throws {
        let capture = LogCapture()
        try await withTestService(logger: capture.logger(level: .info)) { client, _ in
            let first = try await client.execute(uri: "/health/live", method: .get, headers: [:], body: nil)
            let second = try await client.execute(uri: "/no/such/route", method: .get, headers: [:], body: nil)
            #expect(second.status == .notFound)
            let ids = [first, second].compactMap { $0.headers[Self.requestID] }
            #expect(ids.count == 2)
            #expect(Set(ids).count == 2)
            for id in ids {
                #expect(id.count == 32)
                #expect(capture.text.contains("request_id=\(id)"))
            }
        }
    }

    @Test(arguments: [String(repeating: "r", count: 129), "tab\tinside", "naïve"])
    func anUnsafeIDIsReplaced(sent: String) async throws {
        let capture = LogCapture()
        try await withTestService(.live, logger: capture.logger(level: .info)) { client, _ in
            let answer = try await client.execute(uri: "/health/live", method: .get, headers: [Self.requestID: sent], body: nil)
            let echoed = try #require(answer.headers[Self.requestID])
            #expect(echoed != sent)
            #expect(echoed.count == 32)
            #expect(capture.text.contains("request_id=\(echoed)"))
            #expect(!capture.text.contains(sent))
        }
    }
}

/// The request log names a user's routes by their pattern: an alias in a path names a person, and
/// an erasure cannot reach the log store.
@Suite struct LoggedPathTests {
    @Test func aUserAliasInThePathIsNotLogged() {
        #expect(RequestLogMiddleware.loggedPath("/api/v1/users/alice%40example.com/data") == "/api/v1/users/:alias/data")
        #expect(RequestLogMiddleware.loggedPath("/api/v1/users/alice") == "/api/v1/users/:alias")
        #expect(RequestLogMiddleware.loggedPath("/api/v1/device_tokens/12") == "/api/v1/device_tokens/12")
        #expect(RequestLogMiddleware.loggedPath("/api/v1/users") == "/api/v1/users")
    }
}
