import Foundation

/// A tenant: one mobile app (across its platforms) with its own devices and credentials.
public struct App: Sendable, Equatable {
    public var id: Int64
    public var name: String
    public var deliveryMode: DeliveryMode
    /// What its notifications get when they leave it unsaid.
    public var pushDefaults: PushDefaults
    /// How many days its data is kept when fewer than the service's retention period; nil keeps
    /// the service's.
    public var retentionDays: Int?
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: Int64, name: String, deliveryMode: DeliveryMode = .live, pushDefaults: PushDefaults = PushDefaults(), retentionDays: Int? = nil,
        createdAt: Date, updatedAt: Date? = nil
    ) {
        self.id = id
        self.name = name
        self.deliveryMode = deliveryMode
        self.pushDefaults = pushDefaults
        self.retentionDays = retentionDays
        self.createdAt = createdAt
        self.updatedAt = updatedAt ?? createdAt
    }

    public static let maxNameLength = 255

    /// The name as stored: trimmed; nil when that leaves nothing or too much.
    public static func normalizedName(_ name: String) -> String? {
        let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
        // Counted in code points, as PostgreSQL's length() counts them.
        guard !trimmed.isEmpty, trimmed.unicodeScalars.count <= maxNameLength, !trimmed.unicodeScalars.contains("\0") else { return nil }
        return trimmed
    }
}

/// Where an app's pushes go.
public enum DeliveryMode: String, Sendable, Codable, CaseIterable {
    /// To Apple and Google (or the endpoints its settings name).
    case live
    /// To fake gateways built into the worker; every push is recorded for the operator to read.
    case sandbox
}
