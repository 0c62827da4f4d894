import Foundation
import Hummingbird
import NotifiableCore
import NotifiableStore

/// The operators' dashboard under `/dashboard`: server-rendered pages, no script, signed in
/// with the admin token.
struct DashboardController {
    let session: DashboardSession?
    let adminToken: String?
    let throttle: SignInThrottle
    let trustedProxies: Set<String>
    let apps: AppStore
    let devices: DeviceStore
    let notifications: NotificationStore
    /// Re-queues dead deliveries (a write: the primary).
    let queue: QueueAdminStore
    /// The pages' reads, from the read pool when there is one (NOTIFIABLE_READ_DATABASE_URL).
    let queueReads: QueueAdminStore
    let queries: DashboardStore

    func addRoutes(to router: Router<NotifiableRequestContext>) {
        let open = router.group("dashboard")
        open.get("login") { _, _ in session == nil ? DashboardPages.closed() : DashboardPages.login() }
        open.post("login", use: login)
        open.post("logout") { request, context in
            // Ended here, not only forgotten by this browser: a copy of the cookie stops working too.
            if let session, let cookie = request.cookies[DashboardSession.cookieName]?.value { try await session.end(cookie) }
            var response = Response(status: .seeOther, headers: [.location: "/dashboard/login"])
            response.setCookie(
                Cookie(
                    name: DashboardSession.cookieName, value: "", maxAge: 0, path: "/dashboard", secure: origin(request, context).isHTTPS,
                    httpOnly: true, sameSite: .strict
                ))
            return response
        }
        let pages = router.group("dashboard").add(middleware: DashboardAuthMiddleware(session: session))
        pages.get { _, _ in DashboardPages.apps(try await queries.appOverviews()) }
        pages.get("apps/:id", use: appNotifications)
        pages.post("apps/:id/push-defaults", use: changePushDefaults)
        pages.get("apps/:id/notifications/:notification", use: notification)
        pages.get("notifications/:notification") { _, context in
            let id = try context.pathID("notification", what: "notification")
            guard let appID = try await queries.appID(notificationID: id) else { return notFound("There is no notification \(id).") }
            return Response(status: .seeOther, headers: [.location: "/dashboard/apps/\(appID)/notifications/\(id)"])
        }
        pages.get("apps/:id/devices/:device", use: device)
        pages.get("queue", use: queuePage)
        pages.post("queue/requeue", use: requeue)
    }

    @Sendable func login(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        guard let session, let adminToken else { return DashboardPages.closed() }
        let origin = origin(request, context)
        if let wait = throttle.retryAfter(origin.address) {
            var refused = DashboardPages.login(error: "Too many wrong tokens from here; try again in \(wait) s.")
            refused.status = .tooManyRequests
            refused.headers[.retryAfter] = String(wait)
            return refused
        }
        var request = request
        let form = try await FormBody.read(&request)
        guard let token = form["token"], APIAuth.constantTimeEquals(token, adminToken) else {
            throttle.failed(origin.address, logger: context.logger, what: "dashboard sign-in")
            return DashboardPages.login(error: "That is not the admin token.")
        }
        var response = Response(status: .seeOther, headers: [.location: "/dashboard"])
        response.setCookie(
            Cookie(
                name: DashboardSession.cookieName, value: try await session.issue(client: origin.address), maxAge: Int(DashboardSession.lifetime),
                path: "/dashboard", secure: origin.isHTTPS, httpOnly: true, sameSite: .strict
            ))
        return response
    }

    private func origin(_ request: Request, _ context: NotifiableRequestContext) -> ClientOrigin {
        ClientOrigin.of(request, context: context, trustedProxies: trustedProxies)
    }

    @Sendable func appNotifications(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        guard let app = try await app(context) else { return notFound("There is no such app.") }
        let limit = 50
        let page = try await notifications.list(appID: app.id, beforeID: try request.cursor(), limit: limit)
        let counters = try await notifications.counters(notificationIDs: page.map(\.id))
        return DashboardPages.notifications(
            app: app, page.map { ($0, counters[$0.id] ?? NotificationCounters()) }, nextCursor: page.count == limit ? page.last?.id : nil,
            csrf: csrf(request), notice: request.uri.queryParameters["saved"] != nil ? "Push defaults saved." : nil
        )
    }

