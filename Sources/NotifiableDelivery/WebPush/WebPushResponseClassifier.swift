import Foundation
import NotifiableCore

/// What a push service's answer means for the delivery (RFC 8030 §5, §7–8; RFC 8292 §4.2; the
/// push services' own pages, docs/compatibility.md §13).
enum WebPushResponseClassifier {
    /// `location`: the 201's `Location`, the message's address at the push service (RFC 8030 §5).
    static func classify(status: Int, body: String, location: String? = nil, retryAfter: Duration?, now: Date = Date()) -> DeliveryOutcome {
        let detail = body.isEmpty ? "" : ": " + String(body.prefix(200))
        switch status {
        case 200..<300:
            return .sent(gatewayID: location)
        case 404, 410:
            // RFC 8030 §7.3 says 404; Mozilla's and Apple's services answer 410 for the same.
            return .tokenDead(reason: "subscription_gone: the push service answered \(status)\(detail)", at: now)
        case 413:
            return .failed(reason: "payload_too_large: the push service refused the message's size\(detail)")
        case 401, 403:
            // Whether the key or only this subscription is refused is the sender's to tell
            // (`WebPushOrigins`): this says only that the VAPID token was refused.
            return .misconfigured(
                reason: "vapid_refused: the push service answered \(status) to the VAPID signature\(detail); check the app's "
                    + "Web Push key, and that browsers subscribed with its public key")
        case 429, 500..<600:
            return .retry(reason: "push_service_\(status)\(detail)", retryAfter: retryAfter)
        default:
            return .failed(reason: "push_service_\(status)\(detail)")
        }
    }
}
