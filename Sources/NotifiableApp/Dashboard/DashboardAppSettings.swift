import Foundation
import Hummingbird
import NotifiableCore
import NotifiableDelivery
import NotifiableStore

/// Managing apps from the console: creating one (owners), and an app's name, mode, retention,
/// credentials, gateway settings and webhooks (its admins and owners). Each form's checks are
/// the admin API's own (`APNsSettingsInput`, `FCMSettingsInput`, `WebhookSubscription`).
struct ConsoleAppSettings: ConsolePages {
    let console: ConsoleRequests
    /// Changes to an app and its credentials, as the admin API makes them.
    let administration: AppAdministration
    let gatewaySettings: GatewaySettingsStores
    let webhooks: WebhookStore
    let webhookTargets: WebhookTargets
    let rateLimits: RateLimits
    let serviceRetentionDays: Int
    let queueReads: QueueAdminStore
    let audit: AuditLogStore

    func addRoutes(to pages: RouterGroup<NotifiableRequestContext>) {
        pages.get("apps/new", use: newAppPage)
        pages.post("apps", use: createApp)
        pages.get("apps/:id/settings", use: settingsPage)
        pages.post("apps/:id/settings", use: changeApp)
        pages.post("apps/:id/credentials/rotate", use: rotateCredentials)
        pages.post("apps/:id/credentials/revoke", use: revokeCredential)
        pages.post("apps/:id/gateways/:provider", use: changeGateway)
        pages.post("apps/:id/webhooks", use: changeWebhooks)
        pages.get("apps/:id/webhooks/:webhook", use: webhookBatchesPage)
    }
}

extension ConsoleAppSettings {
    @Sendable func newAppPage(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        try require(.administer, context, "create apps")
        return DashboardPages.newApp(csrf: csrf(request))
    }

    /// Creates the app and shows its credentials, once.
    @Sendable func createApp(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let form = try await form(of: request, "no app was created")
        try require(.administer, context, "create apps")
        guard let name = App.normalizedName(form["name"] ?? "") else {
            throw ConsoleRefusal.invalid("An app's name is 1 to \(App.maxNameLength) characters; no app was created.")
        }
        let created = try await console.apps.create(name: name, deliveryMode: form["mode"] == "sandbox" ? .sandbox : .live)
        var page = DashboardPages.secrets(
            app: created.app, title: "App created", [created.deviceCredential, created.serverCredential])
        // The audit log learns the new app from where the page points.
        page.headers[.location] = nil
        page.headers[.contentLocation] = "/dashboard/apps/\(created.app.id)/settings"
        return page
    }

    @Sendable func settingsPage(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let app = try await app(context, ConsoleAction.manage, "manage this app")
        return DashboardPages.settings(
            app, credentials: try await console.apps.credentials(appID: app.id), gateways: try await gatewaySettings.summaries(appID: app.id),
            webhooks: try await webhooks.list(appID: app.id) ?? [],
            dead: try await queueReads.dead(appID: app.id, afterID: nil, limit: 1).count, serviceRetentionDays: serviceRetentionDays,
            rateLimits: rateLimits, audit: try await audit.list(appID: app.id, limit: 20), csrf: csrf(request),
            notice: request.uri.queryParameters["saved"].map { "Saved: \(String($0))." }
                ?? request.uri.queryParameters["requeued"].map { "Re-queued \(String($0)) dead deliveries." })
    }

    /// Name, delivery mode and retention.
    @Sendable func changeApp(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let form = try await form(of: request, "nothing was changed")
        let app = try await app(context, ConsoleAction.manage, "manage this app")
        guard let name = App.normalizedName(form["name"] ?? ""), let mode = form["mode"].flatMap(DeliveryMode.init(rawValue:)) else {
            throw ConsoleRefusal.invalid("An app's name is 1 to \(App.maxNameLength) characters and its mode live or sandbox; nothing was changed.")
        }
        var retention: Int?? = .some(nil)
        if let text = form["retention_days"], !text.isEmpty {
            guard let days = Int(text), (1...serviceRetentionDays).contains(days) else {
                throw ConsoleRefusal.invalid(
                    "Retention may shorten the service's \(serviceRetentionDays) days (NOTIFIABLE_RETENTION_DAYS), not lengthen it: "
                        + "give 1 to \(serviceRetentionDays), or leave it empty for the service's period. Nothing was changed.")
            }
            retention = .some(days)
        }
        _ = try await administration.update(appID: app.id, AppStore.Changes(name: name, deliveryMode: mode, retentionDays: retention))
        return Self.saved(app.id, "name, mode and retention")
    }

    /// A new credential pair for a role; the old one keeps working for the grace hours. The new
    /// secret is shown once, on the answer.
    @Sendable func rotateCredentials(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let form = try await form(of: request, "nothing was rotated")
        let app = try await app(context, ConsoleAction.manage, "manage this app's credentials")
        guard let role = form["role"].flatMap(CredentialRole.init(rawValue:)), let hours = Double(form["grace_hours"] ?? "24"), (0...(366 * 24)).contains(hours)
        else { throw ConsoleRefusal.invalid("Choose device or server, and 0 to \(366 * 24) hours of grace; nothing was rotated.") }
        AuditMiddleware.note(["role": role.rawValue, "grace_hours": "\(hours)"])
        guard let rotation = try await administration.rotate(appID: app.id, role: role, grace: .seconds(hours * 3600)) else {
            throw ConsoleRefusal.notFound("There is no such app.")
        }
        return DashboardPages.secrets(app: app, title: "New \(role.rawValue) credentials", [rotation.credential])
    }

