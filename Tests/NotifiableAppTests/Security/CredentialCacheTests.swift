import Foundation
import NotifiableApp
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import Synchronization
import Testing

/// APIAuth remembers a credential for at most a second, so a burst of signed requests costs one
/// database read; revoking, rotating or deleting must still stop a credential promptly.
@Suite struct CredentialCacheTests {
    /// A credential store whose answers the test changes, counting the reads.
    final class Store: Sendable {
        let state = Mutex<(credential: CredentialCache.Credential?, reads: Int)>((nil, 0))
        var reads: Int { state.withLock { $0.reads } }
        func set(_ credential: CredentialCache.Credential?) { state.withLock { $0.credential = credential } }
        func read() -> CredentialCache.Credential? {
            state.withLock { state in
                state.reads += 1
                return state.credential
            }
        }
    }

    final class Clock: Sendable {
        let instant = Mutex(ContinuousClock.now)
        var now: ContinuousClock.Instant { instant.withLock { $0 } }
        func advance(_ duration: Duration) { instant.withLock { $0 += duration } }
    }

    static func credential(expiresAt: Date? = nil) -> CredentialCache.Credential {
        .init(appID: 7, role: .device, secretKey: "secret", requiresVerifiedAlias: false, expiresAt: expiresAt)
    }

    @Test func aCredentialIsReadOncePerSecondAndItsRevocationSeenAfterThat() async throws {
        let store = Store(), clock = Clock()
        let cache = CredentialCache(timeToLive: .seconds(1), now: { clock.now }) { _ in store.read() }
        store.set(Self.credential())
        for _ in 0..<100 { #expect(try await cache.credential(accessID: "a")?.appID == 7) }
        #expect(store.reads == 1)

        store.set(nil)  // revoked by another process
        clock.advance(.milliseconds(900))
        #expect(try await cache.credential(accessID: "a") != nil)
        clock.advance(.milliseconds(101))
        #expect(try await cache.credential(accessID: "a") == nil)
        #expect(try await cache.credential(accessID: "a") == nil)
        #expect(store.reads == 3, "an unknown or revoked access id is not remembered")
    }

    @Test func anUnknownAccessIDIsUsableTheMomentItExists() async throws {
        let store = Store(), clock = Clock()
        let cache = CredentialCache(now: { clock.now }) { _ in store.read() }
        #expect(try await cache.credential(accessID: "new") == nil)
        store.set(Self.credential())
        #expect(try await cache.credential(accessID: "new") != nil)
    }

    @Test func aRotatedOutCredentialIsNotRememberedPastItsExpiry() async throws {
        let store = Store(), clock = Clock()
        let cache = CredentialCache(timeToLive: .seconds(60), now: { clock.now }) { _ in store.read() }
        store.set(Self.credential(expiresAt: Date().addingTimeInterval(-1)))
        #expect(try await cache.credential(accessID: "old") != nil)
        #expect(try await cache.credential(accessID: "old") != nil)
        #expect(store.reads == 2, "an expired credential's entry is never used")
    }

    @Test func forgettingDropsEntriesAndWhatReadsInFlightBroughtBack() async throws {
        let store = Store(), clock = Clock()
        let shared = Mutex<CredentialCache?>(nil)
        let cache = CredentialCache(timeToLive: .seconds(60), now: { clock.now }) { accessID in
            let credential = store.read()
            // An operator's change lands while this read is on its way back.
            if accessID == "slow" { shared.withLock { $0 }?.forgetAll() }
            return credential
        }
        shared.withLock { $0 = cache }
        store.set(Self.credential())
        _ = try await cache.credential(accessID: "a")
        cache.forgetAll()
        _ = try await cache.credential(accessID: "a")
        #expect(store.reads == 2)

        // What a read that began before the change brought back is used once, never stored.
        #expect(try await cache.credential(accessID: "slow") != nil)
        store.set(nil)
        #expect(try await cache.credential(accessID: "slow") == nil)
    }

    /// A credential revoked by another process (here: directly in the database) stops working
    /// within a second even while it is in constant use.
    @Test func aCredentialRevokedElsewhereIsRefusedWithinASecond() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let path = "/api/v1/device_tokens?user_alias=a"
            #expect(try await client.signed(.get, path, as: app.deviceCredential).status == .ok)
            _ = try await service.integer(
                "UPDATE app_credentials SET revoked_at = now() WHERE access_id = \(app.deviceCredential.accessID) RETURNING 1"
            )
            // Counted from when the revocation is visible to other sessions (an autocommit UPDATE is
            // answered just before it commits).
            #expect(
                try await service.integer("SELECT count(*) FROM app_credentials WHERE access_id = \(app.deviceCredential.accessID) AND revoked_at IS NOT NULL")
                    == 1)
            let revoked = ContinuousClock.now
            // In constant use for an entry's lifetime (1 s)...
            while ContinuousClock.now - revoked < .milliseconds(1050) {
                _ = try await client.signed(.get, path, as: app.deviceCredential)
                try await Task.sleep(for: .milliseconds(50))
            }
            // ...and a request begun after it is refused: every entry read before the revocation has
            // expired, however slow the machine was to serve the requests meanwhile.
            let refused = try await client.signed(.get, path, as: app.deviceCredential)
            #expect(refused.status == .unauthorized)
            #expect(refused.errorCode == "unknown_access_id")
        }
    }

    /// Through the admin API the change is seen at once.
    @Test func deletingAnAppThroughTheAdminAPIRefusesItsCredentialsAtOnce() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let path = "/api/v1/device_tokens?user_alias=a"
            #expect(try await client.signed(.get, path, as: app.deviceCredential).status == .ok)
            #expect(try await client.admin(.delete, "/admin/apps/\(app.app.id)", service: service).status == .noContent)
            #expect(try await client.signed(.get, path, as: app.deviceCredential).status == .unauthorized)
        }
    }
}
