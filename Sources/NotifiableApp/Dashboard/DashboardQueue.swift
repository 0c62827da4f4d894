import Foundation
import Hummingbird
import NotifiableCore
import NotifiableStore

/// Every app's queue: what waits, what died, and re-queueing the dead.
struct ConsoleQueuePages: ConsolePages {
    let console: ConsoleRequests
    /// Re-queues dead deliveries (a write: the primary).
    let queue: QueueAdminStore
    let queueReads: QueueAdminStore
    let trends: TrendStore

    func addRoutes(to pages: RouterGroup<NotifiableRequestContext>) {
        pages.get("queue", use: queuePage)
        pages.post("queue/requeue", use: requeue)
    }
}

extension ConsoleQueuePages {
    @Sendable func queuePage(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        try require(.viewService, context, "see every app's queue")
        let dead = try await queueReads.dead(appID: nil, afterID: try request.cursor(), limit: Self.pageSize)
        // The waiting states through their partial indexes, and the last day's outcomes from the
        // trends' roll-up: never a count of the sent and failed rows that make up most of the table.
        let lastDay = try await trends.hourly(appID: nil, since: Date().addingTimeInterval(-24 * 3600))
        return DashboardPages.queue(
            try await queueReads.depth(), lastDay: lastDay, dead: dead, nextCursor: dead.count == Self.pageSize ? dead.last?.id : nil, csrf: csrf(request),
            requeued: request.uri.queryParameters["requeued"].flatMap { Int(String($0)) },
            mayRequeue: try context.requireOperator().may(.administer)
        )
    }

    /// Re-queues every app's dead deliveries (owners), or one app's (`app` in the form; its admins).
    @Sendable func requeue(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let form = try await form(of: request, "nothing was re-queued")
        if let named = form["app"] {
            let app = try await app(id: Int64(named), context, ConsoleAction.manage, "re-queue this app's dead deliveries")
            let count = try await queue.requeueDead(appID: app.id, ids: nil)
            return Response(status: .seeOther, headers: [.location: "/dashboard/apps/\(app.id)/settings?requeued=\(count)"])
        }
        try require(.administer, context, "re-queue every app's dead deliveries")
        let count = try await queue.requeueDead(appID: nil, ids: nil)
        return Response(status: .seeOther, headers: [.location: "/dashboard/queue?requeued=\(count)"])
    }
}
