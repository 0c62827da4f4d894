import Synchronization

/// What the request log line needs to know that only inner layers learn: the app the caller
/// signed for (APIAuth) and the error code of a refused request (the error middleware). Shared
/// by reference, since each middleware gets its own copy of the request context.
public final class RequestLogFacts: Sendable {
    private let facts = Mutex<(appID: Int64?, errorCode: String?)>((nil, nil))

    public init() {}

    var appID: Int64? {
        get { facts.withLock { $0.appID } }
        set { facts.withLock { $0.appID = newValue } }
    }

    var errorCode: String? {
        get { facts.withLock { $0.errorCode } }
        set { facts.withLock { $0.errorCode = newValue } }
    }
}
