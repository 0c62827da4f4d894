import Foundation
import Hummingbird
import NotifiableCore
import NotifiableDelivery
import NotifiableStore

/// Operator endpoints: the queue's depth, dead deliveries and their re-queueing, and the apps'
/// APNs settings.
struct AdminController {
    let queue: DeliveryQueue
    let apnsSettings: APNsSettingsStore

    func addRoutes(to group: RouterGroup<NotifiableRequestContext>) {
        group.get("queue", use: queueStats)
        group.get("deliveries/dead", use: dead)
        group.post("deliveries/dead/requeue", use: requeue)
        group.put("apps/:id/apns", use: setAPNs)
        group.get("apps/:id/apns", use: showAPNs)
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
    }

    @Sendable func queueStats(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<QueueJSON> {
        let stats = try await queue.stats()
        var counts = stats.counts
        for state in ["available", "running", "retrying", "sent", "failed", "dead", "cancelled"] where counts[state] == nil {
            counts[state] = 0
        }
        return JSONResponse(QueueJSON(deliveries: counts, oldestReadyAgeSeconds: stats.oldestReadyAgeSeconds, notificationsFanningOut: stats.fanningOut))
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
                    throw APIError(status: .unprocessableContent, code: "invalid_type", message: "delivery_ids must hold numbers.", field: "delivery_ids.\(index)")
                }
                return value
            }
        default: throw APIError(status: .unprocessableContent, code: "invalid_type", message: "delivery_ids must be an array of numbers.", field: "delivery_ids")
        }
        return JSONResponse(RequeueJSON(requeued: try await queue.requeueDead(appID: appID, ids: ids)))
    }

    struct APNsJSON: Encodable, Sendable {
        let appID: Int64
        let keyID: String
        let teamID: String
        let bundleID: String
        let environment: String
        let endpoint: String
        let misconfiguration: String?
        enum CodingKeys: String, CodingKey {
            case appID = "app_id"
            case keyID = "key_id"
            case teamID = "team_id"
            case bundleID = "bundle_id"
            case environment, endpoint, misconfiguration
        }

        init(appID: Int64, _ settings: APNsSettings) {
            self.appID = appID
            keyID = settings.keyID
            teamID = settings.teamID
            bundleID = settings.bundleID
            environment = settings.environment.rawValue
            endpoint = settings.baseURL
            misconfiguration = settings.misconfigurationReason
        }
    }

    @Sendable func setAPNs(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<APNsJSON> {
        let appID = try context.pathID("id", what: "app")
        var request = request
        let settings = try APNsSettingsInput.parse(try await request.jsonBody(context: context))
        guard try await apnsSettings.save(settings, appID: appID) else { throw APIError.notFound("There is no app \(appID).") }
        return JSONResponse(APNsJSON(appID: appID, settings))
    }

    @Sendable func showAPNs(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<APNsJSON> {
        let appID = try context.pathID("id", what: "app")
        guard let settings = try await apnsSettings.settings(appID: appID) else {
            throw APIError.notFound("App \(appID) has no APNs settings.")
        }
        return JSONResponse(APNsJSON(appID: appID, settings))
    }

    private func appIDQuery(_ request: Request) throws -> Int64? {
        guard let text = request.uri.queryParameters["app_id"].map(String.init), !text.isEmpty else { return nil }
        guard let value = Int64(text) else {
            throw APIError(status: .unprocessableContent, code: "invalid_type", message: "app_id must be a number.", field: "app_id")
        }
        return value
    }
}
