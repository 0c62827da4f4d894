import Hummingbird

/// Answers 503 with Retry-After, before any work, while `DatabaseAvailability` cannot reach the
/// database: clients learn at once to come back, and nothing piles up waiting for it.
struct DatabaseAvailabilityMiddleware<Context: RequestContext>: RouterMiddleware {
    let availability: DatabaseAvailability

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard availability.isAvailable else { throw APIError.databaseUnavailable }
        return try await next(request, context)
    }
}
