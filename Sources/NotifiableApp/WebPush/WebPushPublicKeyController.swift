import Hummingbird
import NotifiableCore
import NotifiableStore

/// `GET /api/v1/web_push/vapid_public_key`: the key a browser subscribes with
/// (`pushManager.subscribe({applicationServerKey})`), read by the web app with its device
/// credentials, so a rotated key reaches browsers without shipping a new build.
struct WebPushPublicKeyController {
    let settings: WebPushSettingsStore

    struct PublicKeyJSON: Encodable, Sendable {
        let publicKey: String
        enum CodingKeys: String, CodingKey { case publicKey = "public_key" }
    }

    func addRoutes(to group: RouterGroup<NotifiableRequestContext>) {
        group.get("web_push/vapid_public_key", use: show)
    }

    @Sendable func show(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<PublicKeyJSON> {
        let caller = try context.requireCaller()
        guard let summary = try await settings.summary(appID: caller.appID) else {
            throw APIError.notFound("This app has no Web Push key yet; an operator sets one with PUT /admin/apps/:id/webpush.")
        }
        return JSONResponse(PublicKeyJSON(publicKey: summary.publicKey))
    }
}
