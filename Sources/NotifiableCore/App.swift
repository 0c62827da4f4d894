import Foundation

/// A tenant: one mobile app (across its platforms) with its own devices and credentials.
public struct App: Sendable, Equatable {
    public var id: Int64
    public var name: String
    public var createdAt: Date

    public init(id: Int64, name: String, createdAt: Date) {
        self.id = id
        self.name = name
        self.createdAt = createdAt
    }

    public static let maxNameLength = 255
}
