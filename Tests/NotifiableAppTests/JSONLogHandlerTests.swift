import Foundation
import Logging
@testable import NotifiableApp
import Synchronization
import Testing

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
        logger.debug("quote \" backslash \\ newline \n tab \t bell \u{7} unicode é 🙂", metadata: [
            "nested": ["list": ["a", "b"], "count": .stringConvertible(3)],
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
        #expect(nested?["count"] as? String == "3")
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
}
