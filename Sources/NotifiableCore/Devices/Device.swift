import Foundation

/// A registered device of one app.
public struct Device: Sendable, Equatable {
    public var id: Int64
    public var appID: Int64
    public var provider: Provider
    public var token: String
    public var name: String?
    public var userAlias: String?
    public var language: String?
    public var country: String?
    public var customProperties: [String: JSONValue]
    public var platformProperties: [String: JSONValue]
    /// Sorted, without duplicates.
    public var tags: [String]
    public var createdAt: Date
    public var updatedAt: Date
    /// When the token was last registered; a gateway's "token dead" answer older than this is stale.
    public var registeredAt: Date
    public var invalidatedAt: Date?
    public var unregisteredAt: Date?
    /// An FCM device's operating system, when it said (nil: Android).
    public var platform: DevicePlatform?
    /// The APNs host of an iPhone's token, when it said (nil: the app's).
    public var apnsEnvironment: APNsEnvironment?
    /// The badge the service last sent the device, counted up by `"badge": "+1"`.
    public var badge: Int = 0

    public init(
        id: Int64, appID: Int64, provider: Provider, token: String, name: String?, userAlias: String?,
        language: String?, country: String?, customProperties: [String: JSONValue],
        platformProperties: [String: JSONValue], createdAt: Date, updatedAt: Date, registeredAt: Date,
        invalidatedAt: Date?, unregisteredAt: Date?, tags: [String] = [], platform: DevicePlatform? = nil,
        apnsEnvironment: APNsEnvironment? = nil, badge: Int = 0
    ) {
        self.badge = badge
        self.platform = platform
        self.apnsEnvironment = apnsEnvironment
        self.id = id
        self.appID = appID
        self.provider = provider
        self.token = token
        self.name = name
        self.userAlias = userAlias
        self.language = language
        self.country = country
        self.customProperties = customProperties
        self.platformProperties = platformProperties
        self.tags = tags
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.registeredAt = registeredAt
        self.invalidatedAt = invalidatedAt
        self.unregisteredAt = unregisteredAt
    }
}
