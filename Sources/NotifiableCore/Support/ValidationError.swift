/// A request that is well-formed JSON but says something the service cannot accept.
/// `field` is the path of the offending value as the client sent it (e.g. `device_token.token`).
public struct ValidationError: Error, Sendable, Equatable {
    public let code: String
    public let message: String
    public let field: String?

    public init(code: String, message: String, field: String? = nil) {
        self.code = code
        self.message = message
        self.field = field
    }
}
