import Foundation
import Hummingbird
import NotifiableCore
import NotifiableStore

/// Operators set, replace, read back (redacted) and remove an app's APNs and FCM settings.
/// Material that cannot work is refused at upload, not at the first push.
struct GatewaySettingsAdminController {
    let apnsSettings: APNsSettingsStore
    let fcmSettings: FCMSettingsStore

    func addRoutes(to group: RouterGroup<NotifiableRequestContext>) {
        group.put("apps/:id/apns", use: setAPNs)
        group.get("apps/:id/apns", use: showAPNs)
        group.delete("apps/:id/apns", use: removeAPNs)
        group.put("apps/:id/fcm", use: setFCM)
        group.get("apps/:id/fcm", use: showFCM)
        group.delete("apps/:id/fcm", use: removeFCM)
    }

    @Sendable func setAPNs(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<APNsSettingsJSON> {
        let appID = try context.pathID("id", what: "app")
        var request = request
        let settings = try APNsSettingsInput.parse(try await request.jsonBody(context: context))
        guard try await apnsSettings.save(settings, appID: appID), let saved = try await apnsSettings.summary(appID: appID) else {
            throw APIError.notFound("There is no app \(appID).")
        }
        return JSONResponse(APNsSettingsJSON(saved))
    }

    @Sendable func showAPNs(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<APNsSettingsJSON> {
        let appID = try context.pathID("id", what: "app")
        guard let settings = try await apnsSettings.summary(appID: appID) else {
            throw APIError.notFound("App \(appID) has no APNs settings.")
        }
        return JSONResponse(APNsSettingsJSON(settings))
    }

    @Sendable func removeAPNs(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let appID = try context.pathID("id", what: "app")
        guard try await apnsSettings.remove(appID: appID) else { throw APIError.notFound("App \(appID) has no APNs settings.") }
        return Response(status: .noContent)
    }

    @Sendable func setFCM(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<FCMSettingsJSON> {
        let appID = try context.pathID("id", what: "app")
        var request = request
        let settings = try FCMSettingsInput.parse(try await request.jsonBody(context: context))
        guard try await fcmSettings.save(settings, appID: appID), let saved = try await fcmSettings.summary(appID: appID) else {
            throw APIError.notFound("There is no app \(appID).")
        }
        return JSONResponse(FCMSettingsJSON(saved))
    }

    @Sendable func showFCM(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<FCMSettingsJSON> {
        let appID = try context.pathID("id", what: "app")
        guard let settings = try await fcmSettings.summary(appID: appID) else {
            throw APIError.notFound("App \(appID) has no FCM settings.")
        }
        return JSONResponse(FCMSettingsJSON(settings))
    }

    @Sendable func removeFCM(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let appID = try context.pathID("id", what: "app")
        guard try await fcmSettings.remove(appID: appID) else { throw APIError.notFound("App \(appID) has no FCM settings.") }
        return Response(status: .noContent)
    }
}
