import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

extension TestClientProtocol {
    /// `GET /metrics` (no metrics token set) as Prometheus scrapes it: expects 200 with the text
    /// exposition's content type, and answers its samples.
    public func scrape() async throws -> PrometheusSamples {
        let answer = try await execute(uri: "/metrics", method: .get, headers: [:], body: nil)
        #expect(answer.status == .ok)
        #expect(answer.headers[.contentType] == "text/plain; version=0.0.4; charset=utf-8")
        return try PrometheusSamples(text: String(buffer: answer.body))
    }
}
