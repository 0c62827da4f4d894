import Foundation
import Hummingbird
import NotifiableCore
import NotifiableStore

/// Finding things: the search box, and an app's devices with filters and pages.
struct ConsoleFind: ConsolePages {
    let console: ConsoleRequests
    let devices: DeviceStore
    let finder: DeviceFinder
    let notifications: NotificationStore

    func addRoutes(to pages: RouterGroup<NotifiableRequestContext>) {
        pages.get("search", use: search)
        pages.get("apps/:id/devices", use: appDevices)
    }
}

extension ConsoleFind {
    @Sendable func search(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let viewer = try context.requireOperator()
        let text = request.uri.queryParameters["q"].map(String.init) ?? ""
        // Owners and viewers search every app; admins and editors their own.
        let scope: [Int64]? = viewer.role.isScopedToApps ? viewer.appIDs.sorted() : nil
        let results = try await finder.search(text, appIDs: scope)
        if results.devices.isEmpty, results.notifications.count == 1, let only = results.notifications.first {
            return Response(status: .seeOther, headers: [.location: "/dashboard/apps/\(only.appID)/notifications/\(only.id)"])
        }
        return DashboardPages.search(text, results)
    }

    @Sendable func appDevices(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let app = try await app(context, ConsoleAction.view, "see this app")
        let query = request.uri.queryParameters
        func value(_ name: String) -> String? {
            query[Substring(name)].map { String($0).trimmingCharacters(in: .whitespaces) }.flatMap { $0.isEmpty ? nil : $0 }
        }
        let filter = DeviceListFilter(
            provider: value("provider").flatMap(Provider.init(rawValue:)), language: value("language")?.lowercased(),
            country: value("country")?.lowercased(), tag: value("tag"),
            invalidated: value("invalidated").flatMap { $0 == "yes" ? true : $0 == "no" ? false : nil })
        let page = try await finder.devices(appID: app.id, filter: filter, beforeID: try request.cursor(), limit: Self.pageSize)
        return DashboardPages.devices(app: app, filter: filter, page, nextCursor: page.count == Self.pageSize ? page.last?.id : nil)
    }
}

extension DashboardPages {
    static func search(_ text: String, _ results: SearchResults) -> Response {
        let devices = deviceRows(results.devices)
        let notifications = results.notifications.map {
            [HTML.link("/dashboard/apps/\($0.appID)/notifications/\($0.id)", "Notification #\($0.id)"), "app \($0.appID)"]
        }
        return HTML.page(
            "Search",
            """
            <form class="panel" method="get" action="/dashboard/search"><label>User alias, push token (its start), device id or notification id
            <input type="search" name="q" value="\(HTML.escape(text))" autofocus></label><button>Search</button></form>
            \(notifications.isEmpty ? "" : "<h2>Notifications</h2>" + HTML.table(["Notification", "App"], notifications))
            <h2>Devices</h2>
            \(HTML.table(deviceHeaders, devices, empty: text.isEmpty ? "Type what you are looking for." : "No device matches \(text)."))
            """)
    }

    static let deviceHeaders = ["Device", "App", "User", "Provider", "Token", "Locale", "Tags", "State"]

    static func deviceRows(_ devices: [Device]) -> [[String]] {
        devices.map { device in
            [
                HTML.link("/dashboard/apps/\(device.appID)/devices/\(device.id)", "#\(device.id)"),
                HTML.link("/dashboard/apps/\(device.appID)", "app \(device.appID)"),
                HTML.escape(device.userAlias ?? "anonymous"), device.provider.rawValue,
                "<code>\(HTML.escape(String(device.token.prefix(16))))…</code>", HTML.escape(locale(device)),
                HTML.escape(device.tags.prefix(5).joined(separator: ", ") + (device.tags.count > 5 ? " +\(device.tags.count - 5)" : "")),
                device.unregisteredAt != nil
                    ? "<span class=\"muted\">unregistered</span>"
                    : device.invalidatedAt != nil ? "<span class=\"bad\">invalidated</span>" : "<span class=\"ok\">reachable</span>",
            ]
        }
    }

    static func locale(_ device: Device) -> String {
        [device.language, device.country?.uppercased()].compactMap { $0 }.joined(separator: "_")
    }

    static func devices(app: App, filter: DeviceListFilter, _ devices: [Device], nextCursor: Int64?) -> Response {
        func option(_ value: String, _ label: String, _ current: String?) -> String {
            "<option value=\"\(HTML.escape(value))\"\(current == value ? " selected" : "")>\(HTML.escape(label))</option>"
        }
        let invalidated = filter.invalidated.map { $0 ? "yes" : "no" } ?? ""
        var query = [
            ("provider", filter.provider?.rawValue), ("language", filter.language), ("country", filter.country), ("tag", filter.tag),
            ("invalidated", filter.invalidated.map { $0 ? "yes" : "no" }),
        ].compactMap { name, value in value.map { "\(name)=\(HTML.queryEscape($0))" } }
        let more = nextCursor.map { cursor in
            query.append("cursor=\(cursor)")
            return "<p class=\"pager\">" + HTML.link("/dashboard/apps/\(app.id)/devices?" + query.joined(separator: "&"), "Older devices →") + "</p>"
        }
        return HTML.page(
            "\(app.name): devices",
            """
            <p>\(HTML.link("/dashboard/apps/\(app.id)", "← \(app.name)"))</p>
            <form class="panel" method="get" action="/dashboard/apps/\(app.id)/devices">
            <label>Provider <select name="provider">\(option("", "any", filter.provider?.rawValue ?? ""))\(Provider.allCases.map { option($0.rawValue, "\($0.displayName) (\($0.reaches))", filter.provider?.rawValue) }.joined())</select></label>
            <label>Language <input type="text" name="language" size="4" value="\(HTML.escape(filter.language ?? ""))" placeholder="en"></label>
            <label>Country <input type="text" name="country" size="4" value="\(HTML.escape(filter.country ?? ""))" placeholder="gb"></label>
            <label>Tag <input type="text" name="tag" value="\(HTML.escape(filter.tag ?? ""))"></label>
            <label>Invalidated <select name="invalidated">\(option("", "either", invalidated))\(option("no", "reachable only", invalidated))\(option("yes", "invalidated only", invalidated))</select></label>
            <button>Filter</button></form>
            \(HTML.table(deviceHeaders, deviceRows(devices), empty: "No device matches."))
            \(more ?? "")
            """)
    }
}
