import Foundation
import Hummingbird
import NotifiableCore
import NotifiableStore

/// Signing in (an operator's name and password, or the admin token with no name) and out.
/// Both are written to the audit log, failed sign-ins too.
struct ConsoleSignIn: ConsolePages {
    let console: ConsoleRequests
    let adminToken: String?
    let throttle: SignInThrottle
    /// Checks operators' passwords a few at a time, off the request threads.
    let passwords: PasswordChecks
    let operators: OperatorStore
    let audit: AuditLogStore
    let trustedProxies: Set<String>

    func addRoutes(to pages: RouterGroup<NotifiableRequestContext>) {
        pages.get("login") { _, _ in console.session == nil ? DashboardPages.closed() : DashboardPages.login() }
        pages.post("login", use: login)
        pages.post("logout", use: logout)
    }
}

extension ConsoleSignIn {
    @Sendable func login(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        guard let session = console.session, let adminToken else { return DashboardPages.closed() }
        let origin = origin(request, context)
        var request = request
        let form = try await FormBody.read(&request).fields
        let name = (form["name"] ?? "").trimmingCharacters(in: .whitespaces)
        // `token` is the admin token's field of earlier versions of this form.
        let password = form["password"] ?? form["token"] ?? ""
        func record(_ actor: String, _ status: HTTPResponse.Status) async {
            await AuditMiddleware.write(
                AuditEntry(actor: actor, channel: .console, action: "POST /dashboard/login", appID: nil, origin: origin.address, status: Int(status.code)),
                to: audit, logger: context.logger)
        }
        // Counted as a failure before it is checked, and forgiven if it succeeds: sign-ins sent
        // together count together, however long their passwords take to check.
        guard let attempt = throttle.attempt(origin.address, logger: context.logger, what: "dashboard sign-in") else {
            let wait = throttle.retryAfter(origin.address) ?? 1
            var refused = DashboardPages.login(error: "Too many failed sign-ins from here; try again in \(wait) s.")
            refused.status = .tooManyRequests
            refused.headers[.retryAfter] = String(wait)
            return refused
        }
        let holder: ConsoleOperator?
        do {
            holder = try await signIn(name: name, password: password, adminToken: adminToken)
        } catch {
            // Not checked (too many checks under way, the database not answering): no failed guess.
            throttle.forgive(origin.address, at: attempt)
            guard error is PasswordChecks.Busy else { throw error }
            var busy = DashboardPages.login(error: "Many sign-ins are being checked just now; try again in a second.")
            busy.status = .serviceUnavailable
            busy.headers[.retryAfter] = "1"
            return busy
        }
        guard let holder else {
            await record(name.isEmpty ? ConsoleOperator.adminToken.auditName : "operator:\(OperatorName.normalized(name) ?? "?")", .unauthorized)
            return DashboardPages.login(error: name.isEmpty ? "That is not the admin token." : "That name and password do not match an enabled operator.")
        }
        throttle.forgive(origin.address, at: attempt)
        await record(holder.auditName, .seeOther)
        var response = Response(status: .seeOther, headers: [.location: "/dashboard"])
        response.setCookie(
            Cookie(
                name: DashboardSession.cookieName, value: try await session.issue(client: origin.address, operatorID: holder.id),
                maxAge: Int(DashboardSession.lifetime), path: "/dashboard", secure: origin.isHTTPS, httpOnly: true, sameSite: .strict
            ))
        return response
    }

    /// Who the name and password sign in, or nil. A name that is no operator still costs one
    /// hash, so the time taken does not tell which names exist; a password too short to be any
    /// operator's costs none.
    private func signIn(name: String, password: String, adminToken: String) async throws -> ConsoleOperator? {
        if name.isEmpty { return APIAuth.constantTimeEquals(password, adminToken) ? .adminToken : nil }
        guard PasswordHash.weakness(of: password) == nil else { return nil }
        guard let normalized = OperatorName.normalized(name), let (account, hash) = try await operators.signInRecord(name: normalized) else {
            if let absent = Self.absentOperatorHash { _ = try await passwords.matches(password, absent) }
            return nil
        }
        return try await passwords.matches(password, hash) ? account.consoleOperator : nil
    }

    private static let absentOperatorHash = try? PasswordHash.make(UUID().uuidString)

    @Sendable func logout(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        // Ended here, not only forgotten by this browser: a copy of the cookie stops working too.
        if let session = console.session, let cookie = request.cookies[DashboardSession.cookieName]?.value {
            if let holder = try await session.holder(cookie) {
                await AuditMiddleware.write(
                    AuditEntry(
                        actor: holder.auditName, channel: .console, action: "POST /dashboard/logout", appID: nil,
                        origin: origin(request, context).address, status: 303),
                    to: audit, logger: context.logger)
            }
            try await session.end(cookie)
        }
        var response = Response(status: .seeOther, headers: [.location: "/dashboard/login"])
        response.setCookie(
            Cookie(
                name: DashboardSession.cookieName, value: "", maxAge: 0, path: "/dashboard", secure: origin(request, context).isHTTPS,
                httpOnly: true, sameSite: .strict
            ))
        return response
    }

    func origin(_ request: Request, _ context: NotifiableRequestContext) -> ClientOrigin {
        ClientOrigin.of(request, context: context, trustedProxies: trustedProxies)
    }
}
