import Foundation
import Hummingbird
import NotifiableCore
import NotifiableStore

/// A person's data in the console, for the app's admins and owners: export it, erase it. The alias
/// travels in a form's body, never in a URL, so it reaches no access log or browser history.
struct ConsolePeople: ConsolePages {
    let console: ConsoleRequests
    /// Exports and erases a person (writes: the primary).
    let personalData: PersonalData
    let trustedProxies: Set<String>

    func addRoutes(to pages: RouterGroup<NotifiableRequestContext>) {
        pages.get("apps/:id/people", use: peoplePage)
        pages.post("apps/:id/people/export", use: exportPerson)
        pages.post("apps/:id/people/erase", use: erasePerson)
    }
}

extension ConsolePeople {
    @Sendable func peoplePage(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let app = try await app(context, ConsoleAction.manage, "export or erase a person's data")
        return DashboardPages.people(app: app, csrf: csrf(request), erased: nil)
    }

    @Sendable func exportPerson(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let app = try await app(context, ConsoleAction.manage, "export a person's data")
        let alias = try Self.alias(in: try await form(of: request, "No data was exported."))
        let personalData = personalData
        let reservation = try personalData.reserveExport()
        return Response(
            status: .ok,
            headers: [
                .contentType: "application/json; charset=utf-8", .contentDisposition: "attachment; filename=\"notifiable-person.json\"",
                .cacheControl: "no-store",
            ],
            body: ResponseBody { writer in
                try await personalData.export(alias: alias, appID: app.id, in: reservation) { try await writer.write(ByteBuffer(string: $0)) }
                try await writer.finish(nil)
            })
    }

    @Sendable func erasePerson(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let app = try await app(context, ConsoleAction.manage, "erase a person's data")
        let form = try await form(of: request, "Nothing was erased.")
        let alias = try Self.alias(in: form)
        guard form["confirm"] == alias else {
            throw ConsoleRefusal.invalid("Type the alias a second time, exactly, to confirm. Nothing was erased.")
        }
        let viewer = try context.requireOperator()
        let requester = PersonalData.Requester(
            actor: viewer.auditName, channel: .console, origin: ClientOrigin.of(request, context: context, trustedProxies: trustedProxies).address)
        let erased = try await personalData.erase(alias: alias, appID: app.id, by: requester, logger: context.logger)
        return DashboardPages.people(app: app, csrf: csrf(request), erased: erased)
    }

    static func alias(in form: [String: String]) throws -> String {
        // As typed: " alice" and "alice" are two users to the registry.
        let alias = form["alias"] ?? ""
        if let problem = UserAlias.problem(alias) { throw ConsoleRefusal.invalid("The user alias \(problem).") }
        return alias
    }
}

extension DashboardPages {
    static func people(app: App, csrf: String, erased: ErasedData?) -> Response {
        let csrfField = "<input type=\"hidden\" name=\"csrf\" value=\"\(HTML.escape(csrf))\">"
        let result = erased.map { erased -> String in
            let counts = (try? JSONDecoder().decode([String: Int64].self, from: JSONEncoder().encode(erased))) ?? [:]
            let rows = counts.sorted { $0.key < $1.key }.map { [HTML.escape($0.key.replacingOccurrences(of: "_", with: " ")), "\($0.value)"] }
            return "<p class=\"ok\">Erased. An alias the app never held erases nothing and says so.</p>" + HTML.table(["What", "Removed"], rows)
        }
        return HTML.page(
            "\(app.name): a person's data",
            (result ?? "")
                + """
                <form class="panel" method="post" action="/dashboard/apps/\(app.id)/people/export">\(csrfField)
                <h2>Export</h2><p>Everything the app holds about one user, as one JSON file: devices with their history, stateful
                notifications, every push with its delivered and opened times.</p>
                <label>User alias <input type="text" name="alias" required maxlength="\(UserAlias.maxLength)" autocomplete="off"></label>
                <button>Download</button></form>
                <form class="panel" method="post" action="/dashboard/apps/\(app.id)/people/erase">\(csrfField)
                <h2>Erase</h2><p>Every device that has or ever had the alias loses its token, name, properties and history; the user's
                stateful notifications, feeds and pending webhook events go; notification counters stay. It cannot be undone.</p>
                <label>User alias <input type="text" name="alias" required maxlength="\(UserAlias.maxLength)" autocomplete="off"></label>
                <label>The alias again <input type="text" name="confirm" required maxlength="\(UserAlias.maxLength)" autocomplete="off"></label>
                <button class="danger">Erase</button></form>
                """)
    }
}
