import Foundation
import NotifiableTesting
import Testing

/// The backup and restore drill of docs/operations.md, run as written (`scripts/backup-drill`):
/// real PostgreSQL clusters, WAL archiving, `pg_basebackup`, and a point-in-time restore.
@Suite struct BackupDrillTests {
    @Test func aPointInTimeRestoreKeepsEveryWriteUpToItsTargetAndNoneAfter() async throws {
        let root = TestDatabase.migrationsDirectory.deletingLastPathComponent()
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFIABLE_BIN"] = NotifiableProcess.executable.path
        let (status, output) = try await runProgram(root.appendingPathComponent("scripts/backup-drill"), [], environment: environment)
        #expect(status == 0, "\(output)")
        #expect(output.contains("Restored apps: Before the backup, After the backup"), "\(output)")
    }
}
