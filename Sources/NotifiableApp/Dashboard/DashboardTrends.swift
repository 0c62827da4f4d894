import Foundation
import Hummingbird
import NotifiableCore
import NotifiableStore

/// An app's last 7 days, hour by hour: pushes sent, failed, delivered and opened, and failures
/// by reason, drawn as SVG by the server (no script, nothing fetched: it works offline).
struct ConsoleTrends: ConsolePages {
    let console: ConsoleRequests
    let trends: TrendStore

    func addRoutes(to pages: RouterGroup<NotifiableRequestContext>) {
        pages.get("apps/:id/trends", use: trendsPage)
    }
}

extension ConsoleTrends {
    static let trendDays = 7

    @Sendable func trendsPage(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let app = try await app(context, ConsoleAction.view, "see this app")
        let now = Date()
        let since = now.addingTimeInterval(-Double(Self.trendDays) * 86_400)
        return DashboardPages.trends(
            app: app, try await trends.hourly(appID: app.id, since: since), reasons: try await trends.failureReasons(appID: app.id, since: since),
            since: since, now: now)
    }
}

extension DashboardPages {
    static func trends(app: App, _ hours: [HourlyTrend], reasons: [(reason: String, deliveries: Int64)], since: Date, now: Date) -> Response {
        let total = hours.reduce(into: (sent: Int64(0), failed: Int64(0), delivered: Int64(0), opened: Int64(0))) {
            $0.sent += $1.sent
            $0.failed += $1.failed + $1.dead
            $0.delivered += $1.delivered
            $0.opened += $1.opened
        }
        let cards = [("Sent", total.sent), ("Failed", total.failed), ("Delivered", total.delivered), ("Opened", total.opened)]
            .map { "<div class=\"card\">\($0.0)<b>\($0.1)</b></div>" }.joined()
        let series: [(String, String, KeyPath<HourlyTrend, Int64>)] = [
            ("Sent per hour", "#1a73e8", \.sent), ("Failed per hour", "#d93025", \.failed), ("Given up per hour", "#5f1a16", \.dead),
            ("Delivered per hour", "#34a853", \.delivered), ("Opened per hour", "#0d652d", \.opened),
        ]
        let charts = series.map { title, colour, path in
            "<h2>\(title)</h2>" + HourlyChart(since: since, now: now, values: hours.map { ($0.hour, $0[keyPath: path]) }, colour: colour, label: title).svg()
        }.joined()
        let reasonRows = reasons.map { [HTML.escape($0.reason), "<span class=\"num\">\($0.deliveries)</span>", HTML.percent($0.deliveries, of: total.failed)] }
        return HTML.page(
            "\(app.name): trends",
            """
            <p>\(HTML.link("/dashboard/apps/\(app.id)", "← \(app.name)")) · the last \(ConsoleTrends.trendDays) days, hour by hour (UTC)</p>
            <div class="cards">\(cards)<div class="card">Delivered of sent<b>\(HTML.percent(total.delivered, of: total.sent))</b></div>
            <div class="card">Opened of sent<b>\(HTML.percent(total.opened, of: total.sent))</b></div></div>
            <h2>Failures by reason</h2>\(HTML.table(["Reason", "Pushes", "Share"], reasonRows, empty: "No failures in these days."))
            \(charts)
            """)
    }
}

/// Bars per hour over a fixed span, drawn as inline SVG.
struct HourlyChart {
    let since: Date
    let now: Date
    let values: [(hour: Date, count: Int64)]
    let colour: String
    let label: String
    var width = 840.0
    var height = 120.0

    func svg() -> String {
        let start = floor(since.timeIntervalSince1970 / 3600) * 3600
        let slots = max(1, Int(ceil((now.timeIntervalSince1970 - start) / 3600)))
        let peak = max(1, values.map(\.count).max() ?? 0)
        let slot = width / Double(slots)
        let bars = values.compactMap { point -> String? in
            let index = floor((point.hour.timeIntervalSince1970 - start) / 3600)
            guard index >= 0, index < Double(slots), point.count > 0 else { return nil }
            let barHeight = max(1, Double(point.count) / Double(peak) * (height - 22))
            return "<rect x=\"\(f(index * slot))\" y=\"\(f(height - 16 - barHeight))\" width=\"\(f(max(1, slot - 0.5)))\" height=\"\(f(barHeight))\" "
                + "fill=\"\(colour)\"><title>\(HTML.time(point.hour)): \(point.count)</title></rect>"
        }.joined()
        // A tick at each midnight (UTC).
        let ticks = stride(from: ceil(start / 86_400) * 86_400, to: now.timeIntervalSince1970, by: 86_400).map { midnight -> String in
            let x = (midnight - start) / 3600 * slot
            let day = Date(timeIntervalSince1970: midnight).formatted(.iso8601.year().month().day())
            return "<line x1=\"\(f(x))\" x2=\"\(f(x))\" y1=\"0\" y2=\"\(f(height - 14))\" stroke=\"#dde\"/>"
                + "<text x=\"\(f(x + 2))\" y=\"\(f(height - 3))\" font-size=\"10\" fill=\"#556\">\(day)</text>"
        }.joined()
        return """
            <svg role="img" aria-label="\(HTML.escape(label))" width="\(f(width))" height="\(f(height))" viewBox="0 0 \(f(width)) \(f(height))" \
            xmlns="http://www.w3.org/2000/svg"><rect width="100%" height="100%" fill="#fff"/>\(ticks)\(bars)
            <text x="\(f(width - 2))" y="11" font-size="10" fill="#556" text-anchor="end">peak \(values.isEmpty ? 0 : peak)/h</text></svg>
            """
    }

    private func f(_ value: Double) -> String { String(format: "%.1f", value) }
}
