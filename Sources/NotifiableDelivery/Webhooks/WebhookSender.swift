import AsyncHTTPClient
import Foundation
import NIOCore
import NotifiableCore
import NotifiableStore

/// POSTs one batch to its webhook, signed, within a deadline, and says how it went.
public struct WebhookSender: Sendable {
    public enum Outcome: Sendable, Equatable {
        /// The receiver answered 2xx.
        case delivered(status: Int)
        /// Anything else: another status, no answer in time, no connection.
        case failed(status: Int?, error: String, retryAfter: Duration?)

        public var isDelivered: Bool {
            if case .delivered = self { true } else { false }
        }
    }

    let client: HTTPClient
    let requestTimeout: Duration
    let targets: WebhookTargets
    let now: @Sendable () -> Date

    public init(
        client: HTTPClient, requestTimeout: Duration, targets: WebhookTargets = WebhookTargets(refusesInternalAddresses: false),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.client = client
        self.requestTimeout = requestTimeout
        self.targets = targets
        self.now = now
    }

    /// A client for webhooks: redirects are not followed (a receiver may not send our signed
    /// events, or us, elsewhere).
    public static func makeHTTPClient() -> HTTPClient {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow, timeout: .init(connect: .seconds(5)))
        configuration.httpVersion = .automatic
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    public func send(_ batch: ClaimedWebhookBatch) async -> Outcome {
        guard let secret = batch.secret else {
            return .failed(status: nil, error: "the webhook's secret cannot be opened with the configured master keys", retryAfter: nil)
        }
        var request = HTTPClientRequest(url: batch.url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "NotifiableServer-Webhooks")
        request.headers.add(
            name: WebhookSignature.headerName,
            value: WebhookSignature.header(
                secret: secret, timestamp: Int64(now().timeIntervalSince1970), body: batch.body
            ))
        request.headers.add(name: "X-Notifiable-Webhook-Id", value: String(batch.webhookID))
        request.headers.add(name: "X-Notifiable-Batch-Id", value: String(batch.id))
        request.body = .bytes(ByteBuffer(bytes: batch.body))
        let client = client, now = now, prepared = request
        do {
            // One deadline for the whole exchange, the answer's body included: AsyncHTTPClient's
            // own timeout ends at the head, and a receiver trickling its body held an attempt for
            // ten minutes. At the deadline the exchange is cancelled, and its connection with it.
            return try await withDeadline(requestTimeout) { [targets] in
                // Inside the deadline: a resolver that hangs must not outlast the batch's lease.
                if let refusal = await targets.refusal(of: prepared.url) {
                    return .failed(status: nil, error: "not sent: \(refusal)", retryAfter: nil)
                }
                let response = try await client.execute(prepared, deadline: .distantFuture)
                let status = Int(response.status.code)
                let retryAfter = RetryAfter.duration(response.headers.first(name: "Retry-After"), now: now())
                let snippet = (try? await Self.snippet(of: response.body)) ?? ""
                if (200..<300).contains(status) { return .delivered(status: status) }
                return .failed(status: status, error: "HTTP \(status)" + (snippet.isEmpty ? "" : ": \(snippet)"), retryAfter: retryAfter)
            }
        } catch is DeadlineExceeded {
            return .failed(
                status: nil, error: "no complete answer within the \(requestTimeout.seconds) s deadline", retryAfter: nil
            )
        } catch {
            return .failed(status: nil, error: TransportFailure.reason(error, peer: "the receiver"), retryAfter: nil)
        }
    }

    /// The start of an answer's body, for operators reading why a batch failed: its first 200
    /// bytes, the rest not read at all.
    private static func snippet(of body: HTTPClientResponse.Body) async throws -> String {
        var bytes: [UInt8] = []
        for try await chunk in body {
            bytes += chunk.readableBytesView.prefix(200 - bytes.count)
            if bytes.count >= 200 { break }
        }
        return String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
