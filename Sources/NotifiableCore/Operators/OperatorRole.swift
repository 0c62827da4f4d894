/// What an operator of the console may do. Owners and viewers act on every app; admins and
/// editors only on the apps they are given.
public enum OperatorRole: String, Sendable, CaseIterable, Codable {
    /// Everything, including operators, new apps and the service-wide queue.
    case owner
    /// Given apps: their settings, credentials, gateways, webhooks, retention; and sending.
    case admin
    /// Given apps: composing and sending, re-queueing a notification's dead deliveries.
    case editor
    /// Every app, read only.
    case viewer

    /// Whether the role is granted app by app.
    public var isScopedToApps: Bool { self == .admin || self == .editor }
}

/// One thing an operator may be allowed to do.
public enum ConsoleAction: Sendable, Equatable {
    /// Read an app's pages: devices, notifications, deliveries, trends.
    case view(appID: Int64)
    /// Compose and send a notification, re-queue one notification's dead deliveries.
    case send(appID: Int64)
    /// Change an app: name, mode, gateways, credentials, webhooks, retention, its dead deliveries.
    case manage(appID: Int64)
    /// Service-wide: create apps, manage operators, read the audit log, re-queue every app's dead.
    case administer
    /// Service-wide pages that show every app at once (the queue).
    case viewService
}

extension ConsoleAction {
    /// The app the action is on; nil for the service-wide ones.
    public var appID: Int64? {
        switch self {
        case .view(let app), .send(let app), .manage(let app): app
        case .administer, .viewService: nil
        }
    }
}

/// Who is signed in to the console: an operator, or whoever holds the admin token (an owner).
public struct ConsoleOperator: Sendable, Equatable {
    /// Nil for the admin token.
    public let id: Int64?
    public let name: String
    public let role: OperatorRole
    /// The apps an admin or editor is given; ignored for owners and viewers.
    public let appIDs: Set<Int64>

    public init(id: Int64?, name: String, role: OperatorRole, appIDs: Set<Int64>) {
        self.id = id
        self.name = name
        self.role = role
        self.appIDs = appIDs
    }

    /// The admin token signed in: an owner with no account.
    public static let adminToken = ConsoleOperator(id: nil, name: "admin token", role: .owner, appIDs: [])

    /// The one place that decides what each role may do.
    public func may(_ action: ConsoleAction) -> Bool {
        switch (role, action) {
        case (.owner, _): return true
        case (.viewer, .view), (.viewer, .viewService): return true
        case (.viewer, _): return false
        case (.admin, .view(let app)), (.admin, .send(let app)), (.admin, .manage(let app)): return appIDs.contains(app)
        case (.editor, .view(let app)), (.editor, .send(let app)): return appIDs.contains(app)
        case (.admin, _), (.editor, _): return false
        }
    }

    /// Whether the operator sees `appID` at all (lists leave out the rest).
    public func sees(appID: Int64) -> Bool { may(.view(appID: appID)) }

    /// How the audit log names the operator.
    public var auditName: String { id == nil ? "admin-token" : "operator:\(name)" }
}
