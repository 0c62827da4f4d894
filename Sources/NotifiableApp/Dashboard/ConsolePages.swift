import Foundation
import Hummingbird
import NotifiableCore
import NotifiableStore

/// What every page of the console needs: the session (its forms' CSRF tokens) and the apps (to
/// check that an operator may act on the app a page names).
struct ConsoleRequests: Sendable {
    let session: DashboardSession?
    let apps: AppStore
}

/// A group of the console's pages: the routes it serves and the stores those need, beside the
/// checks every page makes (`ConsoleRequests`).
protocol ConsolePages: Sendable {
    var console: ConsoleRequests { get }
    /// Its routes, behind the session and audit middleware.
    func addRoutes(to pages: RouterGroup<NotifiableRequestContext>)
}

extension ConsolePages {
    static var pageSize: Int { 50 }

    /// A state-changing request's form, when it carries this session's CSRF token.
    func form(of request: Request, _ consequence: String) async throws -> [String: String] {
        try await formWithFiles(of: request, consequence).fields
    }

    /// The same, with the files a multipart form uploaded, of up to `limit` bytes in all.
    func formWithFiles(of request: Request, _ consequence: String, limit: Int = FormBody.limit) async throws -> FormBody {
        let cookie = request.cookies[DashboardSession.cookieName]?.value ?? ""
        var request = request
        let form = try await FormBody.read(&request, limit: limit)
        guard let session = console.session, let token = form.fields["csrf"], session.isValidCSRF(token, session: cookie) else {
            throw ConsoleRefusal.staleForm(consequence)
        }
        return form
    }

    func csrf(_ request: Request) -> String {
        console.session?.csrfToken(session: request.cookies[DashboardSession.cookieName]?.value ?? "") ?? ""
    }

    /// The app in the path, when the operator may do `action` to it. An app they may not even see
    /// is answered as missing, so the console does not tell who has which apps.
    func app(_ context: NotifiableRequestContext, _ action: (Int64) -> ConsoleAction, _ what: String) async throws -> App {
        try await app(id: Int64(context.parameters.get("id") ?? ""), context, action, what)
    }

    /// The same for an app named elsewhere than the path (a form's field).
    func app(id: Int64?, _ context: NotifiableRequestContext, _ action: (Int64) -> ConsoleAction, _ what: String) async throws -> App {
        let viewer = try context.requireOperator()
        guard let id, id > 0, viewer.sees(appID: id), let app = try await console.apps.app(id: id) else {
            throw ConsoleRefusal.notFound("There is no such app.")
        }
        guard viewer.may(action(id)) else { throw ConsoleRefusal.forbidden(viewer, what, needs: ConsoleAction.whoMay(action(id))) }
        return app
    }

    /// Refuses a service-wide action the operator may not take.
    func require(_ action: ConsoleAction, _ context: NotifiableRequestContext, _ what: String) throws {
        let viewer = try context.requireOperator()
        guard viewer.may(action) else { throw ConsoleRefusal.forbidden(viewer, what, needs: ConsoleAction.whoMay(action)) }
    }
}

extension ConsoleAction {
    /// Who may take the action, said to an operator who may not.
    static func whoMay(_ action: ConsoleAction) -> String {
        switch action {
        case .view: return "Ask an owner to give you this app."
        case .send: return "Editors and admins of this app, and owners, may; ask an owner."
        case .manage: return "Admins of this app and owners may; ask an owner."
        case .administer: return "Only owners may."
        case .viewService: return "Owners and viewers may."
        }
    }
}

extension NotifiableRequestContext {
    /// The console's signed-in operator; only routes behind the session middleware may ask.
    func requireOperator() throws -> ConsoleOperator {
        guard let consoleOperator else { throw ConsoleRefusal(status: .unauthorized, message: "Sign in first.") }
        return consoleOperator
    }
}
