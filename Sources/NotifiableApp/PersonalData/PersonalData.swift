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
    private let exporting = Permits(limit: 2)

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
    public func reserveExport() throws -> ExportReservation {
        guard exporting.tryTake() else {
            var error = APIError(
                status: .tooManyRequests, code: "exports_busy",
                message: "Other exports of a person are being written; try again in a few seconds (Retry-After).")
            error.headers[.retryAfter] = "5"
            throw error
        }
        return ExportReservation(exporting)
    }

    public func export(alias: String, appID: Int64, in reservation: ExportReservation, write: (String) async throws -> Void) async throws {
        defer { reservation.release() }
        try await exports.export(alias: alias, appID: appID, write: write)
    }
}

/// An export's permit, held from before its answer starts until its body is written; given back
/// once, by the export or when nothing holds it any more (the client went away before the body ran).
public final class ExportReservation: Sendable {
    private let permits: Permits
    private let released = Mutex(false)

    init(_ permits: Permits) { self.permits = permits }

    deinit { release() }

    func release() {
        let first = released.withLock { was in
            defer { was = true }
            return !was
        }
        if first { permits.release() }
    }
}
