import Hummingbird
import NotifiableCore
import NotifiableStore

/// The device registry API the Notifiable SDKs call (CONTRACT §3). Both device and server
/// credentials may use it; every lookup is confined to the caller's app. Where the app requires
/// verified aliases, a device acts for a user only with that user's token (`VerifiedAliasGate`).
struct DeviceTokensController {
    let devices: DeviceStore
    let verifiedAliases: VerifiedAliasGate
    /// The push services a browser's subscription may point at.
    let webPushHosts: WebPushHosts

    init(devices: DeviceStore, userTokens: UserTokenVerifier, webPushHosts: WebPushHosts) {
        self.devices = devices
        self.webPushHosts = webPushHosts
        self.verifiedAliases = VerifiedAliasGate(verifier: userTokens)
    }

    func addRoutes(to group: RouterGroup<NotifiableRequestContext>, limiter: RateLimiter? = nil) {
        let registrations = group.limited(.registrations, by: limiter)
        for path in ["device_tokens", "device_tokens.json"] {
            registrations.post(RouterPath(path), use: register)
            group.get(RouterPath(path), use: list)
        }
        registrations.patch("device_tokens/:id", use: update)
        registrations.put("device_tokens/:id", use: update)
        group.delete("device_tokens/:id", use: unregister)
    }

    @Sendable func register(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<DeviceJSON> {
        let caller = try context.requireCaller()
        var request = request
        let body = try await request.jsonBody(context: context)
        var storedProvider: Provider?
        if let token = DeviceFields.tokenWithoutProvider(in: body) {
            storedProvider = try await devices.provider(ofToken: token, appID: caller.appID)
        }
        let fields = try DeviceFields.registration(from: body, storedProvider: storedProvider, webPushHosts: webPushHosts)
        try verifiedAliases.admit(caller, tags: fields.tags)
        try await verifiedAliases.admit(
            caller, actingFor: fields.userAliasToProve(current: nil), token: VerifiedAliasGate.presentedToken(request, body: body)
        )
        let device = try await devices.register(appID: caller.appID, fields: fields)
        return JSONResponse(DeviceJSON(device))
    }

    @Sendable func update(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<DeviceJSON> {
        let caller = try context.requireCaller()
        let id = try context.pathID("id", what: "registered device of this app")
        var request = request
        let body = try await request.jsonBody(context: context)
        guard let current = try await devices.device(id: id, appID: caller.appID) else {
            throw APIError.notFound("There is no registered device of this app \(id).")
        }
        let fields = try DeviceFields.update(from: body, provider: current.provider, webPushHosts: webPushHosts)
        try verifiedAliases.admit(caller, tags: fields.tags)
        try await verifiedAliases.admit(
            caller, actingFor: fields.userAliasToProve(current: current), token: VerifiedAliasGate.presentedToken(request, body: body)
        )
        guard let device = try await devices.update(id: id, appID: caller.appID, fields: fields) else {
            throw APIError.notFound("There is no registered device of this app \(id).")
        }
        return JSONResponse(DeviceJSON(device))
    }

    @Sendable func unregister(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let caller = try context.requireCaller()
        let id = try context.pathID("id", what: "registered device of this app")
        guard try await devices.unregister(id: id, appID: caller.appID) else { throw APIError.notFound("There is no registered device of this app \(id).") }
        return Response(status: .noContent)
    }

    @Sendable func list(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<[DeviceJSON]> {
        let caller = try context.requireCaller()
        // Rails-style clients send user[alias].
        guard let alias = request.queryValue(named: "user_alias", "user[alias]"), !alias.isEmpty else {
            throw APIError(
                status: .unprocessableContent, code: "missing_field",
                message: "Say whose devices to list: ?user_alias=ALIAS.", field: "user_alias"
            )
        }
        guard alias.unicodeScalars.count <= DeviceFields.maxTextLength, !alias.utf8.contains(0) else {
            throw APIError(
                status: .unprocessableContent, code: "invalid_user_alias",
                message: "user_alias must be 1 to \(DeviceFields.maxTextLength) characters, without NUL.", field: "user_alias"
            )
        }
        // The list hands out the user's device ids and push tokens, with which an install could act as the user.
        try await verifiedAliases.admit(caller, actingFor: alias, token: VerifiedAliasGate.presentedToken(request))
        let found = try await devices.devices(userAlias: alias, appID: caller.appID)
        return JSONResponse(found.map(DeviceJSON.init))
    }
}
