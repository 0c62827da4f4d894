import Foundation
import Hummingbird
import NotifiableCore
import NotifiableStore

/// One notification in depth: its text per locale, counters, sends per minute, failure reasons,
/// and its deliveries, filterable by state.
struct DashboardNotificationPage {
    let app: App
    let notification: StoredNotification
    let counters: NotificationCounters
    /// queued, scheduled, sending, completed, cancelled (as the API says it).
    let status: String
    let perMinute: [(minute: Date, count: Int64)]
    let reasons: [(state: String, reason: String, count: Int64)]
    let deliveries: [DeliveryRecord]
    let state: String?
    let nextCursor: Int64?
    let csrf: String
    let maySend: Bool
    let requeued: Int?
    /// The Live Activity whose pushes this notification carries, if it is one's.
    let activity: LiveActivityStore.Summary?

    /// While the notification is still on its way the page reloads itself, without script.
    var isLive: Bool { ["queued", "scheduled", "sending", "awaiting_content"].contains(status) }

    func response() -> Response {
        let content = notification.content
        var locales = [("default", content.text)]
        locales += content.localized.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        let texts = HTML.table(
            ["Locale", "Title", "Subtitle", "Message"],
            locales.map { locale, text in
                [HTML.escape(locale), HTML.escape(text.title ?? ""), HTML.escape(text.subtitle ?? ""), HTML.escape(text.message ?? "")]
            })
        let cards = [
            ("Targeted", counters.targeted), ("Sent", counters.sent), ("Delivered", counters.delivered), ("Opened", counters.opened),
            ("Retrying", counters.retrying), ("Failed", counters.failed), ("Dead", counters.dead), ("Pending", counters.pending),
            ("Cancelled", counters.cancelled),
        ]
        .map { "<div class=\"card\">\($0.0)<b>\($0.1)</b></div>" }.joined()
        let userStates =
            notification.userStates.map { states in
                "<h2>Users' states</h2><div class=\"cards\">"
                    + [("Users", states.targeted), ("Read", states.read), ("Dismissed", states.dismissed), ("Activated", states.activated)]
                    .map { "<div class=\"card\">\($0.0)<b>\($0.1)</b></div>" }.joined()
                    + "</div>"
            } ?? ""
        let reasonRows = reasons.map {
            ["<span class=\"\(HTML.escape($0.state))\">\(HTML.escape($0.state))</span>", HTML.escape($0.reason), "<span class=\"num\">\($0.count)</span>"]
        }
        let filters = (["all"] + DeliveryState.names).map { name in
            let href = "/dashboard/apps/\(app.id)/notifications/\(notification.id)" + (name == "all" ? "" : "?state=\(name)")
            return (state ?? "all") == name ? "<strong>\(name)</strong>" : HTML.link(href, name)
        }.joined(separator: " · ")
        let rows = deliveries.map { record -> [String] in
            [
                HTML.link("/dashboard/apps/\(app.id)/devices/\(record.deviceID)", "#\(record.deviceID)"),
                HTML.escape(record.userAlias ?? "–"), record.provider.rawValue,
                "<span class=\"\(record.state)\">\(record.state)</span>" + (record.kind == "push" ? "" : " (\(record.kind))"), "\(record.attempts)",
                HTML.escape(record.reason ?? ""),
                HTML.time(record.sentAt), HTML.time(record.deliveredAt), HTML.time(record.openedAt),
            ]
        }
        let more =
            nextCursor.map { cursor in
                "<p>"
                    + HTML.link(
                        "/dashboard/apps/\(app.id)/notifications/\(notification.id)?\(state.map { "state=\($0)&" } ?? "")cursor=\(cursor)", "Next deliveries →")
                    + "</p>"
            } ?? ""
        let payload = (try? String(decoding: JSONEncoder.pretty.encode(content), as: UTF8.self)) ?? ""
        let base = "/dashboard/apps/\(app.id)/notifications/\(notification.id)"
        func button(_ action: String, _ label: String) -> String {
            "<form class=\"inline\" method=\"post\" action=\"\(base)/\(action)\"><input type=\"hidden\" name=\"csrf\" value=\"\(HTML.escape(csrf))\"><button>\(label)</button></form>"
        }
        var actions: [String] = []
        if maySend, counters.dead > 0 { actions.append(button("requeue", "Re-queue this notification's \(counters.dead) dead deliveries")) }
        if maySend, isLive { actions.append(button("cancel", "Cancel what is not sent yet")) }
        let notice = requeued.map { "<p class=\"ok\">Re-queued \($0) deliveries.</p>" } ?? ""
        let liveActivity = activity.map(Self.activitySection) ?? ""
        return HTML.page(
            "Notification #\(notification.id)",
            """
            \(notice)<p>\(HTML.link("/dashboard/apps/\(app.id)", "← \(app.name)")) · created \(HTML.time(notification.createdAt)) · audience: \(HTML.escape(DashboardPages.audience(notification.targeting)))</p>
            <p>Status: <strong class="status" id="status">\(status)</strong>\(isLive ? " <span class=\"muted\">(this page refreshes every 2 s)</span>" : "")</p>
            <p>\(actions.joined(separator: " "))</p>
            <div class="cards">\(cards)</div>
            <p>\(DashboardPages.bar(counters))</p>
            \(userStates)\(liveActivity)
            <h2>Text per locale</h2>\(texts)
            <h2>Sends per minute</h2>\(SendsChart(points: perMinute).svg())
            <h2>Failure reasons</h2>\(HTML.table(["State", "Reason", "Deliveries"], reasonRows, empty: "No failures."))
            <h2>Deliveries</h2><p>\(filters)</p>
            \(HTML.table(["Device", "User", "Provider", "State", "Attempts", "Reason", "Sent", "Delivered", "Opened"], rows, empty: "No deliveries in this state."))
            \(more)
            <h2>Stored content</h2><pre>\(HTML.escape(payload))</pre>
            """, refreshSeconds: isLive ? 2 : nil)
    }
}

