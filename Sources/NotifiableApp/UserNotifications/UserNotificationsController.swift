import Foundation
import Hummingbird
import NotifiableCore
import NotifiableStore

/// Users' copies of stateful notifications: read and changed by the user's own devices with a
/// user token (`/api/v1/me/…`), read by the app's backend with server credentials.
struct UserNotificationsController {
    let store: UserNotificationStore

    /// Routes behind the user-token middleware. A user's changes are status events: each may
    /// queue a sync signal to every other device of the user, so they count against the limits.
    func addUserRoutes(to group: RouterGroup<NotifiableRequestContext>, limiter: RateLimiter? = nil) {
        group.get("notifications", use: myList)
        group.get("notifications/:id", use: myShow)
        let changes = group.limited(.events, by: limiter)
        changes.patch("notifications/:id", use: myUpdate)
        changes.delete("notifications/:id", use: myDelete)
        group.get("changes", use: myChanges)
    }

    /// Routes behind APIAuth.
    func addServerRoutes(to group: RouterGroup<NotifiableRequestContext>) {
        group.get("users/:alias/notifications", use: usersList)
    }

    @Sendable func myList(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<Page<UserNotificationJSON>> {
        let user = try context.requireUser()
        return try await list(appID: user.appID, userAlias: user.alias, request)
    }

    @Sendable func usersList(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<Page<UserNotificationJSON>> {
        let caller = try context.requireServerCaller()
        return try await list(appID: caller.appID, userAlias: try context.pathUserAlias(), request)
    }

    /// `?read_state=unread|read&limit=&cursor=&language=&country=`, newest first.
    private func list(appID: Int64, userAlias: String, _ request: Request) async throws -> JSONResponse<Page<UserNotificationJSON>> {
        let readState = try request.queryValue(named: "read_state").map { text in
            guard let state = ReadState(rawValue: text) else {
                throw APIError(status: .unprocessableContent, code: "invalid_read_state", message: "read_state must be unread or read.", field: "read_state")
            }
            return state
        }
        let limit = try request.limit(default: 50, maximum: 200)
        let records = try await store.list(appID: appID, userAlias: userAlias, readState: readState, beforeID: try request.cursor(), limit: limit)
        let (language, country) = request.locale
        return JSONResponse(
            Page(
                data: records.map { UserNotificationJSON($0, language: language, country: country) },
                nextCursor: records.count == limit ? records.last.map { String($0.notificationID) } : nil
            ))
    }

    @Sendable func myShow(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<UserNotificationJSON> {
        let user = try context.requireUser()
        let id = try context.pathID("id", what: "notification")
        guard let record = try await store.record(appID: user.appID, userAlias: user.alias, notificationID: id) else {
            throw Self.notFound(id)
        }
        let (language, country) = request.locale
        return JSONResponse(UserNotificationJSON(record, language: language, country: country))
    }

    /// `{"read_state"?, "user_action_state"?, "device_token_id"?}`: the device that made the
    /// change names itself, so the sync signal goes to the user's other devices only.
    @Sendable func myUpdate(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<UserNotificationJSON> {
        let user = try context.requireUser()
        let id = try context.pathID("id", what: "notification")
        var request = request
        let body = try await request.jsonBody(context: context)
        guard let fields = body.objectValue else {
            throw APIError(status: .unprocessableContent, code: "invalid_body", message: "Send a JSON object such as {\"read_state\": \"read\"}.")
        }
        let allowed: Set<String> = ["read_state", "user_action_state", "device_token_id"]
        if let unknown = fields.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw APIError(
                status: .unprocessableContent, code: "unknown_field",
                message: "\(unknown) is not a field here; send read_state, user_action_state and/or device_token_id.", field: unknown
            )
        }
        let readState = try Self.choice(fields["read_state"], ReadState.self, field: "read_state")
        let actionState = try Self.choice(fields["user_action_state"], UserActionState.self, field: "user_action_state")
        guard readState != nil || actionState != nil else {
            throw APIError(
                status: .unprocessableContent, code: "nothing_to_change",
                message: "Send read_state (unread, read) and/or user_action_state (no_interaction, dismissed, activated).", field: "read_state"
            )
        }
        let deviceID = try await originDevice(fields["device_token_id"] ?? request.queryValue(named: "device_token_id").map(JSONValue.string), user: user)
        guard
            let record = try await store.update(
                appID: user.appID, userAlias: user.alias, notificationID: id, readState: readState, actionState: actionState, deviceID: deviceID
            )
        else { throw Self.notFound(id) }
        let (language, country) = request.locale
        return JSONResponse(UserNotificationJSON(record, language: language, country: country))
    }

    /// `?device_token_id=` names the device that deleted it, as for PATCH.
    @Sendable func myDelete(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let user = try context.requireUser()
        let id = try context.pathID("id", what: "notification")
        let deviceID = try await originDevice(request.queryValue(named: "device_token_id").map(JSONValue.string), user: user)
        guard try await store.delete(appID: user.appID, userAlias: user.alias, notificationID: id, deviceID: deviceID) else {
            throw Self.notFound(id)
        }
        return Response(status: .noContent)
    }

    /// `?since=<cursor>&limit=`: every change after the cursor, oldest first.
    @Sendable func myChanges(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<UserChangesJSON> {
        let user = try context.requireUser()
        var since: Int64 = 0
        if let text = request.queryValue(named: "since"), !text.isEmpty {
            guard let value = Int64(text), value >= 0 else {
                throw APIError(
                    status: .unprocessableContent, code: "invalid_cursor",
                    message: "since must be a next_cursor or cursor value from this feed, or 0 for the beginning.", field: "since"
                )
            }
            since = value
        }
        let limit = try request.limit(default: 100, maximum: 1000)
        do {
            return JSONResponse(UserChangesJSON(try await store.changes(appID: user.appID, userAlias: user.alias, after: since, limit: limit)))
        } catch UserChangesError.cursorExpired(let prunedThrough) {
            throw APIError(
                status: .gone, code: "cursor_expired",
                message: "Changes up to \(prunedThrough) are no longer kept. Read GET /api/v1/me/notifications afresh, "
                    + "then follow the feed from since=\(prunedThrough)."
            )
        } catch UserChangesError.cursorAhead(let last) {
            throw APIError(
                status: .unprocessableContent, code: "invalid_cursor",
                message: "since=\(since) is past this user's last change (\(last)); use a cursor this feed gave out.", field: "since"
            )
        }
    }

    /// The device a change came from, which must be one of the user's; nil when not named.
    private func originDevice(_ value: JSONValue?, user: VerifiedUser) async throws -> Int64? {
        let id: Int64?
        switch value {
        case nil, .null?: return nil
        case .integer(let number)?: id = number
        case .string(let text)?: id = Int64(text)
        default: id = nil
        }
        guard let id, id > 0, try await store.isUsersDevice(id, appID: user.appID, userAlias: user.alias) else {
            throw APIError(
                status: .unprocessableContent, code: "invalid_device_token_id",
                message: "device_token_id must be the id of one of this user's devices (the id the SDK got when it registered).",
                field: "device_token_id"
            )
        }
        return id
    }

    private static func choice<T: RawRepresentable>(_ value: JSONValue?, _ type: T.Type, field: String) throws -> T?
    where T.RawValue == String, T: CaseIterable {
        switch value {
        case nil, .null?: return nil
        case .string(let text)?:
            if let choice = T(rawValue: text) { return choice }
        default: break
        }
        throw APIError(
            status: .unprocessableContent, code: "invalid_\(field)",
            message: "\(field) must be one of \(T.allCases.map(\.rawValue).joined(separator: ", ")).", field: field
        )
    }

    private static func notFound(_ id: Int64) -> APIError {
        APIError.notFound("This user has no notification \(id), or it expired.")
    }
}

extension Request {
    /// `?language=&country=`: the locale whose text to show.
    var locale: (language: String?, country: String?) {
        (queryValue(named: "language").map { $0.lowercased() }, queryValue(named: "country").map { $0.lowercased() })
    }
}
