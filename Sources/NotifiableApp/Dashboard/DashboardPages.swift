import Foundation
import Hummingbird
import NotifiableCore
import NotifiableStore

/// The dashboard's pages, rendered from what the stores answered. Pure: no I/O here.
enum DashboardPages {
    static func closed() -> Response {
        HTML.page("Dashboard closed", signedIn: false, "<p>Start the server with <code>NOTIFIABLE_ADMIN_TOKEN</code> set to sign in.</p>", status: .forbidden)
    }

    static func login(error: String? = nil) -> Response {
        let problem = error.map { "<p class=\"bad\">\(HTML.escape($0))</p>" } ?? ""
        return HTML.page(
            "Sign in", signedIn: false,
            """
            <form class="login" method="post" action="/dashboard/login">\(problem)
            <p><label>Name<br><input type="text" name="name" autocomplete="username" autofocus></label></p>
            <p><label>Password<br><input type="password" name="password" autocomplete="current-password" required></label></p>
            <p><button>Sign in</button></p>
            <p class="muted">Operators are added by an owner, or with <code>notifiable operators add</code>. With no name, the password
            is the server's <code>NOTIFIABLE_ADMIN_TOKEN</code> (an owner's powers, for the first sign-in).</p></form>
            """, status: error == nil ? .ok : .unauthorized)
    }

    static func apps(_ overviews: [AppOverview], mayCreate: Bool, nextCursor: Int64?) -> Response {
        let rows = overviews.map { overview -> [String] in
            let app = overview.app
            return [
                HTML.link("/dashboard/apps/\(app.id)", "\(app.name) (\(app.id))"),
                app.deliveryMode == .sandbox ? "<span class=\"warn\">sandbox</span>" : "live",
            ] + Provider.allCases.map { "<span class=\"num\">\(overview.devices[$0])</span>" } + [
                "<span class=\"num\">\(overview.devices.invalidated)</span>", "<span class=\"num\">\(overview.newLastDay)</span>",
            ] + Provider.allCases.map { gateway(overview.gateway($0), sandbox: app.deliveryMode == .sandbox) }
        }
        let create = mayCreate ? "<p>\(HTML.link("/dashboard/apps/new", "Create an app"))</p>" : ""
        return HTML.page(
            "Apps",
            create
                + HTML.table(
                    ["App", "Mode"] + Provider.allCases.map(\.devicesHeading)
                        + ["Invalidated", "New in 24 h"] + Provider.allCases.map(\.displayName), rows,
                    empty: "No apps yet: create one with `notifiable apps create` or POST /admin/apps."
                ) + (nextCursor.map { "<p class=\"pager\">" + HTML.link("/dashboard?cursor=\($0)", "More apps →") + "</p>" } ?? ""))
    }

    private static func gateway(_ state: GatewayState, sandbox: Bool) -> String {
        if sandbox { return "<span class=\"warn\">sandbox</span>" }
        switch state {
        case .notConfigured: return "<span class=\"muted\">not set</span>"
        case .ok: return "<span class=\"ok\">ok</span>"
        case .misconfigured(let reason): return "<span class=\"bad\">misconfigured: \(HTML.escape(reason))</span>"
        }
    }

    static func notifications(
        app: App, _ items: [(StoredNotification, NotificationCounters)], nextCursor: Int64?, csrf: String, notice: String?,
        mayManage: Bool, maySend: Bool
    ) -> Response {
        let rows = items.map { notification, counters -> [String] in
            let text = notification.content.text
            return [
                HTML.link("/dashboard/apps/\(app.id)/notifications/\(notification.id)", "#\(notification.id)"),
                HTML.escape(text.title ?? text.message ?? "(no text)"),
                HTML.escape(audience(notification.targeting)),
                HTML.time(notification.createdAt),
                "<span class=\"num\">\(counters.targeted)</span>",
                bar(counters),
                HTML.percent(counters.delivered, of: counters.sent), HTML.percent(counters.opened, of: counters.sent),
            ]
        }
        let more = nextCursor.map { "<p class=\"pager\">" + HTML.link("/dashboard/apps/\(app.id)?cursor=\($0)", "Older notifications →") + "</p>" } ?? ""
        return HTML.page(
            "\(app.name): notifications",
            (notice.map { "<p class=\"ok\">\(HTML.escape($0))</p>" } ?? "") + appMenu(app, maySend: maySend, mayManage: mayManage)
                + HTML.table(
                    ["", "Title", "Audience", "Created", "Targeted", "Outcome", "Delivered", "Opened"], rows, empty: "No notifications yet."
                ) + more + (mayManage ? pushDefaultsForm(app, csrf: csrf) : ""))
    }

