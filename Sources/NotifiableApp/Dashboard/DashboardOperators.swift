import Foundation
import Hummingbird
import NotifiableCore
import NotifiableStore

/// Owners manage operators and read the audit log.
struct ConsoleOperators: ConsolePages {
    let console: ConsoleRequests
    let operators: OperatorStore
    let passwords: PasswordChecks
    let audit: AuditLogStore

    func addRoutes(to pages: RouterGroup<NotifiableRequestContext>) {
        pages.get("operators", use: operatorsPage)
        pages.post("operators", use: addOperator)
        pages.post("operators/:operator", use: changeOperator)
        pages.get("audit", use: auditPage)
        pages.get("audit.jsonl", use: auditExport)
    }
}

extension ConsoleOperators {
    @Sendable func operatorsPage(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        try require(.administer, context, "manage operators")
        return DashboardPages.operators(
            try await operators.list(), apps: try await console.apps.list(), csrf: csrf(request),
            notice: request.uri.queryParameters["saved"].map { "Saved \(String($0))." })
    }

    @Sendable func addOperator(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let form = try await form(of: request, "no operator was added")
        try require(.administer, context, "manage operators")
        guard let name = OperatorName.normalized(form["name"] ?? "") else {
            throw ConsoleRefusal.invalid("A name is 1 to \(OperatorName.maxLength) letters, digits, '.', '_', '-' or '@'; no operator was added.")
        }
        let (role, appIDs) = try roleAndApps(form)
        AuditMiddleware.note(["operator": name, "role": role.rawValue, "apps": appIDs.map(String.init).joined(separator: ",")])
        let password = form["password"] ?? ""
        if let weakness = PasswordHash.weakness(of: password) { throw ConsoleRefusal.invalid(weakness + " No operator was added.") }
        do {
            _ = try await operators.add(name: name, role: role, password: try await newHash(password, "No operator was added."), appIDs: appIDs)
        } catch let refused as OperatorChangeRefused {
            throw ConsoleRefusal.invalid(refused.description + " No operator was added.")
        }
        return Response(status: .seeOther, headers: [.location: "/dashboard/operators?saved=\(HTML.queryEscape(name))"])
    }

    /// Changes an operator's role, apps, password (when one is typed) or whether they may sign in.
    @Sendable func changeOperator(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let form = try await form(of: request, "nothing was changed")
        try require(.administer, context, "manage operators")
        guard let id = Int64(context.parameters.get("operator") ?? "") else { throw ConsoleRefusal.notFound("There is no such operator.") }
        let (role, appIDs) = try roleAndApps(form)
        // What the change set: the log must show a viewer made an owner, or an account enabled again.
        AuditMiddleware.note([
            "operator_id": "\(id)", "role": role.rawValue, "apps": appIDs.map(String.init).joined(separator: ","),
            "disabled": form["disabled"] == "on" ? "yes" : "no", "password": form["password"]?.isEmpty == false ? "changed" : "kept",
        ])
        var password: PasswordHash?
        if let typed = form["password"], !typed.isEmpty {
            if let weakness = PasswordHash.weakness(of: typed) { throw ConsoleRefusal.invalid(weakness + " Nothing was changed.") }
            password = try await newHash(typed, "Nothing was changed.")
        }
        do {
            guard
                let account = try await operators.update(
                    id: id, role: role, appIDs: appIDs, password: password, disabled: form["disabled"] == "on")
            else { throw ConsoleRefusal.notFound("There is no such operator.") }
            AuditMiddleware.note(["operator": account.name])
            return Response(status: .seeOther, headers: [.location: "/dashboard/operators?saved=\(HTML.queryEscape(account.name))"])
        } catch let refused as OperatorChangeRefused {
            throw ConsoleRefusal.invalid(refused.description + " Nothing was changed.")
        }
    }

    private func newHash(_ password: String, _ consequence: String) async throws -> PasswordHash {
        do {
            return try await passwords.hash(password)
        } catch is PasswordChecks.Busy {
            throw ConsoleRefusal(status: .serviceUnavailable, message: "Many passwords are being checked just now; try again in a second. \(consequence)")
        }
    }

    private func roleAndApps(_ form: [String: String]) throws -> (OperatorRole, [Int64]) {
        guard let role = form["role"].flatMap(OperatorRole.init(rawValue:)) else {
            throw ConsoleRefusal.invalid("The role must be owner, admin, editor or viewer; nothing was changed.")
        }
        let parts = (form["apps"] ?? "").split(whereSeparator: { $0 == "," || $0 == " " })
        let appIDs = parts.compactMap { Int64($0) }
        guard appIDs.count == parts.count else { throw ConsoleRefusal.invalid("Apps are app ids separated by commas; nothing was changed.") }
        if role.isScopedToApps, appIDs.isEmpty {
            throw ConsoleRefusal.invalid("An \(role.rawValue) needs at least one app; nothing was changed.")
        }
        return (role, role.isScopedToApps ? appIDs : [])
    }

