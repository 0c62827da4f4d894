import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import NIOCore
import NotifiableTesting
import Synchronization
import Testing

@testable import NotifiableApp

@Suite struct JSONLogHandlerTests {
    /// Each written line, parsed.
    final class Lines: Sendable {
        let written = Mutex<[String]>([])

        func handler(label: String = "test") -> JSONLogHandler {
            JSONLogHandler(label: label) { line in self.written.withLock { $0.append(line) } }
        }

        func objects() throws -> [[String: Any]] {
            try written.withLock { $0 }.map { line in
                try #require(line.hasSuffix("\n") && line.dropLast().firstIndex(of: "\n") == nil, "one line per entry: \(line)")
                return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            }
        }
    }

    @Test func eachEntryIsOneJSONObjectOnOneLine() throws {
        let lines = Lines()
        var logger = Logger(label: "notifiable") { _ in lines.handler(label: "notifiable") }
        logger.logLevel = .debug
        logger[metadataKey: "request_id"] = "abc"
        logger.info("request", metadata: ["status": "200", "ms": "1.5"])
        logger.debug(
            "quote \" backslash \\ newline \n tab \t bell \u{7} unicode é 🙂",
            metadata: [
                "nested": ["list": ["a", "b"], "count": .stringConvertible(3)]
            ])
        logger.trace("below the level: not written")

        let objects = try lines.objects()
        try #require(objects.count == 2)
        let first = objects[0]
        #expect(first["level"] as? String == "info")
        #expect(first["label"] as? String == "notifiable")
        #expect(first["message"] as? String == "request")
        #expect(first["metadata"] as? [String: String] == ["request_id": "abc", "status": "200", "ms": "1.5"])
        let timestamp = try #require(first["timestamp"] as? String)
        let parsed = try #require(try? Date(timestamp, strategy: .iso8601.year().month().day().time(includingFractionalSeconds: true)))
        #expect(abs(parsed.timeIntervalSinceNow) < 60)
        #expect(timestamp.hasSuffix("Z"))

        let second = objects[1]
        #expect(second["message"] as? String == "quote \" backslash \\ newline \n tab \t bell \u{7} unicode é 🙂")
        let nested = (second["metadata"] as? [String: Any])?["nested"] as? [String: Any]
        #expect(nested?["list"] as? [String] == ["a", "b"])
        #expect(nested?["count"] as? Int == 3, "a number stays a number")
    }

    @Test func explicitMetadataWinsOverTheLoggers() throws {
        let lines = Lines()
        var logger = Logger(label: "x") { _ in lines.handler() }
        logger[metadataKey: "key"] = "logger"
        logger.warning("m", metadata: ["key": "call"])
        let metadata = try lines.objects().first?["metadata"] as? [String: String]
        #expect(metadata == ["key": "call"])
    }

    @Test func lineHasAStableKeyOrder() {
        let line = JSONLogHandler.line(
            date: Date(timeIntervalSince1970: 0), level: .error, label: "l", message: "m", metadata: ["b": "2", "a": "1"]
        )
        #expect(line == #"{"timestamp":"1970-01-01T00:00:00.000Z","level":"error","label":"l","message":"m","metadata":{"a":"1","b":"2"}}"# + "\n")
    }

    @Test func numbersAndBooleansStayNumbersAndBooleans() throws {
        let lines = Lines()
        let logger = Logger(label: "n") { _ in lines.handler() }
        logger.info(
            "request",
            metadata: [
                "status": .stringConvertible(404), "ms": .stringConvertible(3.25), "app_id": .stringConvertible(Int64(7)),
                "ok": .stringConvertible(false), "text": "404", "nan": .stringConvertible(Double.nan),
            ])
        let metadata = try #require(try lines.objects().first?["metadata"] as? [String: Any])
        #expect(metadata["status"] as? Int == 404)
        #expect(metadata["ms"] as? Double == 3.25)
        #expect(metadata["app_id"] as? Int == 7)
        #expect(metadata["ok"] as? Bool == false)
        #expect(metadata["text"] as? String == "404")
        #expect(metadata["nan"] as? String == "nan", "JSON has no NaN: it stays text")
    }

    /// Through the real server: the request line carries status and duration as numbers, the
    /// app it was signed for, the error code of a refusal, and the caller's trace.
    @Test func requestLinesCarryAppErrorCodeAndTrace() async throws {
        let lines = Lines()
        var logger = Logger(label: "notifiable") { _ in lines.handler(label: "notifiable") }
        logger.logLevel = .info
        try await withTestService(logger: logger) { client, service in
            let app = try await service.createApp()
            let trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
            var headers = signedHeaders(method: .post, path: "/api/v1/device_tokens", body: "{}", credential: app.deviceCredential)
            headers[HTTPField.Name("traceparent")!] = trace
            let refused = try await client.execute(uri: "/api/v1/device_tokens", method: .post, headers: headers, body: ByteBuffer(string: "{}"))
            #expect(refused.status == .unprocessableContent)
        }
        let requests = try lines.objects().filter { $0["message"] as? String == "request" }
        let line = try #require(requests.first { ($0["metadata"] as? [String: Any])?["path"] as? String == "/api/v1/device_tokens" })
        let metadata = try #require(line["metadata"] as? [String: Any])
        #expect(metadata["status"] as? Int == 422)
        #expect(metadata["ms"] is Double || metadata["ms"] is Int)
        #expect(metadata["app_id"] is Int)
        #expect(metadata["error_code"] as? String == "missing_field")
        #expect(metadata["trace_id"] as? String == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(metadata["parent_id"] as? String == "00f067aa0ba902b7")
    }

    @Test(arguments: [
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        "garbage", "",
    ])
    func malformedTraceparentsAreIgnored(_ header: String) {
        #expect(TraceParent(header) == nil)
    }

    /// W3C Trace Context §3.2: a later version may carry fields after the flags (read as version
    /// 00 is), and surrounding spaces are trimmed.
    @Test(arguments: [
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes-later",
        " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 ",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
    ])
    func wellFormedTraceparentsAreRead(_ header: String) {
        #expect(TraceParent(header) == TraceParent(traceID: "4bf92f3577b34da6a3ce929d0e0e4736", parentID: "00f067aa0ba902b7"))
    }
}
