import Hummingbird
import NotifiableCore
import NotifiableStore

/// The app's backend sets a device's tags (server credentials only: tags decide who receives
/// what, so an install must not tag itself into another audience through these routes).
/// `PUT` replaces the set; `PATCH` adds and removes. Both answer the device.
struct DeviceTagsController {
    let devices: DeviceStore

    /// Tag changes are device writes: they count as registrations.
    func addRoutes(to group: RouterGroup<NotifiableRequestContext>, limiter: RateLimiter? = nil) {
        let registrations = group.limited(.registrations, by: limiter)
        registrations.put("device_tokens/:id/tags", use: replace)
        registrations.patch("device_tokens/:id/tags", use: edit)
    }

    @Sendable func replace(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<DeviceJSON> {
        try await change(request, context, field: "tags", TagChanges.replacement(from:))
    }

    @Sendable func edit(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<DeviceJSON> {
        try await change(request, context, field: "add", TagChanges.edit(from:))
    }

    private func change(
        _ request: Request, _ context: NotifiableRequestContext, field: String,
        _ read: (JSONValue) throws(ValidationError) -> TagChanges
    ) async throws -> JSONResponse<DeviceJSON> {
        let caller = try context.requireServerCaller()
        let id = try context.pathID("id", what: "registered device of this app")
        var request = request
        let changes = try read(try await request.jsonBody(context: context))
        guard let device = try await devices.changeTags(id: id, appID: caller.appID, changes, field: field) else {
            throw APIError.notFound("There is no registered device of this app \(id).")
        }
        return JSONResponse(DeviceJSON(device))
    }
}
