import HTTPTypes
import Hummingbird
import NotifiableCore

/// What each admin route asks of whoever calls it, in one table: the console's roles
/// (`ConsoleOperator.may`) applied to the admin API. A route that names an app the caller does not
/// see is answered 404; one the caller sees but may not change, 403 naming the role it needs.
enum AdminAccess {
    /// What a route requires.
    enum Requirement: Equatable {
        case action(ConsoleAction)
        /// Any operator: the handler shows only the apps they see (the app list).
        case anyOperator
        /// The handler decides from the body (`QueueAdminController.requeue`), with `require`.
        case inHandler
    }

    /// The requirement of `method` on the route `endpoint` (as the router names it, `/admin/apps/:id`),
    /// with the app id of its path and of its `app_id` query.
    static func requirement(method: HTTPRequest.Method, endpoint: String, pathAppID: Int64?, queryAppID: Int64?) -> Requirement {
        let reads = method == .get || method == .head
        switch endpoint {
        case "/admin/apps":
            return reads ? .anyOperator : .action(.administer)
        case "/admin/apps/:id":
            if method == .delete { return .action(.administer) }
            return .action(reads ? .view(appID: pathAppID ?? 0) : .manage(appID: pathAppID ?? 0))
        case "/admin/queue":
            return .action(.viewService)
        case "/admin/deliveries/dead":
            return .action(queryAppID.map { .view(appID: $0) } ?? .viewService)
        case "/admin/deliveries/dead/requeue":
            return .inHandler
        default:
            // Every other route is an app's: its gateways, credentials, webhooks, sandbox.
            guard let app = pathAppID else { return .action(.administer) }
            return .action(reads ? .view(appID: app) : .manage(appID: app))
        }
    }

    /// A route as it is declared (`/admin/apps/:id`), from the router's name for it (`/admin/apps/{id}`).
    static func routeName(_ endpoint: String) -> String {
        endpoint.replacingOccurrences(of: "{", with: ":").replacingOccurrences(of: "}", with: "")
    }

    /// Refuses `action` to `caller`: 404 for an app they do not see, 403 otherwise.
    static func require(_ action: ConsoleAction, of caller: ConsoleOperator) throws {
        if let app = action.appID, !caller.sees(appID: app) { throw APIError.notFound("There is no app \(app).") }
        guard caller.may(action) else {
            throw APIError(
                status: .forbidden, code: "role_not_allowed",
                message: "Your key acts as \(caller.name), a\(caller.role == .admin || caller.role == .editor ? "n" : "") \(caller.role.rawValue), "
                    + "which may not do this. \(neededRole(action)) Ask an owner for a key that may.")
        }
    }

    static func neededRole(_ action: ConsoleAction) -> String {
        switch action {
        case .view: return "Any role that has the app may read it."
        case .send: return "It needs an editor or admin of the app, or an owner."
        case .manage: return "It needs an admin of the app, or an owner."
        case .administer: return "It needs an owner."
        case .viewService: return "It needs an owner or a viewer."
        }
    }
}

extension NotifiableRequestContext {
    /// The admin API's caller: the admin token (an owner) or an operator's key.
    func requireAdmin(_ action: ConsoleAction) throws {
        guard let consoleOperator else { throw APIError.unauthorized("missing_authorization", "Send Authorization: Bearer <key>.") }
        try AdminAccess.require(action, of: consoleOperator)
    }
}
