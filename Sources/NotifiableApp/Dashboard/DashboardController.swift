import Foundation
import Hummingbird
import NotifiableCore
import NotifiableDelivery
import NotifiableStore

/// The operators' console under `/dashboard`: server-rendered pages, no script. Operators sign in
/// with a name and password (or the admin token); each page asks `ConsoleOperator.may` before it
/// reads or changes anything, and every state-changing form is written to the audit log.
struct DashboardController {
    let session: DashboardSession?
    let adminToken: String?
    let throttle: SignInThrottle
    /// Checks and makes operators' passwords a few at a time, off the request threads.
    let passwords: PasswordChecks
    let trustedProxies: Set<String>
    let serviceRetentionDays: Int
    let webhookTargets: WebhookTargets
    let rateLimits: RateLimits
    let apps: AppStore
    let devices: DeviceStore
    /// The pages' reads, from the read pool when there is one (NOTIFIABLE_READ_DATABASE_URL).
    let notifications: NotificationStore
    /// Sends and cancels (writes: the primary).
    let sending: NotificationStore
    /// Re-queues dead deliveries (a write: the primary).
    let queue: QueueAdminStore
    let queueReads: QueueAdminStore
    let queries: DashboardStore
    let trends: TrendStore
    let finder: DeviceFinder
    let operators: OperatorStore
    let audit: AuditLogStore
    let webhooks: WebhookStore
    let apnsSettings: APNsSettingsStore
    let fcmSettings: FCMSettingsStore
    /// Changes to an app and its credentials, as the admin API makes them.
    let administration: AppAdministration
    /// Rich content sent with a notification composed here (a write: the primary).
    let contents: NotificationContentStore
    /// Exports and erases a person (writes: the primary).
    let personalData: PersonalData
    /// Operators' admin API keys.
    let operatorKeys: OperatorKeyStore

    func addRoutes(to router: Router<NotifiableRequestContext>) {
        let open = router.group("dashboard")
        open.get("login") { _, _ in session == nil ? DashboardPages.closed() : DashboardPages.login() }
        open.post("login", use: login)
        open.post("logout", use: logout)
        let pages = router.group("dashboard").add(middleware: DashboardAuthMiddleware(session: session)).add(
            middleware: AuditMiddleware(log: audit, channel: .console, trustedProxies: trustedProxies))
        pages.get { request, context in
            let viewer = try context.requireOperator()
            // Owners and viewers see every app; admins and editors their own.
            let page = try await queries.appOverviews(
                in: viewer.role.isScopedToApps ? viewer.appIDs.sorted() : nil, afterID: try request.cursor(), limit: Self.pageSize)
            return DashboardPages.apps(page, mayCreate: viewer.may(.administer), nextCursor: page.count == Self.pageSize ? page.last?.app.id : nil)
        }
        pages.get("search", use: search)
        pages.get("apps/:id", use: appNotifications)
        pages.post("apps/:id/push-defaults", use: changePushDefaults)
        pages.get("apps/:id/notifications/:notification", use: notification)
        pages.post("apps/:id/notifications/:notification/requeue", use: requeueNotification)
        pages.post("apps/:id/notifications/:notification/cancel", use: cancelNotification)
        pages.get("notifications/:notification") { _, context in
            let id = try context.pathID("notification", what: "notification")
            guard let appID = try await queries.appID(notificationID: id), try context.requireOperator().sees(appID: appID) else {
                throw ConsoleRefusal.notFound("There is no notification \(id).")
            }
            return Response(status: .seeOther, headers: [.location: "/dashboard/apps/\(appID)/notifications/\(id)"])
        }
        pages.get("apps/:id/compose", use: composePage)
        pages.post("apps/:id/compose", use: compose)
        pages.get("apps/new", use: newAppPage)
        pages.post("apps", use: createApp)
        pages.get("apps/:id/settings", use: settingsPage)
        pages.post("apps/:id/settings", use: changeApp)
        pages.post("apps/:id/credentials/rotate", use: rotateCredentials)
        pages.post("apps/:id/credentials/revoke", use: revokeCredential)
        pages.post("apps/:id/gateways/:provider", use: changeGateway)
        pages.post("apps/:id/webhooks", use: changeWebhooks)
        pages.get("apps/:id/webhooks/:webhook", use: webhookBatchesPage)
        pages.get("apps/:id/trends", use: trendsPage)
        pages.get("apps/:id/devices", use: appDevices)
        pages.get("apps/:id/devices/:device", use: device)
        pages.get("apps/:id/people", use: peoplePage)
        pages.post("apps/:id/people/export", use: exportPerson)
        pages.post("apps/:id/people/erase", use: erasePerson)
        pages.get("queue", use: queuePage)
        pages.post("queue/requeue", use: requeue)
        pages.get("operators", use: operatorsPage)
        pages.post("operators", use: addOperator)
        pages.post("operators/:operator", use: changeOperator)
        pages.get("audit", use: auditPage)
        pages.get("keys", use: keysPage)
        pages.post("keys", use: createKey)
        pages.post("keys/revoke", use: revokeKey)
        pages.get("audit.jsonl", use: auditExport)
    }

