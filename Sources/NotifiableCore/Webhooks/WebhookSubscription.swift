import Foundation

/// An operator's request for a webhook, validated: where to POST and which events to send.
public struct WebhookSubscription: Sendable, Equatable {
    public let url: String
    public let events: [WebhookEventType]

    public static let maxURLLength = 2048

    /// Validates a URL and the names of event types (all types when `eventNames` is nil).
    ///
    /// Only absolute http(s) URLs with a host, without credentials (they would be stored and
    /// shown in the clear; the signature is how a receiver knows the sender) or a fragment.
    public init(url: String, eventNames: [String]?) throws(ValidationError) {
        guard url.utf8.count <= Self.maxURLLength, let components = URLComponents(string: url),
            let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = components.host, !host.isEmpty
        else {
            throw ValidationError(
                code: "invalid_url", message: "url must be an absolute http:// or https:// URL of at most \(Self.maxURLLength) characters.", field: "url"
            )
        }
        if let port = components.port, !(1...65535).contains(port) {
            throw ValidationError(code: "invalid_url", message: "url's port \(port) is not a port; use 1 to 65535, or none.", field: "url")
        }
        guard components.user == nil, components.password == nil else {
            throw ValidationError(code: "invalid_url", message: "url must not carry a user name or password.", field: "url")
        }
        guard components.fragment == nil else {
            throw ValidationError(code: "invalid_url", message: "url must not have a #fragment.", field: "url")
        }
        var events: [WebhookEventType] = []
        for (index, name) in (eventNames ?? WebhookEventType.allCases.map(\.rawValue)).enumerated() {
            guard let type = WebhookEventType(rawValue: name) else {
                let known = WebhookEventType.allCases.map(\.rawValue).joined(separator: ", ")
                throw ValidationError(code: "invalid_event", message: "\"\(name)\" is not an event type; expected one of \(known).", field: "events[\(index)]")
            }
            if !events.contains(type) { events.append(type) }
        }
        guard !events.isEmpty else {
            throw ValidationError(code: "invalid_events", message: "events must name at least one event type.", field: "events")
        }
        self.url = url
        self.events = events
    }
}
