import Foundation
import Hummingbird
import NotifiableCore
import NotifiableStore

/// The operators' console under `/dashboard`: server-rendered pages, no script. Operators sign in
/// with a name and password (or the admin token); each page asks `ConsoleOperator.may` before it
/// reads or changes anything, and every state-changing form is written to the audit log. The
/// pages come in groups, each with the stores it needs (`ConsolePages`).
struct DashboardController {
    let session: DashboardSession?
    let audit: AuditLogStore
    let trustedProxies: Set<String>
    let signIn: ConsoleSignIn
    let groups: [any ConsolePages]

    func addRoutes(to router: Router<NotifiableRequestContext>) {
        signIn.addRoutes(to: router.group("dashboard"))
        let pages = router.group("dashboard").add(middleware: DashboardAuthMiddleware(session: session)).add(
            middleware: AuditMiddleware(log: audit, channel: .console, trustedProxies: trustedProxies))
        for group in groups { group.addRoutes(to: pages) }
    }
}
