import Foundation
import Hummingbird
import NotifiableCore
import NotifiableStore

/// Operators manage apps and their credentials: create, list, read, rename, switch delivery
/// mode and verified aliases, delete, rotate and revoke credentials, rotate user-token keys.
struct AppsAdminController {
    let apps: AppStore
    let administration: AppAdministration
    let gatewaySettings: GatewaySettingsStores
    let userTokens: UserTokenSettingsStore
    /// NOTIFIABLE_RETENTION_DAYS: the most days an app may keep.
    let serviceRetentionDays: Int

    /// How long a rotated-out credential keeps working unless the caller says otherwise.
    static let defaultGrace: Duration = .seconds(24 * 3600)

    func addRoutes(to group: RouterGroup<NotifiableRequestContext>) {
        group.post("apps", use: create)
        group.get("apps", use: list)
        group.get("apps/:id", use: show)
        group.patch("apps/:id", use: update)
        group.delete("apps/:id", use: delete)
        group.post("apps/:id/credentials/rotate", use: rotate)
        group.delete("apps/:id/credentials/:access_id", use: revoke)
        group.post("apps/:id/user_tokens/rotate", use: rotateUserTokenKey)
    }

    /// `{"name": "Demo", "delivery_mode": "live"|"sandbox"}` → 201 with the credentials, shown once.
    @Sendable func create(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<CreatedAppJSON> {
        var request = request
        let body = try AdminBody(try await request.jsonBody(context: context))
        try body.allowOnly(["name", "delivery_mode"])
        let name = try Self.name(body, required: true)!
        let mode = try body.choice("delivery_mode", DeliveryMode.self) ?? .live
        return JSONResponse(CreatedAppJSON(try await apps.create(name: name, deliveryMode: mode)), status: .created)
    }

    @Sendable func list(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<Page<AppJSON>> {
        // An admin's or editor's key lists the apps it has.
        let caller = context.consoleOperator ?? .adminToken
        let listed = try await apps.list().filter { caller.sees(appID: $0.id) }
        let policies = try await userTokens.policies(appIDs: listed.map(\.id))
        // An app deleted between the two reads is left out rather than shown half.
        return JSONResponse(Page(data: listed.compactMap { app in policies[app.id].map { AppJSON(app, policy: $0) } }, nextCursor: nil))
    }

    @Sendable func show(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<AppJSON> {
        let app = try await existingApp(context)
        async let policy = userTokens.policy(appID: app.id)
        async let credentials = apps.credentials(appID: app.id)
        async let gateways = gatewaySettings.summaries(appID: app.id)
        guard let policy = try await policy else { throw APIError.notFound("There is no app \(app.id).") }
        return JSONResponse(AppJSON(app, policy: policy, credentials: try await credentials, gateways: try await gateways))
    }

    /// `{"name"?, "delivery_mode"?, "require_verified_alias"?, "android_style"?, "default_ttl_seconds"?,
    ///   "default_mutable_content"?, "default_content_available"?, "retention_days"?, "default_android_channel_id"?}`;
    /// `"retention_days": null` gives the app the service's period again, `"default_android_channel_id": null`
    /// (or "") removes the default channel.
    @Sendable func update(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<AppJSON> {
        let id = try context.pathID("id", what: "app")
        var request = request
        let body = try AdminBody(try await request.jsonBody(context: context))
        try body.allowOnly([
            "name", "delivery_mode", "require_verified_alias", "android_style", "default_ttl_seconds", "default_mutable_content",
            "default_content_available", "retention_days", "default_android_channel_id",
        ])
        let changes = AppStore.Changes(
            name: try Self.name(body, required: false),
            deliveryMode: try body.choice("delivery_mode", DeliveryMode.self),
            androidStyle: try body.choice("android_style", AndroidStyle.self),
            timeToLiveSeconds: try body.integer("default_ttl_seconds", in: PushDefaults.timeToLiveRange),
            mutableContent: try body.boolean("default_mutable_content"),
            contentAvailable: try body.boolean("default_content_available"),
            retentionDays: try retentionDays(body),
            androidChannelID: try Self.androidChannel(body)
        )
        let requireVerifiedAlias = try body.boolean("require_verified_alias")
        let policy =
            if let requireVerifiedAlias {
                try await userTokens.setRequireVerifiedAlias(requireVerifiedAlias, appID: id)
            } else {
                try await userTokens.policy(appID: id)
            }
        guard let policy, let app = try await administration.update(appID: id, changes) else {
            throw APIError.notFound("There is no app \(id).")
        }
        return JSONResponse(AppJSON(app, policy: policy))
    }

    /// Deletes the app and everything it owns (devices, notifications, deliveries, settings).
    @Sendable func delete(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let id = try context.pathID("id", what: "app")
        guard try await administration.delete(appID: id) else { throw APIError.notFound("There is no app \(id).") }
        return Response(status: .noContent)
    }

    /// `{"role": "device"|"server", "grace_seconds": 86400}` → 201 with the new pair, shown once;
    /// the earlier pairs of that role keep working for the grace period.
    @Sendable func rotate(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<RotationJSON> {
        let id = try context.pathID("id", what: "app")
        var request = request
        let body = try AdminBody(try await request.jsonBody(context: context))
        try body.allowOnly(["role", "grace_seconds"])
        guard let role = try body.choice("role", CredentialRole.self) else {
            throw APIError(status: .unprocessableContent, code: "missing_field", message: "role is required: \"device\" or \"server\".", field: "role")
        }
        let grace = try body.integer("grace_seconds", in: 0...(366 * 24 * 3600)).map { Duration.seconds($0) } ?? Self.defaultGrace
        guard let rotation = try await administration.rotate(appID: id, role: role, grace: grace) else { throw APIError.notFound("There is no app \(id).") }
        return JSONResponse(RotationJSON(rotation), status: .created)
    }

    /// Revokes every user token the app has minted, at once (a token leaked; otherwise they
    /// live up to an hour): tokens verify only with a key of the app's current generation, which this raises.
    @Sendable func rotateUserTokenKey(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<UserTokenRotationJSON> {
        let id = try context.pathID("id", what: "app")
        guard let policy = try await userTokens.rotateKey(appID: id) else { throw APIError.notFound("There is no app \(id).") }
        return JSONResponse(UserTokenRotationJSON(policy))
    }

    /// Ends one credential now (a grace period no longer needed, or a leaked secret).
    @Sendable func revoke(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let id = try context.pathID("id", what: "app")
        let accessID = context.parameters.get("access_id") ?? ""
        guard Credential.isWellFormedAccessID(accessID), try await administration.revoke(appID: id, accessID: accessID) else {
            throw APIError.notFound("App \(id) has no working credential \(accessID).")
        }
        return Response(status: .noContent)
    }

    /// An app may keep its data for fewer days than the service, never more: whole days of
    /// deliveries are dropped for every app at once.
    private func retentionDays(_ body: AdminBody) throws -> Int?? {
        if body.isNull("retention_days") { return .some(nil) }
        guard let days = try body.integer("retention_days", in: 1...3650) else { return nil }
        guard days <= serviceRetentionDays else {
            throw APIError(
                status: .unprocessableContent, code: "invalid_retention_days",
                message: "retention_days may shorten the service's NOTIFIABLE_RETENTION_DAYS (\(serviceRetentionDays)), not lengthen it: "
                    + "give 1 to \(serviceRetentionDays), or null for the service's period.", field: "retention_days")
        }
        return .some(Int(days))
    }

    /// The app's default Android notification channel: 1…255 characters; null or "" removes it.
    static func androidChannel(_ body: AdminBody) throws -> String?? {
        let key = "default_android_channel_id"
        if body.isNull(key) { return .some(nil) }
        guard let channel = try body.string(key) else { return nil }
        if channel.isEmpty { return .some(nil) }
        guard channel.unicodeScalars.count <= 255, !channel.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
            throw APIError(
                status: .unprocessableContent, code: "invalid_channel",
                message: "\(key) is an Android notification channel id: at most 255 characters, no control characters.", field: key)
        }
        return .some(channel)
    }

    private func existingApp(_ context: NotifiableRequestContext) async throws -> App {
        let id = try context.pathID("id", what: "app")
        guard let app = try await apps.app(id: id) else { throw APIError.notFound("There is no app \(id).") }
        return app
    }

    private static func name(_ body: AdminBody, required: Bool) throws -> String? {
        let given = body.object["name"]
        guard let text = try body.string("name", required: required) else {
            if given == .string("") { throw APIError(status: .unprocessableContent, code: "invalid_name", message: "name must not be empty.", field: "name") }
            return nil
        }
        guard let name = App.normalizedName(text) else {
            throw APIError(status: .unprocessableContent, code: "invalid_name", message: "name must be 1 to \(App.maxNameLength) characters.", field: "name")
        }
        return name
    }
}
