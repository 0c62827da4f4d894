import Foundation
import Hummingbird
import NotifiableCore
import NotifiableDelivery
import NotifiableStore

/// Operators register an app's webhooks, see them (never their secrets), resume a paused
/// one, and read the batches sent with their attempts.
struct WebhooksAdminController {
    let webhooks: WebhookStore
    let targets: WebhookTargets

    func addRoutes(to group: RouterGroup<NotifiableRequestContext>) {
        group.post("apps/:id/webhooks", use: create)
        group.get("apps/:id/webhooks", use: list)
        group.delete("apps/:id/webhooks/:webhook_id", use: delete)
        group.post("apps/:id/webhooks/:webhook_id/resume", use: resume)
        group.get("apps/:id/webhooks/:webhook_id/batches", use: batches)
    }

    /// `{"url": "https://…", "events": ["sent", …]}` (all events when absent) → 201 with the
    /// signing secret, shown this once.
    @Sendable func create(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<WebhookJSON> {
        let appID = try context.pathID("id", what: "app")
        var request = request
        let body = try AdminBody(try await request.jsonBody(context: context))
        try body.allowOnly(["url", "events"])
        let url = try body.string("url", required: true)!
        var eventNames: [String]?
        switch body.object["events"] {
        case nil, .null?: eventNames = nil
        case .array(let values)?:
            eventNames = try values.enumerated().map { index, value in
                guard case .string(let name) = value else {
                    throw APIError(status: .unprocessableContent, code: "invalid_type", message: "events must be strings.", field: "events[\(index)]")
                }
                return name
            }
        default:
            throw APIError(status: .unprocessableContent, code: "invalid_type", message: "events must be an array of event types.", field: "events")
        }
        do {
            let (webhook, secret) = try await WebhookAdministration(webhooks: webhooks, targets: targets).add(
                appID: appID, url: url, eventNames: eventNames)
            return JSONResponse(WebhookJSON(webhook, secret: secret), status: .created)
        } catch WebhookAdministration.Refusal.invalid(let error) {
            throw APIError.validation(error)
        } catch WebhookAdministration.Refusal.internalTarget(let refusal) {
            throw APIError(status: .unprocessableContent, code: "internal_webhook_target", message: "url: \(refusal).", field: "url")
        } catch WebhookAdministration.Refusal.noSuchApp {
            throw APIError.notFound("There is no app \(appID).")
        }
    }

    @Sendable func list(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<Page<WebhookJSON>> {
        let appID = try context.pathID("id", what: "app")
        guard let listed = try await webhooks.list(appID: appID) else { throw APIError.notFound("There is no app \(appID).") }
        return JSONResponse(Page(data: listed.map { WebhookJSON($0) }, nextCursor: nil))
    }

    /// Deletes the webhook with the events it had not sent yet.
    @Sendable func delete(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let (appID, id) = try Self.ids(context)
        guard try await webhooks.delete(appID: appID, id: id) else { throw Self.notFound(appID, id) }
        return Response(status: .noContent)
    }

    /// Sends again after a pause: the waiting batch goes now, then the backlog behind it.
    @Sendable func resume(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<WebhookJSON> {
        let (appID, id) = try Self.ids(context)
        guard let webhook = try await webhooks.resume(appID: appID, id: id) else { throw Self.notFound(appID, id) }
        return JSONResponse(WebhookJSON(webhook))
    }

    /// `?cursor=…&limit=…`, newest first.
    @Sendable func batches(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<Page<WebhookBatchJSON>> {
        let (appID, id) = try Self.ids(context)
        let limit = try request.limit()
        guard let batches = try await webhooks.batches(appID: appID, webhookID: id, beforeID: try request.cursor(), limit: limit) else {
            throw Self.notFound(appID, id)
        }
        return JSONResponse(
            Page(
                data: batches.map(WebhookBatchJSON.init), nextCursor: batches.count == limit ? batches.last.map { String($0.id) } : nil
            ))
    }

    private static func ids(_ context: NotifiableRequestContext) throws -> (app: Int64, webhook: Int64) {
        (try context.pathID("id", what: "app"), try context.pathID("webhook_id", what: "webhook"))
    }

    private static func notFound(_ appID: Int64, _ id: Int64) -> APIError {
        APIError.notFound("App \(appID) has no webhook \(id).")
    }
}
