import Foundation
import HTTPTypes
import Hummingbird
import NotifiableCore
import NotifiableDelivery
import NotifiableStore

/// Sending notifications and reading what happened to them (server credentials), and the
/// delivered/opened reports of the SDKs (device or server credentials).
struct NotificationsController {
    let notifications: NotificationStore
    /// The listings (of an app's notifications, of a notification's deliveries), read from the read
    /// pool when there is one: a moment behind the primary, which a listing may be. A notification
    /// read by its id, right after it was sent, comes from `notifications`.
    let listings: NotificationStore
    let userNotifications: UserNotificationStore
    let verifiedAliases: VerifiedAliasGate

    func addRoutes(to group: RouterGroup<NotifiableRequestContext>, limiter: RateLimiter? = nil) {
        group.limited(.sends, by: limiter).post("notifications", use: create)
        // Each notification of a batch counts as a send, once the batch is read.
        group.post("notifications/batch") { request, context in try await createBatch(request, context: context, limiter: limiter) }
        group.get("notifications", use: list)
        group.get("notifications/:id", use: show)
        group.delete("notifications/:id", use: cancel)
        group.get("notifications/:id/deliveries", use: deliveries)
        let events = group.limited(.events, by: limiter)
        events.post("notifications/:id/delivered") { request, context in try await report(.delivered, request, context) }
        events.post("notifications/:id/opened") { request, context in try await report(.opened, request, context) }
    }

