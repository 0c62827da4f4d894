import Foundation
import Logging
import NotifiableCore
import NotifiableStore
import Synchronization

/// Erasing and exporting a person: the operations the API, the console and the command line all
/// call, so each front door only says who asked.
public struct PersonalData: Sendable {
    let erasures: PersonErasureStore
    let exports: PersonExportStore
    let audit: AuditLogStore
    let keys: MasterKeyring
    /// Exports under way in this process: each holds a connection and a snapshot while its reader
    /// takes it, so a few slow readers must not take the pool.
    private let exporting = ExportSlots(limit: 2)

    public init(client: Database, keys: MasterKeyring, logger: Logger) {
        self.erasures = PersonErasureStore(client: client, logger: logger)
        self.exports = PersonExportStore(client: client, logger: logger)
        self.audit = AuditLogStore(client: client, logger: logger)
        self.keys = keys
    }

    /// Who asked for an erasure, as the audit log records it.
    public struct Requester: Sendable {
        public let actor: String
        public let channel: AuditChannel
        public let origin: String?

        public init(actor: String, channel: AuditChannel, origin: String?) {
            self.actor = actor
            self.channel = channel
            self.origin = origin
        }
    }

    /// The audit log's action for an erasure.
    public static let eraseAction = "erase user"

    /// Erases `alias` from the app and writes the audit log's entry, which names the person only
    /// by a keyed digest (`MasterKey.erasedAliasDigest`).
    public func erase(alias: String, appID: Int64, by requester: Requester, logger: Logger) async throws -> ErasedData {
        let erased = try await erasures.erase(alias: alias, appID: appID)
        let entry = AuditEntry(
            actor: requester.actor, channel: requester.channel, action: Self.eraseAction, appID: appID, origin: requester.origin, status: 200,
            detail: ["alias_digest": keys.current.erasedAliasDigest(alias: alias, appID: appID), "devices": "\(erased.devices)"])
        await AuditMiddleware.write(entry, to: audit, logger: logger)
        return erased
    }

    /// When `alias` was erased from the app, latest first, from the audit log's digests (under the
    /// current and every previous master key).
    public func erasures(of alias: String, appID: Int64) async throws -> [AuditEntry] {
        try await audit.entries(action: Self.eraseAction, appID: appID, detail: "alias_digest", in: keys.erasedAliasDigests(alias: alias, appID: appID))
    }

    /// Takes one of the process's export slots (429 when all are taken), for `export` to use.
    public func reserveExport() throws -> ExportSlots.Reservation {
        guard let reservation = exporting.reserve() else {
            var error = APIError(
                status: .tooManyRequests, code: "exports_busy",
                message: "Other exports of a person are being written; try again in a few seconds (Retry-After).")
            error.headers[.retryAfter] = "5"
            throw error
        }
        return reservation
    }

    public func export(alias: String, appID: Int64, in reservation: ExportSlots.Reservation, write: (String) async throws -> Void) async throws {
        defer { reservation.release() }
        try await exports.export(alias: alias, appID: appID, write: write)
    }
}

/// A count of things under way, up to a limit.
public final class ExportSlots: Sendable {
    private let taken = Mutex(0)
    let limit: Int

    init(limit: Int) { self.limit = limit }

    /// A slot held until released; released once only.
    public final class Reservation: Sendable {
        private let slots: ExportSlots
        private let released = Mutex(false)

        init(_ slots: ExportSlots) { self.slots = slots }

        // An answer whose body never ran (the client went away first) gives its slot back too.
        deinit { release() }

        public func release() {
            guard
                released.withLock({ was in
                    defer { was = true }
                    return !was
                })
            else { return }
            slots.taken.withLock { $0 -= 1 }
        }
    }

    func reserve() -> Reservation? {
        let granted = taken.withLock { taken in
            guard taken < limit else { return false }
            taken += 1
            return true
        }
        return granted ? Reservation(self) : nil
    }
}