extension DashboardNotificationPage {
    /// A Live Activity's state, tokens, channel and broadcasts, above its pushes.
    static func activitySection(_ activity: LiveActivityStore.Summary) -> String {
        var facts = [
            "<strong>\(HTML.escape(activity.activityID))</strong>", HTML.escape(activity.state),
            "\(activity.tokens) token\(activity.tokens == 1 ? "" : "s") registered",
        ]
        if let channel = activity.channel {
            facts.append(
                "broadcast channel \(HTML.escape(channel.state.rawValue))" + (channel.channelID.map { " (<code>\(HTML.escape($0))</code>)" } ?? "")
                    + (channel.error.map { ": \(HTML.escape($0))" } ?? ""))
            let sent = activity.broadcasts.sorted { $0.key < $1.key }.map { "\($0.value) \(HTML.escape($0.key))" }
            facts.append("broadcasts: " + (sent.isEmpty ? "none yet" : sent.joined(separator: ", ")))
        }
        return "<h2>Live Activity</h2><p id=\"live-activity\">" + facts.joined(separator: " · ") + "</p>"
    }
}

extension JSONEncoder {
    static var pretty: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}

/// A small bar chart of sends per minute, drawn as inline SVG by the server.
struct SendsChart {
    let points: [(minute: Date, count: Int64)]
    var width = 720.0
    var height = 140.0

    func svg() -> String {
        guard let first = points.first?.minute, let last = points.last?.minute else {
            return "<p class=\"muted\">Nothing sent yet.</p>"
        }
        let minutes = max(1, Int(last.timeIntervalSince(first) / 60) + 1)
        let peak = max(1, points.map(\.count).max() ?? 1)
        let slot = width / Double(minutes)
        let bars = points.map { point -> String in
            let index = Double(Int(point.minute.timeIntervalSince(first) / 60))
            let barHeight = Double(point.count) / Double(peak) * (height - 20)
            return
                "<rect x=\"\(fmt(index * slot + 1))\" y=\"\(fmt(height - 16 - barHeight))\" width=\"\(fmt(max(1, slot - 2)))\" height=\"\(fmt(barHeight))\" fill=\"#1a73e8\"><title>\(HTML.time(point.minute)): \(point.count)</title></rect>"
        }.joined()
        return """
            <svg role="img" aria-label="sends per minute" width="\(fmt(width))" height="\(fmt(height))" viewBox="0 0 \(fmt(width)) \(fmt(height))" xmlns="http://www.w3.org/2000/svg">
            <rect width="100%" height="100%" fill="#fff"/>\(bars)
            <text x="2" y="\(fmt(height - 3))" font-size="11" fill="#556">\(HTML.time(first))</text>
            <text x="\(fmt(width - 2))" y="\(fmt(height - 3))" font-size="11" fill="#556" text-anchor="end">peak \(peak)/min</text></svg>
            """
    }

    private func fmt(_ value: Double) -> String { String(format: "%.1f", value) }
}