    /// The links from an app's notifications to its other pages.
    static func appMenu(_ app: App, maySend: Bool, mayManage: Bool) -> String {
        var links = [
            HTML.link("/dashboard/apps/\(app.id)/devices", "Devices"), HTML.link("/dashboard/apps/\(app.id)/trends", "Trends"),
        ]
        if maySend { links.insert(HTML.link("/dashboard/apps/\(app.id)/compose", "Compose a notification"), at: 0) }
        if mayManage {
            links.append(HTML.link("/dashboard/apps/\(app.id)/settings", "Settings"))
            links.append(HTML.link("/dashboard/apps/\(app.id)/people", "A person's data"))
        }
        return "<p class=\"menu\">" + links.joined(separator: " · ") + "</p>"
    }

    /// What the app's notifications get when they leave it unsaid, and the form that changes it.
    static func pushDefaultsForm(_ app: App, csrf: String) -> String {
        let defaults = app.pushDefaults
        func option(_ style: AndroidStyle, _ label: String) -> String {
            "<option value=\"\(style.rawValue)\"\(defaults.androidStyle == style ? " selected" : "")>\(label)</option>"
        }
        func checkbox(_ name: String, _ on: Bool, _ label: String) -> String {
            "<p><label><input type=\"checkbox\" name=\"\(name)\"\(on ? " checked" : "")> \(label)</label></p>"
        }
        return """
            <h2>Push defaults</h2>
            <form method="post" action="/dashboard/apps/\(app.id)/push-defaults"><input type="hidden" name="csrf" value="\(HTML.escape(csrf))">
            <p><label>Android style <select name="android_style">\(option(.data, "data: the app builds the notification and reports receipt (Notifiable SDK)"))\(
                option(.notification, "notification: Android draws it while the app is in the background"))</select></label></p>
            <p><label>Default time to live (seconds) <input type="number" name="default_ttl_seconds" min="\(PushDefaults.timeToLiveRange.lowerBound)" \
            max="\(PushDefaults.timeToLiveRange.upperBound)" value="\(defaults.timeToLiveSeconds)" required></label></p>
            <p><label>Default Android channel (empty: the app's manifest default) <input type="text" name="default_android_channel_id" \
            maxlength="255" value="\(HTML.escape(defaults.androidChannelID ?? ""))"></label></p>
            \(checkbox("default_mutable_content", defaults.mutableContent, "mutable-content on alerts (a notification service extension reports receipt)"))
            \(checkbox("default_content_available", defaults.contentAvailable, "content-available (the app's background handler reports receipt)"))
            <p><button>Save push defaults</button></p></form>
            """
    }

    static func bar(_ counters: NotificationCounters) -> String {
        HTML.stackedBar([
            ("pending", counters.pending, "pending"), ("sent, not yet reported", counters.sent - counters.delivered, "sent"),
            ("delivered, unopened", counters.delivered - counters.opened, "delivered"), ("opened", counters.opened, "opened"),
            ("retrying", counters.retrying, "retrying"), ("failed", counters.failed, "failed"), ("dead", counters.dead, "dead"),
            ("cancelled", counters.cancelled, "cancelled"),
        ])
    }

    static func audience(_ targeting: Targeting) -> String {
        if targeting.all { return "everyone" }
        var parts: [String] = []
        if !targeting.userAliases.isEmpty {
            parts.append(
                "users " + targeting.userAliases.prefix(3).joined(separator: ", ")
                    + (targeting.userAliases.count > 3 ? " +\(targeting.userAliases.count - 3)" : ""))
        }
        if !targeting.deviceIDs.isEmpty { parts.append("\(targeting.deviceIDs.count) devices") }
        if !targeting.filters.isEmpty { parts.append("\(targeting.filters.count) filters") }
        if let expression = targeting.tagExpression { parts.append("tags " + expression.source) }
        if let near = targeting.near {
            parts.append("within \(near.radiusMeters.formatted(.number.precision(.fractionLength(0)))) m of \(near.latitude), \(near.longitude)")
        }
        return parts.joined(separator: "; ")
    }
}