    /// The push defaults form: Android style, default time to live, iOS flags.
    @Sendable func changePushDefaults(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        guard let form = try await formOfThisSession(request) else { return Self.staleForm("nothing was changed") }
        guard let app = try await app(context) else { return notFound("There is no such app.") }
        guard let style = form["android_style"].flatMap(AndroidStyle.init(rawValue:)),
            let ttl = form["default_ttl_seconds"].flatMap({ Int64($0) }), PushDefaults.timeToLiveRange.contains(ttl)
        else {
            return HTML.page(
                "Refused",
                "<p class=\"bad\">The Android style must be data or notification, and the time to live "
                    + "\(PushDefaults.timeToLiveRange.lowerBound) to \(PushDefaults.timeToLiveRange.upperBound) seconds; nothing was changed.</p>",
                status: .unprocessableContent
            )
        }
        // An unticked checkbox is not sent at all.
        _ = try await apps.update(
            id: app.id,
            AppStore.Changes(
                androidStyle: style, timeToLiveSeconds: ttl, mutableContent: form["default_mutable_content"] == "on",
                contentAvailable: form["default_content_available"] == "on"
            ))
        return Response(status: .seeOther, headers: [.location: "/dashboard/apps/\(app.id)?saved=1"])
    }

    /// A state-changing request's form, when it carries this session's CSRF token; nil otherwise.
    private func formOfThisSession(_ request: Request) async throws -> [String: String]? {
        let cookie = request.cookies[DashboardSession.cookieName]?.value ?? ""
        var request = request
        let form = try await FormBody.read(&request)
        guard let session, let token = form["csrf"], session.isValidCSRF(token, session: cookie) else { return nil }
        return form
    }

    private static func staleForm(_ consequence: String) -> Response {
        HTML.page("Refused", "<p class=\"bad\">The form was stale or not sent from this dashboard; \(consequence).</p>", status: .forbidden)
    }

    private func csrf(_ request: Request) -> String {
        session?.csrfToken(session: request.cookies[DashboardSession.cookieName]?.value ?? "") ?? ""
    }

    @Sendable func notification(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        guard let app = try await app(context) else { return notFound("There is no such app.") }
        let id = try context.pathID("notification", what: "notification")
        guard let notification = try await notifications.notification(id: id, appID: app.id) else {
            return notFound("App \(app.id) has no notification \(id).")
        }
        let states = DeliveryState.names
        let state = request.uri.queryParameters["state"].map(String.init).flatMap { states.contains($0) ? $0 : nil }
        let limit = 100
        let deliveries = try await notifications.deliveries(notificationID: id, state: state, afterID: try request.cursor(), limit: limit)
        return DashboardNotificationPage(
            app: app, notification: notification, counters: try await notifications.counters(notificationID: id),
            perMinute: try await queries.sendsPerMinute(notificationID: id), reasons: try await queries.failureReasons(notificationID: id),
            deliveries: deliveries, state: state, nextCursor: deliveries.count == limit ? deliveries.last?.id : nil
        ).response()
    }

    @Sendable func device(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        guard let app = try await app(context) else { return notFound("There is no such app.") }
        let id = try context.pathID("device", what: "device")
        guard let device = try await devices.device(id: id, appID: app.id) else { return notFound("App \(app.id) has no device \(id).") }
        return DashboardPages.device(
            app: app, device, history: try await queries.history(deviceID: id, appID: app.id),
            deliveries: try await queries.deliveries(deviceID: id, appID: app.id, limit: 100)
        )
    }

    @Sendable func queuePage(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        DashboardPages.queue(
            try await queueReads.stats(), dead: try await queueReads.dead(appID: nil, afterID: nil, limit: 100),
            replicaLagSeconds: try await queueReads.replicaLagSeconds(), csrf: csrf(request),
            requeued: request.uri.queryParameters["requeued"].flatMap { Int(String($0)) }
        )
    }

    @Sendable func requeue(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        guard try await formOfThisSession(request) != nil else { return Self.staleForm("nothing was re-queued") }
        let count = try await queue.requeueDead(appID: nil, ids: nil)
        return Response(status: .seeOther, headers: [.location: "/dashboard/queue?requeued=\(count)"])
    }

    private func app(_ context: NotifiableRequestContext) async throws -> App? {
        guard let id = Int64(context.parameters.get("id") ?? ""), id > 0 else { return nil }
        return try await apps.app(id: id)
    }

    private func notFound(_ message: String) -> Response {
        HTML.page("Not found", "<p>\(HTML.escape(message))</p><p>\(HTML.link("/dashboard", "Back to the apps"))</p>", status: .notFound)
    }
}

/// An `application/x-www-form-urlencoded` body, as the dashboard's forms send it.
enum FormBody {
    static func read(_ request: inout Request) async throws -> [String: String] {
        let buffer = try await request.collectBody(upTo: 16 * 1024)
        var fields: [String: String] = [:]
        for pair in String(buffer: buffer).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? "" }
            if let name = parts.first, !name.isEmpty { fields[name] = parts.count > 1 ? parts[1] : "" }
        }
        return fields
    }
}
