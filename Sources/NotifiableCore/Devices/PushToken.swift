/// Validation and normal form of push tokens.
public enum PushToken {
    public static let apnsLengths = 64...200
    public static let fcmMaxLength = 4096

    /// Returns the token as stored, or a validation error naming `field`.
    /// APNs tokens are hex and stored lower-case; FCM tokens are opaque and stored as sent; a Web
    /// Push token is its subscription's endpoint, on one of `webPushHosts`.
    public static func normalized(
        _ token: String, provider: Provider, field: String, webPushHosts: WebPushHosts = .browsers
    ) throws(ValidationError) -> String {
        switch provider {
        case .webpush:
            return try WebPushEndpoint.normalized(token, hosts: webPushHosts, field: field)
        case .apns:
            let isHex = token.utf8.allSatisfy { byte in
                (48...57).contains(byte) || (65...70).contains(byte) || (97...102).contains(byte)
            }
            guard isHex, apnsLengths.contains(token.utf8.count) else {
                throw ValidationError(
                    code: "invalid_token",
                    message:
                        "An APNs token must be \(apnsLengths.lowerBound) to \(apnsLengths.upperBound) hexadecimal characters (the device token's bytes as hex).",
                    field: field
                )
            }
            return token.lowercased()
        case .fcm:
            let isPrintable = token.utf8.allSatisfy { (0x21...0x7E).contains($0) }
            guard !token.isEmpty, isPrintable, token.utf8.count <= fcmMaxLength else {
                throw ValidationError(
                    code: "invalid_token",
                    message: "An FCM token must be 1 to \(fcmMaxLength) printable ASCII characters without spaces.",
                    field: field
                )
            }
            return token
        }
    }

    /// What a log line may show of a token: its first 8 characters and an ellipsis. Enough to
    /// tell devices apart when reading logs; never enough to push to one.
    public static func logPrefix(_ token: String) -> String {
        token.count <= 8 ? String(repeating: "*", count: token.count) : "\(token.prefix(8))…"
    }
}
