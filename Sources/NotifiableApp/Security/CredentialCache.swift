import Foundation
import NotifiableStore
import Synchronization

/// Working credentials as APIAuth last read them, kept for a moment so that a burst of signed
/// requests costs one query and one opened secret per credential instead of one per request.
///
/// Revocation still bites promptly: an entry lives at most `timeToLive` (one second by default)
/// and never past the credential's own expiry, and the process forgets every entry the moment an
/// operator changes credentials or an app through its admin API or console (`AppAdministration`
/// calls `forgetAll`). A change made elsewhere (the command line, another API process) takes effect
/// within `timeToLive`.
/// Unknown access ids are not remembered, so a credential is usable the moment it is created.
public final class CredentialCache: Sendable {
    public typealias Credential = AppStore.StoredCredential
    public typealias Lookup = @Sendable (_ accessID: String) async throws -> Credential?

    /// Entries beyond this many are dropped (expired ones first) rather than grow without bound
    /// under a flood of distinct access ids.
    static let maxEntries = 10_000

    private struct Entry {
        let credential: Credential
        let validUntil: ContinuousClock.Instant
    }

    private struct State {
        var entries: [String: Entry] = [:]
        /// Raised by `forgetAll`: a read that began before it must not store what it read.
        var generation = 0
    }

    private let lookup: Lookup
    private let timeToLive: Duration
    private let now: @Sendable () -> ContinuousClock.Instant
    private let state = Mutex(State())

    public init(
        timeToLive: Duration = .seconds(1), now: @escaping @Sendable () -> ContinuousClock.Instant = { .now },
        lookup: @escaping Lookup
    ) {
        self.lookup = lookup
        self.timeToLive = timeToLive
        self.now = now
    }

    /// Reads through `AppStore.credential(accessID:)`.
    public convenience init(apps: AppStore, timeToLive: Duration = .seconds(1)) {
        self.init(timeToLive: timeToLive) { accessID in try await apps.credential(accessID: accessID) }
    }

    /// The working credential with this access id; nil when there is none.
    public func credential(accessID: String) async throws -> Credential? {
        let started = now()
        let (cached, generation) = state.withLock { ($0.entries[accessID], $0.generation) }
        if let cached, cached.validUntil > started { return cached.credential }
        guard let credential = try await lookup(accessID) else {
            state.withLock { _ = $0.entries.removeValue(forKey: accessID) }
            return nil
        }
        var validUntil = started + timeToLive
        if let expiresAt = credential.expiresAt {
            validUntil = min(validUntil, started + .milliseconds(Int64(max(0, expiresAt.timeIntervalSinceNow) * 1000)))
        }
        state.withLock { state in
            guard state.generation == generation else { return }
            if state.entries.count >= Self.maxEntries {
                state.entries = state.entries.filter { $0.value.validUntil > started }
                if state.entries.count >= Self.maxEntries { state.entries.removeAll(keepingCapacity: true) }
            }
            state.entries[accessID] = Entry(credential: credential, validUntil: validUntil)
        }
        return credential
    }

    /// Forgets every credential read so far: the next request of each reads the database.
    public func forgetAll() {
        state.withLock { state in
            state.generation += 1
            state.entries.removeAll()
        }
    }
}
