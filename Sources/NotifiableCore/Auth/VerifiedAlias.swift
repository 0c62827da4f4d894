/// What a device request must prove when its app requires verified user aliases.
///
/// Device credentials ship in every install of an app, so without proof any install could
/// take any user's alias and receive that user's notifications. The proof is the user's token
/// (`UserToken`), which only the app's backend can mint.
extension DeviceFields {
    /// The body key under which a client may send the user's token (the header is
    /// `X-Notifiable-User-Token`). Never kept as a platform property.
    public static let userTokenKey = "user_token"

    /// The user token in the body: under `device_token` or at the top level; nil when absent.
    public static func presentedUserToken(in body: JSONValue) throws(ValidationError) -> String? {
        guard let object = body.objectValue else { return nil }
        let envelope = object["device_token"]?.objectValue
        for (fields, prefix) in [(envelope, "device_token."), (object, "")] {
            switch fields?[userTokenKey] {
            case nil, .null?: continue
            case .string(let token)? where !token.isEmpty: return token
            case .string?: continue
            case let other?:
                throw ValidationError(
                    code: "invalid_type", message: "\(prefix)\(userTokenKey) must be a string (the user's token), not \(other.typeName).",
                    field: prefix + userTokenKey
                )
            }
        }
        return nil
    }

    /// The user this change hands the device to, who must be proven; nil when it hands the
    /// device to nobody new: no alias, anonymising, or a change that keeps owner and push token.
    ///
    /// A registration (`current` nil) always says its alias. An update hands the device over
    /// when it names another alias, and also when it swaps the push token of a device that
    /// keeps its user: that would send the user's notifications to whoever holds the new token.
    public func userAliasToProve(current: Device?) -> String? {
        guard let current else {
            if case .set(let alias?) = userAlias, !alias.isEmpty { return alias }
            return nil
        }
        guard let owner = userAlias.applied(to: current.userAlias), !owner.isEmpty else { return nil }
        let swapsToken = token.map { $0.lowercased() != current.token.lowercased() } ?? false
        return owner != current.userAlias || swapsToken ? owner : nil
    }
}
