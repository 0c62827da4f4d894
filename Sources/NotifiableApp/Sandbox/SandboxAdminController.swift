import Foundation
import Hummingbird
import NotifiableCore
import NotifiableStore

/// What the built-in fake gateways received for apps in sandbox mode, push by push.
struct SandboxAdminController {
    let apps: AppStore
    let pushes: SandboxPushStore

    func addRoutes(to group: RouterGroup<NotifiableRequestContext>) {
        group.get("apps/:id/sandbox/pushes", use: list)
    }

    struct PushJSON: Encodable, Sendable {
        let id: Int64
        let deliveryID: Int64
        let notificationID: Int64
        let deviceID: Int64
        let provider: String
        let token: String
        let headers: [String: String]
        /// The body parsed, for reading; `raw_payload` is the exact bytes sent.
        let payload: JSONValue
        let rawPayload: String
        let createdAt: String

        enum CodingKeys: String, CodingKey {
            case id, provider, token, headers, payload
            case deliveryID = "delivery_id"
            case notificationID = "notification_id"
            case deviceID = "device_id"
            case rawPayload = "raw_payload"
            case createdAt = "created_at"
        }

        init(_ record: SandboxPushRecord) {
            id = record.id
            deliveryID = record.deliveryID
            notificationID = record.notificationID
            deviceID = record.deviceID
            provider = record.push.provider.rawValue
            token = record.push.token
            headers = record.push.headers
            payload = (try? JSONValue.decode(Array(record.push.payload.utf8))) ?? .string(record.push.payload)
            rawPayload = record.push.payload
            createdAt = Timestamp.iso8601(record.createdAt)
        }
    }

    /// `?notification_id=…&cursor=…&limit=…`, newest first.
    @Sendable func list(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<Page<PushJSON>> {
        let appID = try context.pathID("id", what: "app")
        guard try await apps.app(id: appID) != nil else { throw APIError.notFound("There is no app \(appID).") }
        var notificationID: Int64?
        if let text = request.uri.queryParameters["notification_id"].map(String.init), !text.isEmpty {
            guard let id = Int64(text), id > 0 else {
                throw APIError(
                    status: .unprocessableContent, code: "invalid_type", message: "notification_id must be a notification's id.", field: "notification_id")
            }
            notificationID = id
        }
        let limit = try request.limit()
        let records = try await pushes.list(appID: appID, notificationID: notificationID, beforeID: try request.cursor(), limit: limit)
        return JSONResponse(Page(data: records.map(PushJSON.init), nextCursor: records.count == limit ? records.last.map { String($0.id) } : nil))
    }
}
