import Foundation
import Hummingbird
import NotifiableCore
import NotifiableDelivery
import NotifiableStore

/// `POST /api/v1/notifications/batch` `{"notifications": [ … up to 500 … ]}`: many different
/// notifications (personalised pushes from a backend job) in one signed request and one
/// transaction. Each item is a notification request as `POST /api/v1/notifications` takes it,
/// with its own `idempotency_key`; an invalid item refuses only itself and stores nothing.
///
/// The answer lists each item's result in request order: `{"status": 202, "id": …}` (created),
/// `{"status": 200, "id": …}` (its key made it before, from the same body), or `{"status": 422,
/// "error": {…}}`. The request answers 202 when any item was created, 200 when all that were
/// accepted were made before, and 422 when every item was refused.
enum NotificationBatch {
    static let maxItems = 500

    struct Result: Encodable, Sendable {
        let status: Int
        let id: Int64?
        let error: ErrorBody?

        struct ErrorBody: Encodable, Sendable {
            let code: String
            let message: String
            let field: String?
        }

        static func refused(_ error: ValidationError) -> Result {
            Result(status: 422, id: nil, error: ErrorBody(code: error.code, message: error.message, field: error.field))
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(status, forKey: .status)
            try container.encodeIfPresent(id, forKey: .id)
            try container.encodeIfPresent(error, forKey: .error)
        }

        enum CodingKeys: String, CodingKey { case status, id, error }
    }

    struct Answer: Encodable, Sendable {
        let results: [Result]
        let created: Int
        let refused: Int
        let error: Result.ErrorBody?

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(results, forKey: .results)
            try container.encode(created, forKey: .created)
            try container.encode(refused, forKey: .refused)
            try container.encodeIfPresent(error, forKey: .error)
        }

        enum CodingKeys: String, CodingKey { case results, created, refused, error }
    }

    /// The batch's items: each parsed on its own, so one item's error leaves the others.
    static func items(of body: JSONValue, now: Date) throws -> [Swift.Result<(NotificationRequest, JSONValue), ValidationError>] {
        guard let object = body.objectValue else {
            throw APIError(status: .unprocessableContent, code: "invalid_body", message: "The body must be a JSON object: {\"notifications\": [ … ]}.")
        }
        if let unknown = object.keys.sorted().first(where: { $0 != "notifications" }) {
            throw APIError(
                status: .unprocessableContent, code: "unknown_field",
                message: "\(unknown) is not a field of a batch; send {\"notifications\": [ … ]}, each item with its own fields.", field: unknown)
        }
        guard case .array(let list)? = object["notifications"], !list.isEmpty else {
            throw APIError(
                status: .unprocessableContent, code: "missing_field",
                message: "notifications must be an array of 1 to \(maxItems) notification requests.", field: "notifications")
        }
        guard list.count <= maxItems else {
            throw APIError(
                status: .unprocessableContent, code: "too_many",
                message: "notifications has \(list.count) items; at most \(maxItems) go in one batch.", field: "notifications")
        }
        return list.map { item in
            do {
                let request = try NotificationRequest.accepted(item, now: now)
                return .success((request, item))
            } catch let error as ValidationError {
                return .failure(error)
            } catch {
                return .failure(ValidationError(code: "invalid", message: "\(error)"))
            }
        }
    }
}

extension NotificationsController {
    func createBatch(_ request: Request, context: NotifiableRequestContext, limiter: RateLimiter?) async throws -> Response {
        let caller = try context.requireServerCaller()
        if request.headers[.idempotencyKey] != nil {
            throw APIError(
                status: .unprocessableContent, code: "idempotency_key_per_item",
                message: "A batch has no Idempotency-Key of its own: give each item its idempotency_key.", field: "Idempotency-Key")
        }
        var request = request
        let body = try await request.jsonBody(context: context, limit: NotifiableRequestContext.maxBatchBodyBytes)
        let items = try NotificationBatch.items(of: body, now: Date())
        try limiter?.admit(.sends, by: caller, count: items.count)
        let valid = items.compactMap { try? $0.get() }
        let outcomes = try await notifications.createBatch(
            appID: caller.appID,
            valid.map { request, item in (request, request.idempotencyKey == nil ? nil : NotificationRequest.digest(of: item)) }
        )
        var stored = outcomes.makeIterator()
        let results = items.map { item -> NotificationBatch.Result in
            switch item {
            case .failure(let error):
                return .refused(error)
            case .success:
                switch stored.next() {
                case .created(let notification)?: return NotificationBatch.Result(status: 202, id: notification.id, error: nil)
                case .replayed(let notification)?: return NotificationBatch.Result(status: 200, id: notification.id, error: nil)
                case .keyReused(let earlier)?:
                    return .refused(
                        ValidationError(
                            code: "idempotency_key_reused", message: NotificationStore.IdempotencyKeyReused(notificationID: earlier).description,
                            field: "idempotency_key"))
                case nil:
                    return .refused(ValidationError(code: "not_stored", message: "This item was not stored."))
                }
            }
        }
        let created = results.filter { $0.status == 202 }.count
        let refused = results.filter { $0.status == 422 }.count
        let status: HTTPResponse.Status = created > 0 ? .accepted : refused < results.count ? .ok : .unprocessableContent
        let error =
            status == .unprocessableContent
            ? NotificationBatch.Result.ErrorBody(code: "batch_refused", message: "Every item was refused; see results.", field: "notifications") : nil
        let answer = NotificationBatch.Answer(results: results, created: created, refused: refused, error: error)
        return try JSONResponse(answer, status: status).response(from: request, context: context)
    }
}