    @Sendable func auditPage(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        try require(.administer, context, "read the audit log")
        let appID = request.uri.queryParameters["app"].flatMap { Int64(String($0)) }
        let entries = try await audit.list(appID: appID, beforeID: try request.cursor(), limit: Self.pageSize)
        return DashboardPages.audit(entries, appID: appID, nextCursor: entries.count == Self.pageSize ? entries.last?.id : nil)
    }

    /// The whole audit log (or one app's), oldest first, as JSON lines.
    @Sendable func auditExport(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        try require(.administer, context, "read the audit log")
        let appID = request.uri.queryParameters["app"].flatMap { Int64(String($0)) }
        let audit = audit
        return Response(
            status: .ok,
            headers: [
                .contentType: "application/x-ndjson; charset=utf-8", .contentDisposition: "attachment; filename=\"notifiable-audit.jsonl\"",
                .cacheControl: "no-store",
            ],
            // Written as it is read, a thousand entries at a time, however long the log has grown.
            body: ResponseBody { writer in
                try await audit.export(since: nil, appID: appID) { try await writer.write(ByteBuffer(string: $0.jsonLine() + "\n")) }
                try await writer.finish(nil)
            })
    }
}

extension DashboardPages {
    static func operators(_ accounts: [OperatorAccount], apps: [App], csrf: String, notice: String?) -> Response {
        let csrfField = "<input type=\"hidden\" name=\"csrf\" value=\"\(HTML.escape(csrf))\">"
        func roleSelect(_ current: OperatorRole) -> String {
            "<select name=\"role\">"
                + OperatorRole.allCases.map { "<option\($0 == current ? " selected" : "")>\($0.rawValue)</option>" }.joined() + "</select>"
        }
        let rows = accounts.map { account -> [String] in
            [
                HTML.escape(account.name),
                """
                <form method="post" action="/dashboard/operators/\(account.id)">\(csrfField)\(roleSelect(account.role))
                <input type="text" name="apps" size="8" value="\(account.appIDs.map(String.init).joined(separator: ","))" aria-label="Apps" placeholder="app ids">
                <input type="password" name="password" size="10" placeholder="new password" autocomplete="new-password" aria-label="New password">
                <label><input type="checkbox" name="disabled"\(account.disabledAt != nil ? " checked" : "")> disabled</label>
                <button>Save</button></form>
                """,
                HTML.time(account.createdAt),
            ]
        }
        let appList = apps.map { "\($0.id) \(HTML.escape($0.name))" }.joined(separator: " · ")
        return HTML.page(
            "Operators",
            """
            \(notice.map { "<p class=\"ok\">\(HTML.escape($0))</p>" } ?? "")
            <p class="muted">Owners may do everything; admins manage and send for their apps; editors compose and send for theirs;
            viewers read every app. Apps: \(appList.isEmpty ? "none yet" : appList).</p>
            \(HTML.table(["Name", "Role, apps, password, access", "Added"], rows, empty: "No operators yet: only the admin token signs in."))
            <h2>Add an operator</h2>
            <form class="panel" method="post" action="/dashboard/operators">\(csrfField)
            <label>Name <input type="text" name="name" required maxlength="\(OperatorName.maxLength)"></label>
            <label>Role \(roleSelect(.editor))</label>
            <label>Apps (ids, for admins and editors) <input type="text" name="apps" placeholder="1,2"></label>
            <label>Password (at least \(PasswordHash.minimumPasswordLength) characters)
            <input type="password" name="password" required minlength="\(PasswordHash.minimumPasswordLength)" autocomplete="new-password"></label>
            <button>Add operator</button></form>
            """)
    }

    static func audit(_ entries: [AuditEntry], appID: Int64?, nextCursor: Int64?) -> Response {
        let rows = entries.map { entry -> [String] in
            [
                HTML.time(entry.at), HTML.escape(entry.actor), entry.channel.rawValue, "<code>\(HTML.escape(entry.action))</code>",
                entry.appID.map { HTML.link("/dashboard/audit?app=\($0)", "app \($0)") } ?? "–", HTML.escape(entry.origin ?? "–"),
                entry.status < 400 ? "<span class=\"ok\">\(entry.status)</span>" : "<span class=\"bad\">\(entry.status)</span>",
            ]
        }
        let scope = appID.map { "&app=\($0)" } ?? ""
        return HTML.page(
            appID.map { "Audit log of app \($0)" } ?? "Audit log",
            """
            <p>\(HTML.link("/dashboard/audit.jsonl" + (appID.map { "?app=\($0)" } ?? ""), "Export as JSON lines"))\(appID != nil ? " · " + HTML.link("/dashboard/audit", "Every app") : "")</p>
            \(HTML.table(["When", "Who", "Through", "What", "App", "From", "Answer"], rows, empty: "Nothing recorded yet."))
            \(nextCursor.map { "<p class=\"pager\">" + HTML.link("/dashboard/audit?cursor=\($0)\(scope)", "Older →") + "</p>" } ?? "")
            """)
    }
}
