import Foundation

/// The classified result of one attempt to hand a notification to a gateway (APNs, FCM, …).
/// Gateway-neutral: each sender maps its gateway's answer (or transport failure) onto this, and
/// the worker decides what to do with the delivery row from it alone.
public enum DeliveryOutcome: Sendable, Equatable {
    /// The gateway accepted the notification. `gatewayID` is its id for it, when it gives one
    /// (APNs `apns-id`, FCM message name).
    case sent(gatewayID: String?)
    /// A transient failure (429, 5xx, gateway shutting down, timeout, connection loss): try
    /// again later, no sooner than `retryAfter` when the gateway asked for a delay.
    case retry(reason: String, retryAfter: Duration?)
    /// No answer came after the request may have reached the gateway (the deadline passed while
    /// it was on the wire, the connection was lost under it): the gateway may have taken it. Try
    /// again later, as for `retry`; the attempt is recorded as one of unknown outcome, the only
    /// kind that may show a push twice.
    case outcomeUnknown(reason: String)
    /// A permanent failure of this notification for this device (bad payload, too large, …):
    /// retrying would give the same answer.
    case failed(reason: String)
    /// The device token is invalid or no longer registered: fail the delivery and invalidate
    /// the device. `at` is when the gateway last knew the token to be invalid (APNs 410
    /// `timestamp`); a device that re-registered after `at` must not be invalidated.
    case tokenDead(reason: String, at: Date?)
    /// The gateway rejected the provider credentials as expired (APNs `ExpiredProviderToken`):
    /// refresh them and retry; not counted against the app's configuration.
    case refreshCredentialsAndRetry(reason: String)
    /// The app's gateway settings are wrong (bad key, certificate, topic, environment): stop
    /// sending for this app and tell operators. `settingsVersion` is the `updated_at` of the
    /// settings the gateway refused, so that only they are marked (settings saved since are not);
    /// nil when there is nothing new to mark (already marked, or no usable settings).
    case misconfigured(reason: String, settingsVersion: Date? = nil)

    /// Whether the gateway may have taken the push although no answer said so.
    public var isUnknown: Bool {
        if case .outcomeUnknown = self { true } else { false }
    }

    /// The reason text of any outcome but `.sent`.
    public var reason: String? {
        switch self {
        case .sent: nil
        case .retry(let reason, _), .outcomeUnknown(let reason), .failed(let reason), .tokenDead(let reason, _),
            .refreshCredentialsAndRetry(let reason), .misconfigured(let reason, _):
            reason
        }
    }
}
