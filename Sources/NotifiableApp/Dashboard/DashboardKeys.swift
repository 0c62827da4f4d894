import Foundation
import Hummingbird
import NotifiableCore
import NotifiableStore

/// Admin API keys in the console: every operator makes and revokes their own; owners see and revoke
/// everyone's. A key acts with its operator's role and apps, whatever they become later.
struct ConsoleKeys: ConsolePages {
    let console: ConsoleRequests
    /// Operators' admin API keys.
    let operatorKeys: OperatorKeyStore

    func addRoutes(to pages: RouterGroup<NotifiableRequestContext>) {
        pages.get("keys", use: keysPage)
        pages.post("keys", use: createKey)
        pages.post("keys/revoke", use: revokeKey)
    }
}

extension ConsoleKeys {
    @Sendable func keysPage(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let viewer = try context.requireOperator()
        return try await keysPage(request, viewer, made: nil, notice: nil)
    }

    @Sendable func createKey(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let viewer = try context.requireOperator()
        let form = try await form(of: request, "No key was made.")
        guard let operatorID = viewer.id else {
            throw ConsoleRefusal.invalid("A key acts as an operator: sign in with your own name to make one (the admin token has no account).")
        }
        let label = form["label"]?.trimmingCharacters(in: .whitespaces) ?? ""
        if let problem = OperatorKey.labelProblem(label) { throw ConsoleRefusal.invalid("The label \(problem). No key was made.") }
        var expiresAt: Date?
        if let days = form["expires_in_days"], !days.isEmpty {
            guard let count = Int(days), (1...3650).contains(count) else {
                throw ConsoleRefusal.invalid("Days until it expires must be 1 to 3650, or empty for never. No key was made.")
            }
            expiresAt = Date().addingTimeInterval(TimeInterval(count) * 86_400)
        }
        let made = try await operatorKeys.create(operatorID: operatorID, label: label, expiresAt: expiresAt)
        AuditMiddleware.note(["api_key": "\(made.record.id)", "label": label])
        return try await keysPage(request, viewer, made: made.key, notice: nil)
    }

    @Sendable func revokeKey(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let viewer = try context.requireOperator()
        let form = try await form(of: request, "No key was revoked.")
        guard let id = form["id"].flatMap({ Int64($0) }) else { throw ConsoleRefusal.invalid("Say which key to revoke.") }
        // Owners may end anyone's key; everyone else, their own.
        let scope: Int64? = viewer.may(.administer) ? nil : (viewer.id ?? -1)
        guard try await operatorKeys.revoke(id: id, operatorID: scope) else { throw ConsoleRefusal.notFound("There is no live key \(id) of yours.") }
        AuditMiddleware.note(["api_key": "\(id)"])
        return try await keysPage(request, viewer, made: nil, notice: "Key \(id) revoked.")
    }

    private func keysPage(_ request: Request, _ viewer: ConsoleOperator, made: String?, notice: String?) async throws -> Response {
        let keys = try await operatorKeys.list(operatorID: viewer.may(.administer) ? nil : (viewer.id ?? -1))
        return DashboardPages.keys(keys, viewer: viewer, csrf: csrf(request), made: made, notice: notice)
    }
}

extension DashboardPages {
    static func keys(_ keys: [OperatorKeyRecord], viewer: ConsoleOperator, csrf: String, made: String?, notice: String?) -> Response {
        let csrfField = "<input type=\"hidden\" name=\"csrf\" value=\"\(HTML.escape(csrf))\">"
        let rows = keys.map { key -> [String] in
            let state = key.revokedAt != nil ? "revoked" : (key.expiresAt.map { $0 <= Date() } == true ? "expired" : "live")
            return [
                "\(key.id)", HTML.escape(key.operatorName), HTML.escape(key.label), HTML.time(key.createdAt),
                key.expiresAt.map(HTML.time) ?? "never", state, key.lastUsedAt.map(HTML.time) ?? "unused",
                state == "live"
                    ? "<form method=\"post\" action=\"/dashboard/keys/revoke\">\(csrfField)<input type=\"hidden\" name=\"id\" value=\"\(key.id)\"><button>Revoke</button></form>"
                    : "",
            ]
        }
        let shown = made.map {
            "<p class=\"ok\">Your new key, shown this once: <code>\(HTML.escape($0))</code><br>Send it as <code>Authorization: Bearer …</code> to /admin.</p>"
        }
        let create =
            viewer.id == nil
            ? "<p class=\"muted\">Sign in with your own name to make a key: a key acts as its operator.</p>"
            : """
            <form class="panel" method="post" action="/dashboard/keys">\(csrfField)
            <h2>New key</h2><p>It acts as you (\(HTML.escape(viewer.role.rawValue))) on the admin API, with your apps.</p>
            <label>Label <input type="text" name="label" required maxlength="64"></label>
            <label>Days until it expires <input type="number" name="expires_in_days" min="1" max="3650" placeholder="never"></label>
            <button>Make a key</button></form>
            """
        return HTML.page(
            "API keys",
            (shown ?? "") + (notice.map { "<p class=\"ok\">\(HTML.escape($0))</p>" } ?? "") + create
                + HTML.table(["Id", "Operator", "Label", "Made", "Expires", "State", "Last used", ""], rows, empty: "No keys yet."))
    }
}
