import Foundation
import Hummingbird
import NotifiableCore

/// Building the dashboard's pages: escaped text, a shared layout, and small pieces (tables,
/// bars, numbers) that every page uses. Plain HTML and CSS; no script.
enum HTML {
    static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.count)
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// Who the page is drawn for: set by the session middleware for the request's task, so the
    /// navigation offers only what the operator may open.
    @TaskLocal static var viewer: ConsoleOperator?

    /// A whole page, with the navigation when signed in.
    static func page(_ title: String, signedIn: Bool = true, _ body: String, status: HTTPResponse.Status = .ok, refreshSeconds: Int? = nil) -> Response {
        let navigation = signedIn ? self.navigation(viewer) : ""
        let refresh = refreshSeconds.map { "<meta http-equiv=\"refresh\" content=\"\($0)\">" } ?? ""
        let html = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            \(refresh)<title>\(escape(title)) · NotifiableServer</title><style>\(style)</style></head>
            <body><header><strong>NotifiableServer</strong>\(navigation)</header><main><h1>\(escape(title))</h1>
            \(body)
            </main></body></html>
            """
        return Response(
            status: status,
            headers: [
                .contentType: "text/html; charset=utf-8", .cacheControl: "no-store", .init("X-Frame-Options")!: "DENY",
                .init("Content-Security-Policy")!: "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'",
            ],
            body: .init(byteBuffer: ByteBuffer(string: html))
        )
    }

    private static func navigation(_ viewer: ConsoleOperator?) -> String {
        var links = ["<a href=\"/dashboard\">Apps</a>"]
        if viewer?.may(.viewService) ?? true { links.append("<a href=\"/dashboard/queue\">Queue</a>") }
        if viewer?.may(.administer) ?? true {
            links.append("<a href=\"/dashboard/operators\">Operators</a>")
            links.append("<a href=\"/dashboard/audit\">Audit log</a>")
        }
        links.append("<a href=\"/dashboard/keys\">API keys</a>")
        let who = viewer.map { "<span class=\"who\">\(escape($0.name)) · \($0.role.rawValue)</span>" } ?? ""
        return """
            <nav>\(links.joined())
            <form class="search" method="get" action="/dashboard/search"><input type="search" name="q" aria-label="Search" \
            placeholder="User, token, device or notification id"></form>
            \(who)<form method="post" action="/dashboard/logout"><button>Sign out</button></form></nav>
            """
    }

    static func table(_ headers: [String], _ rows: [[String]], empty: String = "Nothing yet.") -> String {
        guard !rows.isEmpty else { return "<p class=\"muted\">\(escape(empty))</p>" }
        let head = headers.map { "<th>\(escape($0))</th>" }.joined()
        // Each cell names its column, which narrow screens show beside it in place of the header row.
        let labels = headers.map { " data-label=\"\(escape($0))\"" }
        let body = rows.map { row in
            "<tr>" + row.enumerated().map { "<td\($0.offset < labels.count ? labels[$0.offset] : "")>\($0.element)</td>" }.joined() + "</tr>"
        }.joined(separator: "\n")
        return "<table><thead><tr>\(head)</tr></thead><tbody>\n\(body)\n</tbody></table>"
    }

    /// A horizontal bar split in proportion to `parts` (label, count, CSS class), with a legend.
    static func stackedBar(_ parts: [(String, Int64, String)]) -> String {
        let total = max(1, parts.reduce(0) { $0 + $1.1 })
        let segments = parts.filter { $0.1 > 0 }.map { label, count, kind in
            "<span class=\"seg s-\(kind)\" style=\"width:\(String(format: "%.2f", Double(count) * 100 / Double(total)))%\" title=\"\(escape(label)) \(count)\"></span>"
        }.joined()
        let legend = parts.map { label, count, kind in "<span class=\"key s-\(kind)\">\(escape(label)) \(count)</span>" }.joined(separator: " ")
        return "<div class=\"bar\">\(segments)</div><div class=\"legend\">\(legend)</div>"
    }

    static func percent(_ part: Int64, of whole: Int64) -> String {
        whole > 0 ? String(format: "%.1f %%", Double(part) * 100 / Double(whole)) : "–"
    }

    static func time(_ date: Date?) -> String {
        guard let date else { return "–" }
        return escape(date.formatted(Date.ISO8601FormatStyle().year().month().day().time(includingFractionalSeconds: false)))
    }

    /// A value for a URL's query string.
    static func queryEscape(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    static func link(_ href: String, _ text: String) -> String {
        "<a href=\"\(escape(href))\">\(escape(text))</a>"
    }

    private static let style = """
        body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
        header{display:flex;gap:24px;align-items:center;padding:10px 24px;background:#1d2330;color:#fff}
        header nav{display:flex;gap:16px;align-items:center} header a{color:#cfe0ff;text-decoration:none}
        header form{margin:0} header button{background:none;border:1px solid #667;color:#ddd;border-radius:4px;cursor:pointer}
        main{max-width:1200px;margin:0 auto;padding:8px 24px 48px} h1{font-size:22px} h2{font-size:17px;margin-top:28px}
        table{border-collapse:collapse;width:100%;background:#fff;box-shadow:0 1px 2px #0001}
        th,td{text-align:left;padding:6px 10px;border-bottom:1px solid #e6e8ec;vertical-align:top} th{background:#eef0f4;font-weight:600}
        td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
        .muted{color:#778} .ok{color:#137333} .bad{color:#b3261e} .warn{color:#9a6700}
        .bar{display:flex;height:12px;width:260px;background:#e6e8ec;border-radius:3px;overflow:hidden}
        .seg{display:block;height:100%} .legend{font-size:12px;color:#556;margin-top:2px}
        .key::before{content:"";display:inline-block;width:8px;height:8px;margin-right:3px;border-radius:2px}
        .seg.s-pending,.key.s-pending::before{background:#9aa4b2} .seg.s-sent,.key.s-sent::before{background:#1a73e8}
        .seg.s-retrying,.key.s-retrying::before{background:#f9ab00} .seg.s-failed,.key.s-failed::before{background:#d93025}
        .seg.s-dead,.key.s-dead::before{background:#5f1a16} .seg.s-delivered,.key.s-delivered::before{background:#34a853}
        .seg.s-opened,.key.s-opened::before{background:#0d652d} .seg.s-cancelled,.key.s-cancelled::before{background:#c4c9d2}
        span.sent{color:#1a73e8} span.retrying,span.running,span.available{color:#9a6700} span.failed{color:#d93025}
        span.dead{color:#5f1a16;font-weight:600} span.cancelled{color:#778}
        .cards{display:flex;gap:12px;flex-wrap:wrap} .card{background:#fff;padding:10px 14px;box-shadow:0 1px 2px #0001;min-width:120px}
        .card b{display:block;font-size:20px} pre{background:#fff;padding:10px;overflow:auto;box-shadow:0 1px 2px #0001}
        form.inline{display:inline} input,select,button{font:inherit;padding:4px 8px} input,select,textarea{max-width:100%;box-sizing:border-box}
        .login{max-width:360px;background:#fff;padding:20px;box-shadow:0 1px 3px #0002}
        header{flex-wrap:wrap} header nav{flex-wrap:wrap} .who{color:#aab} form.search input{width:240px}
        .panel{background:#fff;padding:12px 16px;box-shadow:0 1px 2px #0001;margin:12px 0} .panel label{display:block;margin:6px 0}
        textarea{font:13px/1.4 ui-monospace,monospace;width:100%;box-sizing:border-box} input[type=text],input[type=search]{max-width:100%}
        .grid2{display:grid;grid-template-columns:1fr 1fr;gap:12px} .pager{margin:10px 0}
        svg{max-width:100%;height:auto}
        @media (max-width:700px){
          header,main{padding-left:10px;padding-right:10px} form.search input{width:100%} .grid2{grid-template-columns:1fr}
          table,thead,tbody,tr,td{display:block;width:100%;box-sizing:border-box} thead{display:none}
          tr{border-bottom:2px solid #e6e8ec;padding:4px 0} td{border:none;padding:2px 8px;overflow-wrap:anywhere}
          td[data-label]:not([data-label=""])::before{content:attr(data-label) ": ";color:#778;font-size:12px} .bar{width:100%}
          pre{white-space:pre-wrap;overflow-wrap:anywhere}
        }
        """
}
