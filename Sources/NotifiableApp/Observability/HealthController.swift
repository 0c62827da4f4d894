import Hummingbird
import Logging
import NotifiableCore
import NotifiableStore
import PostgresNIO

/// `/health/live`: the process answers. `/health/ready`: it can reach its database, so a load
/// balancer may send it traffic.
struct HealthController {
    let postgres: Database

    struct Status: Encodable, Sendable {
        let status: String
    }

    func addRoutes(to router: Router<NotifiableRequestContext>) {
        router.get("health/live") { _, _ in JSONResponse(Status(status: "ok")) }
        router.get("health/ready") { _, context in
            do {
                try await withDeadline(.seconds(2)) {
                    for try await _ in try await postgres.query("SELECT 1", logger: context.logger) {}
                }
            } catch {
                context.logger.warning("readiness check failed", metadata: ["error": "\(String(reflecting: error))"])
                throw APIError(status: .serviceUnavailable, code: "database_unavailable", message: "The database does not answer.")
            }
            return JSONResponse(Status(status: "ok"))
        }
    }
}
