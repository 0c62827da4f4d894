import Foundation
import Hummingbird
import NotifiableCore
import NotifiableDelivery
import NotifiableStore

/// Operator endpoints for the queue: its depth, dead deliveries and their re-queueing.
struct QueueAdminController {
    let queue: QueueAdminStore

    func addRoutes(to group: RouterGroup<NotifiableRequestContext>) {
        group.get("queue", use: queueStats)
        group.get("deliveries/dead", use: dead)
        group.post("deliveries/dead/requeue", use: requeue)
    }

    struct QueueJSON: Encodable, Sendable {
        let deliveries: [String: Int64]
        let oldestReadyAgeSeconds: Double
        let notificationsFanningOut: Int64
        enum CodingKeys: String, CodingKey {
            case deliveries
            case oldestReadyAgeSeconds = "oldest_ready_age_seconds"
            case notificationsFanningOut = "notifications_fanning_out"
        }

        /// Every state is listed, with 0 where no delivery is in it.
        init(_ stats: QueueStats) {
            var counts = stats.counts
            for state in DeliveryState.names where counts[state] == nil {
                counts[state] = 0
            }
            deliveries = counts
            oldestReadyAgeSeconds = stats.oldestReadyAgeSeconds
            notificationsFanningOut = stats.fanningOut
        }
    }

    @Sendable func queueStats(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<QueueJSON> {
        JSONResponse(QueueJSON(try await queue.stats()))
    }

    @Sendable func dead(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<Page<DeliveryJSON>> {
        let limit = try request.limit()
        let records = try await queue.dead(appID: try appIDQuery(request), afterID: try request.cursor(), limit: limit)
        return JSONResponse(Page(data: records.map(DeliveryJSON.init), nextCursor: records.count == limit ? records.last.map { String($0.id) } : nil))
    }

    struct RequeueJSON: Encodable, Sendable {
        let requeued: Int
    }

    /// `{"app_id": 3}` or `{"delivery_ids": [1, 2]}` or `{}` for every dead delivery.
    @Sendable func requeue(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<RequeueJSON> {
        var request = request
        let body = try await request.jsonBody(context: context)
        guard let object = body.objectValue else {
            throw APIError(status: .unprocessableContent, code: "invalid_body", message: "The body must be a JSON object (it may be empty).")
        }
        var appID: Int64?
        switch object["app_id"] {
        case nil, .null?: break
        case .integer(let value)?: appID = value
        default: throw APIError(status: .unprocessableContent, code: "invalid_type", message: "app_id must be a number.", field: "app_id")
        }
        var ids: [Int64]?
        switch object["delivery_ids"] {
        case nil, .null?: break
        case .array(let items)?:
            ids = try items.enumerated().map { index, item in
                guard case .integer(let value) = item else {
                    throw APIError(
                        status: .unprocessableContent, code: "invalid_type", message: "delivery_ids must hold numbers.", field: "delivery_ids.\(index)")
                }
                return value
            }
        default:
            throw APIError(status: .unprocessableContent, code: "invalid_type", message: "delivery_ids must be an array of numbers.", field: "delivery_ids")
        }
        // One app's dead are its admins'; every app's, or deliveries named by id, an owner's.
        try context.requireAdmin(appID.map { .manage(appID: $0) } ?? .administer)
        return JSONResponse(RequeueJSON(requeued: try await queue.requeueDead(appID: appID, ids: ids)))
    }

    private func appIDQuery(_ request: Request) throws -> Int64? {
        guard let text = request.uri.queryParameters["app_id"].map(String.init), !text.isEmpty else { return nil }
        guard let value = Int64(text) else {
            throw APIError(status: .unprocessableContent, code: "invalid_type", message: "app_id must be a number.", field: "app_id")
        }
        return value
    }
}