    @Sendable func create(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<NotificationJSON> {
        let caller = try context.requireServerCaller()
        var request = request
        let body = try await request.jsonBody(context: context)
        var parsed = try NotificationRequest.accepted(body, now: Date())
        if let header = request.headers[.idempotencyKey], !header.isEmpty {
            guard header.unicodeScalars.count <= 255, !header.utf8.contains(0) else {
                throw APIError(status: .unprocessableContent, code: "too_long", message: "Idempotency-Key is at most 255 characters.", field: "Idempotency-Key")
            }
            // Two keys that disagree cannot both be honoured, and picking one would silently let
            // a retry of the other create a second notification.
            if let key = parsed.idempotencyKey, key != header {
                throw APIError(
                    status: .unprocessableContent, code: "idempotency_key_conflict",
                    message: "The Idempotency-Key header (\"\(header)\") and the body's idempotency_key (\"\(key)\") differ; send one, or the same in both.",
                    field: "Idempotency-Key")
            }
            parsed.idempotencyKey = header
        }
        let (notification, created): (StoredNotification, Bool)
        do {
            (notification, created) = try await notifications.create(
                appID: caller.appID, request: parsed,
                // Only a request that can be replayed needs its body remembered.
                digest: parsed.idempotencyKey == nil ? nil : NotificationRequest.digest(of: body)
            )
        } catch let reused as NotificationStore.IdempotencyKeyReused {
            throw APIError(
                status: .unprocessableContent, code: "idempotency_key_reused",
                message: reused.description,
                field: request.headers[.idempotencyKey] != nil ? "Idempotency-Key" : "idempotency_key"
            )
        }
        let counters = created ? nil : try await notifications.counters(notificationID: notification.id)
        return JSONResponse(NotificationJSON(notification, counters: counters), status: created ? .accepted : .ok)
    }

    @Sendable func show(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<NotificationJSON> {
        let notification = try await owned(context)
        return JSONResponse(NotificationJSON(notification, counters: try await notifications.counters(notificationID: notification.id)))
    }

    @Sendable func list(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<Page<NotificationJSON>> {
        let caller = try context.requireServerCaller()
        let limit = try request.limit(default: 50, maximum: 200)
        let page = try await listings.list(appID: caller.appID, beforeID: try request.cursor(), limit: limit)
        let counters = try await listings.counters(notificationIDs: page.map(\.id))
        let items = page.map { NotificationJSON($0, counters: counters[$0.id]) }
        return JSONResponse(Page(data: items, nextCursor: page.count == limit ? page.last.map { String($0.id) } : nil))
    }

    @Sendable func deliveries(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<Page<DeliveryJSON>> {
        let notification = try await owned(context)
        let states = DeliveryState.names
        let state = request.uri.queryParameters["state"].map(String.init)
        if let state, !states.contains(state) {
            throw APIError(
                status: .unprocessableContent, code: "invalid_state", message: "state must be one of \(states.joined(separator: ", ")).", field: "state")
        }
        let kind = request.uri.queryParameters["kind"].map(String.init)
        if let kind, !["push", "sync", "activity"].contains(kind) {
            throw APIError(status: .unprocessableContent, code: "invalid_kind", message: "kind must be push, sync or activity.", field: "kind")
        }
        let limit = try request.limit()
        let records = try await listings.deliveries(
            notificationID: notification.id, state: state, kind: kind, afterID: try request.cursor(), limit: limit
        )
        return JSONResponse(Page(data: records.map(DeliveryJSON.init), nextCursor: records.count == limit ? records.last.map { String($0.id) } : nil))
    }

    @Sendable func cancel(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<NotificationJSON> {
        let caller = try context.requireServerCaller()
        let id = try context.pathID("id", what: "notification")
        guard try await notifications.cancel(id: id, appID: caller.appID),
            let notification = try await notifications.notification(id: id, appID: caller.appID)
        else { throw APIError.notFound("This app has no notification \(id).") }
        return JSONResponse(NotificationJSON(notification, counters: try await notifications.counters(notificationID: id)))
    }

    /// `{"device_token_id": "12", "user": {"alias": "alice"}}`; ids as numbers or strings.
    func report(_ event: DeliveryEvent, _ request: Request, _ context: NotifiableRequestContext) async throws -> Response {
        let caller = try context.requireCaller()
        let notificationID = try context.pathID("id", what: "notification")
        var request = request
        let body = try await request.jsonBody(context: context)
        guard let object = body.objectValue else {
            throw APIError(status: .unprocessableContent, code: "invalid_body", message: "The body must be a JSON object with device_token_id.")
        }
        let deviceID: Int64
        switch object["device_token_id"] ?? object["device_id"] {
        case .integer(let value)?: deviceID = value
        case .string(let text)?:
            guard let value = Int64(text) else { fallthrough }
            deviceID = value
        case nil:
            throw APIError(status: .unprocessableContent, code: "missing_field", message: "Send the device's id as device_token_id.", field: "device_token_id")
        default:
            throw APIError(
                status: .unprocessableContent, code: "invalid_type", message: "device_token_id must be the device's id, a number or a string of digits.",
                field: "device_token_id")
        }
        var alias: String?
        if case .string(let text)? = object["user"]?.objectValue?["alias"], !text.isEmpty { alias = text }
        guard alias.map({ $0.unicodeScalars.count <= 255 && !$0.utf8.contains(0) }) ?? true else {
            throw APIError(
                status: .unprocessableContent, code: "invalid_user_alias", message: "user.alias must be at most 255 characters.", field: "user.alias")
        }
        guard let stateful = try await notifications.record(event, notificationID: notificationID, deviceID: deviceID, appID: caller.appID, userAlias: alias)
        else {
            throw APIError.notFound("Notification \(notificationID) was not sent to device \(deviceID) of this app.")
        }
        // Opening a stateful notification on one device handles it everywhere: when the report
        // names the device's user (checked by the record above) and, where the app requires
        // verified aliases, carries that user's token. Without them the report still counts.
        if event == .opened, stateful, let alias, try await mayActForUser(caller, alias: alias, request: request, body: body) {
            try await userNotifications.markOpened(notificationID: notificationID, deviceID: deviceID, appID: caller.appID, userAlias: alias)
        }
        return Response(
            status: .ok, headers: [.contentType: "application/json; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: #"{"status":"ok"}"#)))
    }

    private func mayActForUser(_ caller: Caller, alias: String, request: Request, body: JSONValue) async throws -> Bool {
        do {
            try await verifiedAliases.admit(caller, actingFor: alias, token: try VerifiedAliasGate.presentedToken(request, body: body))
            return true
        } catch is APIError {
            return false
        }
    }

    private func owned(_ context: NotifiableRequestContext) async throws -> StoredNotification {
        let caller = try context.requireServerCaller()
        let id = try context.pathID("id", what: "notification")
        guard let notification = try await notifications.notification(id: id, appID: caller.appID) else {
            throw APIError.notFound("This app has no notification \(id).")
        }
        return notification
    }
}

extension HTTPField.Name {
    static let idempotencyKey = Self("Idempotency-Key")!
}