    @Sendable func revokeCredential(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let form = try await form(of: request, "nothing was revoked")
        let app = try await app(context, ConsoleAction.manage, "manage this app's credentials")
        guard let accessID = form["access_id"], try await administration.revoke(appID: app.id, accessID: accessID) else {
            throw ConsoleRefusal.notFound("App \(app.id) has no credential \(form["access_id"] ?? "").")
        }
        return Self.saved(app.id, "credential \(accessID) revoked")
    }

    /// Uploads a provider's settings (APNs `.p8` key, FCM service account, Web Push contact and
    /// key); `remove` takes them away.
    @Sendable func changeGateway(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let form = try await form(of: request, "nothing was changed")
        let app = try await app(context, ConsoleAction.manage, "manage this app's gateways")
        let name = context.parameters.get("provider") ?? ""
        guard let provider = Provider(rawValue: name) else { throw ConsoleRefusal.notFound("There is no gateway \(name).") }
        AuditMiddleware.note(["gateway": provider.rawValue, "change": form["remove"] != nil ? "removed" : "set"])
        do {
            if form["remove"] != nil {
                _ = try await gatewaySettings.remove(provider, appID: app.id)
            } else {
                // The form's fields carry the admin API's names; an empty one is one not sent.
                func body(_ fields: [String]) -> JSONValue {
                    .object(Dictionary(uniqueKeysWithValues: fields.compactMap { field in form[field].map { (field, JSONValue.string($0)) } }))
                }
                switch provider {
                case .apns:
                    _ = try await gatewaySettings.apns.save(
                        parsing: body(["key_id", "team_id", "bundle_id", "private_key", "environment"]), appID: app.id)
                case .fcm:
                    _ = try await gatewaySettings.fcm.save(
                        parsing: .object(["service_account": form["service_account"].map(JSONValue.string) ?? .null]), appID: app.id)
                case .webpush:
                    var fields = body(["subject"]).objectValue ?? [:]
                    if let key = form["private_key"], !key.isEmpty { fields["private_key"] = .string(key) }
                    if form["rotate"] != nil { fields["rotate"] = .bool(true) }
                    _ = try await gatewaySettings.webpush.save(parsing: .object(fields), appID: app.id)
                }
            }
        } catch let error as APIError {
            throw ConsoleRefusal.invalid((error.field.map { "\($0): " } ?? "") + error.message + " Nothing was changed.")
        }
        return Self.saved(app.id, "\(provider.displayName) settings")
    }

    /// Adds a webhook (its secret shown once), or pauses, resumes or removes one.
    @Sendable func changeWebhooks(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let form = try await form(of: request, "nothing was changed")
        let app = try await app(context, ConsoleAction.manage, "manage this app's webhooks")
        if let id = form["webhook"].flatMap({ Int64($0) }) {
            AuditMiddleware.note(["webhook": "\(id)", "change": form["do"] ?? ""])
            let found: Bool
            switch form["do"] {
            case "pause": found = try await webhooks.pause(appID: app.id, id: id) != nil
            case "resume": found = try await webhooks.resume(appID: app.id, id: id) != nil
            case "remove": found = try await webhooks.delete(appID: app.id, id: id)
            default: throw ConsoleRefusal.invalid("Pause, resume or remove; nothing was changed.")
            }
            guard found else { throw ConsoleRefusal.notFound("App \(app.id) has no webhook \(id).") }
            return Self.saved(app.id, "webhook \(id)")
        }
        let events = (form["events"] ?? "").split(separator: ",").map(String.init).filter { !$0.isEmpty }
        let url = form["url"] ?? ""
        // The host only: a webhook's path or query often carries a secret, and the log outlives it.
        AuditMiddleware.note(["host": URLComponents(string: url)?.host ?? "?", "change": "add"])
        let webhook: Webhook, secret: String
        do {
            (webhook, secret) = try await WebhookAdministration(webhooks: webhooks, targets: webhookTargets).add(
                appID: app.id, url: url, eventNames: events.isEmpty ? nil : events)
        } catch WebhookAdministration.Refusal.invalid(let error) {
            throw ConsoleRefusal.invalid(error.message + " No webhook was added.")
        } catch WebhookAdministration.Refusal.internalTarget(let refusal) {
            throw ConsoleRefusal.invalid("\(refusal). No webhook was added.")
        } catch WebhookAdministration.Refusal.noSuchApp {
            throw ConsoleRefusal.notFound("There is no such app.")
        }
        return HTML.page(
            "Webhook added",
            """
            <p>Webhook #\(webhook.id) posts to <code>\(HTML.escape(webhook.url))</code>. Its signing secret, shown only now:</p>
            <pre id="secret">\(HTML.escape(secret))</pre>
            <p>\(HTML.link("/dashboard/apps/\(app.id)/settings", "Back to the settings"))</p>
            """)
    }

    @Sendable func webhookBatchesPage(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let app = try await app(context, ConsoleAction.manage, "manage this app's webhooks")
        let id = try context.pathID("webhook", what: "webhook")
        guard let batches = try await webhooks.batches(appID: app.id, webhookID: id, beforeID: try request.cursor(), limit: Self.pageSize) else {
            throw ConsoleRefusal.notFound("App \(app.id) has no webhook \(id).")
        }
        return DashboardPages.webhookBatches(app: app, webhookID: id, batches, nextCursor: batches.count == Self.pageSize ? batches.last?.id : nil)
    }

    static func saved(_ appID: Int64, _ what: String) -> Response {
        Response(status: .seeOther, headers: [.location: "/dashboard/apps/\(appID)/settings?saved=\(HTML.queryEscape(what))"])
    }
}
