import Foundation
import NotifiableCore

/// A send the fake FCM gateway answered 200 to.
public struct AcceptedFCMMessage: Sendable, Hashable {
    /// The project of the request path.
    public var projectID: String
    /// `projects/{project}/messages/{id}`, as answered.
    public var name: String
    /// `message.token`.
    public var token: String
    /// The raw request body.
    public var body: [UInt8]
    /// Request headers without pseudo-headers, names lower-case (the last value wins for repeated names).
    public var headers: [String: String]
    public var receivedAt: Date

    public init(
        projectID: String, name: String, token: String, body: [UInt8], headers: [String: String], receivedAt: Date
    ) {
        self.projectID = projectID
        self.name = name
        self.token = token
        self.body = body
        self.headers = headers
        self.receivedAt = receivedAt
    }

    /// The body as text.
    public var bodyString: String { String(decoding: body, as: UTF8.self) }

    /// The `message` object of the body (the gateway accepted it, so it is there).
    public var message: [String: JSONValue] {
        (try? JSONValue.decode(body))?.objectValue?["message"]?.objectValue ?? [:]
    }

    /// `message.data` (empty when absent).
    public var data: [String: String] {
        guard let data = message["data"]?.objectValue else { return [:] }
        return data.compactMapValues { value in
            if case .string(let text) = value { return text }
            return nil
        }
    }

    /// `message.notification.title`.
    public var notificationTitle: String? { notificationField("title") }
    /// `message.notification.body`.
    public var notificationBody: String? { notificationField("body") }
    /// `message.notification.image`.
    public var notificationImage: String? { notificationField("image") }

    /// `message.android`, as sent.
    public var android: [String: JSONValue]? { message["android"]?.objectValue }

    /// `message.android.priority`, as sent (FCM takes `HIGH` / `NORMAL` in either case).
    public var androidPriority: String? { Self.string(android?["priority"]) }
    /// `message.android.ttl`, as sent (`"3600s"`).
    public var androidTTL: String? { Self.string(android?["ttl"]) }
    /// `message.android.collapse_key` (or its camel-case spelling `collapseKey`).
    public var androidCollapseKey: String? { Self.string(android?["collapse_key"] ?? android?["collapseKey"]) }

    /// `message.apns`, as sent.
    public var apns: [String: JSONValue]? { message["apns"]?.objectValue }

    private func notificationField(_ name: String) -> String? {
        Self.string(message["notification"]?.objectValue?[name])
    }

    private static func string(_ value: JSONValue?) -> String? {
        if case .string(let text) = value { return text }
        return nil
    }
}
