import Foundation
import Hummingbird
import NotifiableCore
import NotifiableStore

/// What the admin API needs of a provider's settings: how operators send them (validated before
/// anything is stored: material that cannot work is refused at upload, not at the first push) and
/// how they read them back.
protocol AdministeredGatewaySettings: GatewaySettings {
    associatedtype SummaryJSON: Encodable & Sendable
    /// How operators and error messages name the provider.
    static var displayName: String { get }
    static func parse(_ body: JSONValue) throws -> Self
    static func json(_ summary: Summary) -> SummaryJSON
    /// The settings to save from what was sent and what the app has (read only when asked for).
    static func completed(_ parsed: Self, previous: () async throws -> Self?) async throws -> Self
}

extension AdministeredGatewaySettings {
    static func completed(_ parsed: Self, previous: () async throws -> Self?) async throws -> Self { parsed }
}

extension APNsSettings: AdministeredGatewaySettings {
    static let displayName = "APNs"
    static func parse(_ body: JSONValue) throws -> APNsSettings { try APNsSettingsInput.parse(body) }
    static func json(_ summary: APNsSettingsSummary) -> APNsSettingsJSON { APNsSettingsJSON(summary) }
}

extension FCMSettings: AdministeredGatewaySettings {
    static let displayName = "FCM"
    static func parse(_ body: JSONValue) throws -> FCMSettings { try FCMSettingsInput.parse(body) }
    static func json(_ summary: FCMSettingsSummary) -> FCMSettingsJSON { FCMSettingsJSON(summary) }
}

extension WebPushSettings: AdministeredGatewaySettings {
    static let displayName = "Web Push"
    static func parse(_ body: JSONValue) throws -> WebPushSettings { try WebPushSettingsInput.parse(body) }
    static func json(_ summary: WebPushSettingsSummary) -> WebPushSettingsJSON { WebPushSettingsJSON(summary) }
    static func completed(_ parsed: WebPushSettings, previous: () async throws -> WebPushSettings?) async throws -> WebPushSettings {
        parsed.privateKeyPEM.isEmpty ? WebPushSettingsInput.completed(parsed, previous: try await previous()) : parsed
    }
}

/// Operators set, replace, read back (redacted) and remove an app's settings for one provider, at
/// `apps/:id/apns`, `apps/:id/fcm` or `apps/:id/webpush`.
struct GatewaySettingsAdminController<Settings: AdministeredGatewaySettings> {
    let store: GatewaySettingsStore<Settings>

    func addRoutes(to group: RouterGroup<NotifiableRequestContext>) {
        let path = RouterPath("apps/:id/\(Settings.provider.rawValue)")
        group.put(path, use: set)
        group.get(path, use: show)
        group.delete(path, use: remove)
    }

    @Sendable func set(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<Settings.SummaryJSON> {
        let appID = try context.pathID("id", what: "app")
        var request = request
        guard try await store.save(parsing: try await request.jsonBody(context: context), appID: appID), let saved = try await store.summary(appID: appID)
        else {
            throw APIError.notFound("There is no app \(appID).")
        }
        return JSONResponse(Settings.json(saved))
    }

    @Sendable func show(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<Settings.SummaryJSON> {
        let appID = try context.pathID("id", what: "app")
        guard let settings = try await store.summary(appID: appID) else {
            throw APIError.notFound("App \(appID) has no \(Settings.displayName) settings.")
        }
        return JSONResponse(Settings.json(settings))
    }

    @Sendable func remove(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let appID = try context.pathID("id", what: "app")
        guard try await store.remove(appID: appID) else { throw APIError.notFound("App \(appID) has no \(Settings.displayName) settings.") }
        return Response(status: .noContent)
    }
}

extension GatewaySettingsStore where Settings: AdministeredGatewaySettings {
    /// Validates the settings as an operator sent them and saves them (the admin API, the
    /// console); false when there is no such app.
    func save(parsing body: JSONValue, appID: Int64) async throws -> Bool {
        let settings = try await Settings.completed(try Settings.parse(body)) { try await self.settings(appID: appID) }
        return try await save(settings, appID: appID)
    }
}
