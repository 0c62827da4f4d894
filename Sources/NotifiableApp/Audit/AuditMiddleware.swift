import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NotifiableCore
import NotifiableStore
import Synchronization

/// Writes every state-changing request of a route group to the audit log once it is answered,
/// refused ones included: one place, so a route added to the group is audited without asking.
struct AuditMiddleware: RouterMiddleware {
    typealias Context = NotifiableRequestContext
    let log: AuditLogStore
    let channel: AuditChannel
    let trustedProxies: Set<String>

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.method != .get, request.method != .head else { return try await next(request, context) }
        let notes = AuditNotes()
        do {
            let response = try await Self.$notes.withValue(notes) { try await next(request, context) }
            // Where the answer points names what was made (a new app, a notification).
            await record(
                request, context, status: response.status, location: response.headers[.location] ?? response.headers[.contentLocation], notes: notes)
            return response
        } catch {
            await record(request, context, status: ErrorMiddleware.status(of: error), location: nil, notes: notes)
            throw error
        }
    }

    private func record(_ request: Request, _ context: Context, status: HTTPResponse.Status, location: String?, notes: AuditNotes) async {
        let path = request.uri.path
        var detail = notes.facts
        detail["location"] = location
        detail["api_key"] = context.apiKeyID.map(String.init)
        let entry = AuditEntry(
            actor: context.consoleOperator?.auditName ?? ConsoleOperator.adminToken.auditName, channel: channel,
            action: "\(request.method.rawValue) \(path)", appID: Self.appID(in: path) ?? location.flatMap(Self.appID(in:)),
            origin: ClientOrigin.of(request, context: context, trustedProxies: trustedProxies).address, status: Int(status.code),
            detail: detail.isEmpty ? nil : detail)
        await Self.write(entry, to: log, logger: context.logger)
    }

    /// The notes of the request being answered, for its handler to add to.
    @TaskLocal static var notes: AuditNotes?

    /// Adds facts the path does not say to this request's audit entry: the role an operator was
    /// given, the credential revoked. Outside an audited request it does nothing.
    static func note(_ facts: [String: String]) {
        notes?.add(facts)
    }

    /// Writes `entry`; a failure is logged, not answered: the action it records has happened.
    static func write(_ entry: AuditEntry, to log: AuditLogStore, logger: Logger) async {
        do {
            try await log.record(entry)
        } catch {
            logger.error("The audit log could not be written", metadata: ["action": "\(entry.action)", "error": "\(String(reflecting: error))"])
        }
    }

    /// The app a path names (`…/apps/3/…`), if any.
    static func appID(in path: String) -> Int64? {
        let parts = path.split(separator: "?", maxSplits: 1).first?.split(separator: "/") ?? []
        guard let index = parts.firstIndex(of: "apps"), index + 1 < parts.count else { return nil }
        return Int64(parts[index + 1])
    }
}

/// What a handler noted for its request's audit entry.
final class AuditNotes: Sendable {
    private let stored = Mutex<[String: String]>([:])

    var facts: [String: String] { stored.withLock { $0 } }

    func add(_ facts: [String: String]) {
        stored.withLock { $0.merge(facts) { _, new in new } }
    }
}
