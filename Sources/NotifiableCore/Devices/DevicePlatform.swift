/// The operating system of a device registered through FCM: Firebase also reaches iPhones
/// (Flutter, React Native and FirebaseMessaging apps), which need the message's `apns` block to
/// show anything. An FCM device that does not say is Android.
public enum DevicePlatform: String, Sendable, Codable, CaseIterable {
    case ios
    case android
}

/// Which APNs host a device's token belongs to: a debug build's token is the sandbox's, an App
/// Store or TestFlight build's the production host's. One token key serves both.
public enum APNsEnvironment: String, Sendable, Codable, CaseIterable {
    case sandbox
    case production

    public var other: APNsEnvironment { self == .sandbox ? .production : .sandbox }
}
