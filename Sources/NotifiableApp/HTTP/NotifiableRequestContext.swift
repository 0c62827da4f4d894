import Hummingbird
import NotifiableCore
import NotifiableStore

/// Who signed the request: set by the APIAuth middleware for every `/api/v1` route.
public struct Caller: Sendable, Equatable {
    public let appID: Int64
    public let role: CredentialRole
    public let accessID: String
    /// Whether the app requires a user's token for a device to act for that user.
    public let requiresVerifiedAlias: Bool
}

/// The user a request acts for: set from a verified user token on `/api/v1/me` routes.
public struct VerifiedUser: Sendable, Equatable {
    public let appID: Int64
    public let alias: String
}

public struct NotifiableRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public var caller: Caller?
    public var user: VerifiedUser?
    /// Who is signed in to the console: set by the dashboard's session middleware.
    public var consoleOperator: ConsoleOperator?
    /// The admin API key the request came with (its operator is `consoleOperator`).
    public var apiKeyID: Int64?
    /// The peer's IP address, when the request came over a socket.
    public let remoteAddress: String?
    /// What the request's log line says beside its method, path and status.
    public let logFacts = RequestLogFacts()

    /// The largest request body accepted, on every route.
    public static let maxBodyBytes = 64 * 1024
    /// The largest rich content, uploaded on its own route.
    public static let maxRichContentBytes = NotificationContentStore.maximumSize

    /// The largest batch of notifications: 500 of up to 8 KiB each.
    public static let maxBatchBodyBytes = 4 * 1024 * 1024

    /// The largest body `request` may carry: rich content uploads and batches of notifications take
    /// more than the rest.
    static func bodyLimit(for request: Request) -> Int {
        let parts = request.uri.path.split(separator: "/")
        if request.method == .post, parts == ["api", "v1", "notifications", "batch"] { return maxBatchBodyBytes }
        guard request.method == .put else { return maxBodyBytes }
        let isContentUpload =
            parts.count == 5 && parts[0] == "api" && parts[1] == "v1" && parts[2] == "notifications"
            && parts[4] == "content"
        return isContentUpload ? maxRichContentBytes : maxBodyBytes
    }
    public var maxUploadSize: Int { Self.maxBodyBytes }

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress?.ipAddress
    }

    /// The authenticated caller; only routes behind the APIAuth middleware may ask.
    func requireCaller() throws -> Caller {
        guard let caller else { throw APIError.unauthorized("missing_authorization", "This endpoint needs an APIAuth signature.") }
        return caller
    }

    /// The verified user; only routes behind the user-token middleware may ask.
    func requireUser() throws -> VerifiedUser {
        guard let user else { throw APIError.unauthorized("missing_authorization", "This endpoint needs a user token (Authorization: Bearer …).") }
        return user
    }
}
