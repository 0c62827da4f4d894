import Hummingbird
import NotifiableCore

/// Puts the routes it is added to under `action`'s limits; runs after the caller (a credential,
/// or a user with a user token) is known.
struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = NotifiableRequestContext

    let action: RateLimitedAction
    let limiter: RateLimiter

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let caller = context.caller {
            try limiter.admit(action, by: caller)
        } else if let user = context.user {
            try limiter.admit(action, by: user)
        }
        return try await next(request, context)
    }
}

extension RouterGroup where Context == NotifiableRequestContext {
    /// A group of this one's routes that count against `action`'s limits.
    func limited(_ action: RateLimitedAction, by limiter: RateLimiter?) -> RouterGroup<Context> {
        let group = self.group()
        if let limiter { group.add(middleware: RateLimitMiddleware(action: action, limiter: limiter)) }
        return group
    }
}