    /// A state-changing request's form, when it carries this session's CSRF token.
    func form(of request: Request, _ consequence: String) async throws -> [String: String] {
        try await formWithFiles(of: request, consequence).fields
    }

    /// The same, with the files a multipart form uploaded, of up to `limit` bytes in all.
    func formWithFiles(of request: Request, _ consequence: String, limit: Int = FormBody.limit) async throws -> FormBody {
        let cookie = request.cookies[DashboardSession.cookieName]?.value ?? ""
        var request = request
        let form = try await FormBody.read(&request, limit: limit)
        guard let session, let token = form.fields["csrf"], session.isValidCSRF(token, session: cookie) else {
            throw ConsoleRefusal.staleForm(consequence)
        }
        return form
    }

    func csrf(_ request: Request) -> String {
        session?.csrfToken(session: request.cookies[DashboardSession.cookieName]?.value ?? "") ?? ""
    }

    /// The app in the path, when the operator may do `action` to it. An app they may not even see
    /// is answered as missing, so the console does not tell who has which apps.
    func app(_ context: NotifiableRequestContext, _ action: (Int64) -> ConsoleAction, _ what: String) async throws -> App {
        try await app(id: Int64(context.parameters.get("id") ?? ""), context, action, what)
    }

    /// The same for an app named elsewhere than the path (a form's field).
    func app(id: Int64?, _ context: NotifiableRequestContext, _ action: (Int64) -> ConsoleAction, _ what: String) async throws -> App {
        let viewer = try context.requireOperator()
        guard let id, id > 0, viewer.sees(appID: id), let app = try await apps.app(id: id) else {
            throw ConsoleRefusal.notFound("There is no such app.")
        }
        guard viewer.may(action(id)) else { throw ConsoleRefusal.forbidden(viewer, what, needs: Self.whoMay(action(id))) }
        return app
    }

    /// Refuses a service-wide action the operator may not take.
    func require(_ action: ConsoleAction, _ context: NotifiableRequestContext, _ what: String) throws {
        let viewer = try context.requireOperator()
        guard viewer.may(action) else { throw ConsoleRefusal.forbidden(viewer, what, needs: Self.whoMay(action)) }
    }

    static func whoMay(_ action: ConsoleAction) -> String {
        switch action {
        case .view: return "Ask an owner to give you this app."
        case .send: return "Editors and admins of this app, and owners, may; ask an owner."
        case .manage: return "Admins of this app and owners may; ask an owner."
        case .administer: return "Only owners may."
        case .viewService: return "Owners and viewers may."
        }
    }
}

extension NotifiableRequestContext {
    /// The console's signed-in operator; only routes behind the session middleware may ask.
    func requireOperator() throws -> ConsoleOperator {
        guard let consoleOperator else { throw ConsoleRefusal(status: .unauthorized, message: "Sign in first.") }
        return consoleOperator
    }
}

/// A form as the dashboard's forms send it: `application/x-www-form-urlencoded`, or
/// `multipart/form-data` where a form uploads a file (a `.p8`, a service account, rich content),
/// whose text then stands under the file field's name too. A field sent several times (a
/// multiple select) keeps its values joined by commas.
struct FormBody {
    static let limit = 64 * 1024

    var fields: [String: String]
    /// The files uploaded, by field name: their bytes and media type.
    var files: [String: MultipartForm.Part] = [:]

    static func read(_ request: inout Request, limit: Int = Self.limit) async throws -> FormBody {
        let buffer = try await request.collectBody(upTo: limit)
        if let boundary = MultipartForm.boundary(of: request.headers[.contentType]) {
            guard let parts = MultipartForm.parse(Array(buffer.readableBytesView), boundary: boundary) else {
                throw ConsoleRefusal.invalid("The form's upload could not be read; send it again from the page.")
            }
            return FormBody(fields: parts.mapValues(\.text), files: parts.filter { $0.value.filename != nil })
        }
        var fields: [String: String] = [:]
        for pair in String(buffer: buffer).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? "" }
            guard let name = parts.first, !name.isEmpty else { continue }
            let value = parts.count > 1 ? parts[1] : ""
            fields[name] = fields[name].map { "\($0),\(value)" } ?? value
        }
        return FormBody(fields: fields)
    }
}
