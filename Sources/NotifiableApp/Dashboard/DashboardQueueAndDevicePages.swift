import Foundation
import Hummingbird
import NotifiableCore
import NotifiableStore

extension DashboardPages {
    static func queue(
        _ depth: QueueDepth, lastDay: [HourlyTrend], dead: [DeliveryRecord], nextCursor: Int64?, csrf: String, requeued: Int?, mayRequeue: Bool
    ) -> Response {
        func card(_ label: String, _ value: String) -> String { "<div class=\"card\">\(label)<b>\(value)</b></div>" }
        let waiting = [
            ("available", depth.available), ("running", depth.running), ("retrying", depth.retrying), ("dead", depth.dead),
        ].map { card($0.0, "\($0.1)") }.joined()
        let day = lastDay.reduce(into: (sent: Int64(0), failed: Int64(0), dead: Int64(0), delivered: Int64(0), opened: Int64(0))) {
            $0.sent += $1.sent
            $0.failed += $1.failed
            $0.dead += $1.dead
            $0.delivered += $1.delivered
            $0.opened += $1.opened
        }
        let outcomes = [("sent", day.sent), ("failed", day.failed), ("gave up", day.dead), ("delivered", day.delivered), ("opened", day.opened)]
            .map { card($0.0, "\($0.1)") }.joined()
        let misconfigured = depth.misconfigured.values.reduce(0, +)
        let rows = dead.map { record -> [String] in
            [
                "#\(record.id)", HTML.link("/dashboard/notifications/\(record.notificationID)", "#\(record.notificationID)"),
                "#\(record.deviceID)", record.provider.rawValue, "\(record.attempts)", HTML.escape(record.reason ?? ""), HTML.time(record.deadAt),
            ]
        }
        let notice = requeued.map { "<p class=\"ok\">Re-queued \($0) deliveries.</p>" } ?? ""
        return HTML.page(
            "Queue",
            """
            \(notice)<h2>Waiting</h2><div class="cards">\(waiting)
            \(card("Oldest ready", String(format: "%.1f s", depth.oldestReadyAgeSeconds)))\(card("Fanning out", "\(depth.fanningOut)"))
            \(card("Apps misconfigured", "\(misconfigured)"))\(card("Read replica lag", String(format: "%.1f s", depth.replicaLagSeconds)))</div>
            <h2>Pushes in the last 24 hours</h2><div class="cards">\(outcomes)</div>
            <h2>Dead deliveries</h2>
            \(mayRequeue ? """
            <form method="post" action="/dashboard/queue/requeue"><input type="hidden" name="csrf" value="\(HTML.escape(csrf))">
            <button \(dead.isEmpty ? "disabled" : "")>Re-queue every app's dead deliveries</button></form>
            """ : "")
            <p class="muted">One app's or one notification's dead deliveries are re-queued from its own page.</p>
            \(HTML.table(["Delivery", "Notification", "Device", "Provider", "Attempts", "Reason", "Dead since"], rows, empty: "No dead deliveries."))
            \(nextCursor.map { "<p class=\"pager\">" + HTML.link("/dashboard/queue?cursor=\($0)", "More dead deliveries →") + "</p>" } ?? "")
            """)
    }

    static func device(
        app: App, _ device: Device, location: (latitude: Double, longitude: Double)?, others: [Device],
        history: [(event: String, detail: String?, at: Date)], deliveries: [DeliveryRecord], nextCursor: Int64?
    ) -> Response {
        let facts: [[String]] = [
            ["Provider", device.provider.rawValue], ["Token", "<code>\(HTML.escape(device.token))</code>"],
            ["User", HTML.escape(device.userAlias ?? "anonymous")], ["Name", HTML.escape(device.name ?? "–")],
            ["Locale", HTML.escape(locale(device))],
            ["Tags", device.tags.isEmpty ? "<span class=\"muted\">none</span>" : device.tags.map { "<code>\(HTML.escape($0))</code>" }.joined(separator: " ")],
            ["Location", location.map { String(format: "%.5f, %.5f", $0.latitude, $0.longitude) } ?? "<span class=\"muted\">not reported</span>"],
            ["Created", HTML.time(device.createdAt)], ["Last registered", HTML.time(device.registeredAt)], ["Updated", HTML.time(device.updatedAt)],
            ["Invalidated", device.invalidatedAt.map { "<span class=\"bad\">\(HTML.time($0))</span>" } ?? "<span class=\"ok\">no</span>"],
            ["Unregistered", HTML.time(device.unregisteredAt)],
        ]
        func properties(_ values: [String: JSONValue]) -> String {
            HTML.table(
                ["Property", "Value"], values.sorted { $0.key < $1.key }.map { [HTML.escape($0.key), "<code>\(HTML.escape($0.value.jsonText()))</code>"] },
                empty: "None.")
        }
        let rows = deliveries.map { record -> [String] in
            [
                HTML.link("/dashboard/apps/\(app.id)/notifications/\(record.notificationID)", "#\(record.notificationID)"),
                "<span class=\"\(record.state)\">\(record.state)</span>", "\(record.attempts)", HTML.escape(record.reason ?? ""),
                HTML.time(record.sentAt), HTML.time(record.deliveredAt), HTML.time(record.openedAt),
            ]
        }
        return HTML.page(
            "Device #\(device.id)",
            """
            <p>\(HTML.link("/dashboard/apps/\(app.id)", "← \(app.name)"))</p>
            \(HTML.table(["Fact", "Value"], facts))
            <h2>Custom properties</h2>\(properties(device.customProperties))
            <h2>Platform properties</h2>\(properties(device.platformProperties))
            <h2>The user's other devices</h2>
            \(HTML.table(deviceHeaders, deviceRows(others), empty: device.userAlias == nil ? "The device is anonymous." : "None."))
            <h2>History</h2>\(history.count == DashboardStore.historyLength ? "<p class=\"muted\">The latest \(DashboardStore.historyLength) events.</p>" : "")
            \(HTML.table(["When", "What", "Detail"], history.map { [HTML.time($0.at), HTML.escape($0.event.replacingOccurrences(of: "_", with: " ")), HTML.escape($0.detail ?? "")] }))
            <h2>Deliveries</h2>
            \(HTML.table(["Notification", "State", "Attempts", "Reason", "Sent", "Delivered", "Opened"], rows, empty: "Nothing sent to this device yet."))
            \(nextCursor.map { "<p class=\"pager\">" + HTML.link("/dashboard/apps/\(app.id)/devices/\(device.id)?cursor=\($0)", "Older deliveries →") + "</p>" } ?? "")
            """)
    }
}
