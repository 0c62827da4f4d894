import NotifiableCore
import NotifiableStore

/// The changes to an app and its credentials that the admin API and the console both make, done
/// once: each forgets what this process's `CredentialCache` verified, so the next signed request
/// reads the database whichever door the change came through. (The command line runs in a process
/// of its own; the API processes see its changes within the cache's second.)
struct AppAdministration: Sendable {
    let apps: AppStore
    let credentials: CredentialCache

    func update(appID: Int64, _ changes: AppStore.Changes) async throws -> App? {
        try await forgettingCredentials { try await apps.update(id: appID, changes) }
    }

    /// Deletes the app and everything it owns; false when there was none.
    func delete(appID: Int64) async throws -> Bool {
        try await forgettingCredentials { try await apps.delete(id: appID) }
    }

    /// A new credential pair for `role`; the earlier ones keep working for `grace`. Nil when there
    /// is no such app.
    func rotate(appID: Int64, role: CredentialRole, grace: Duration) async throws -> AppStore.Rotation? {
        try await forgettingCredentials { try await apps.rotate(appID: appID, role: role, grace: grace) }
    }

    /// Ends one credential now; false when the app has no working credential `accessID`.
    func revoke(appID: Int64, accessID: String) async throws -> Bool {
        try await forgettingCredentials { try await apps.revoke(appID: appID, accessID: accessID) }
    }

    /// Runs `change`, then forgets the cached credentials, whether it succeeded or not: a change
    /// that failed part way may still have committed.
    private func forgettingCredentials<T: Sendable>(_ change: () async throws -> T) async throws -> T {
        defer { credentials.forgetAll() }
        return try await change()
    }
}
