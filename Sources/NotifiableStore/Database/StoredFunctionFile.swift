import Foundation

/// One file of stored code: a function of the database, with the triggers that run it, kept in one
/// place beside the Swift that calls it (`Sources/NotifiableStore/<feature>/SQL/<function>.sql`).
///
/// Numbered migrations change the schema once and for ever; a function is code that changes with
/// the service, so it is defined once, as it is now, and the migrator applies its file after the
/// migrations whenever the text differs from what it applied last (`schema_functions`). Each file
/// is written to be run again: `CREATE OR REPLACE FUNCTION`, `CREATE OR REPLACE TRIGGER`.
public struct StoredFunctionFile: Sendable, Equatable {
    public let fileName: String
    public let sql: String

    public init(fileName: String, sql: String) {
        self.fileName = fileName
        self.sql = sql
    }

    /// SHA-256 of the file, recorded when applied.
    public var checksum: String { Migration.checksum(of: sql) }

    /// The files built into the service (the `SQL` folders of NotifiableStore), in name order: the
    /// order they are applied in.
    public static func bundled() throws -> [StoredFunctionFile] {
        guard let folder = Bundle.module.resourceURL else {
            throw MigrationError(description: "the service's stored functions are missing from its build (NotifiableStore's resources)")
        }
        let files = try load(from: folder)
        guard !files.isEmpty else {
            throw MigrationError(description: "no stored function files in \(folder.path): the build is incomplete")
        }
        return files
    }

    /// Every `*.sql` file of `folder`, in name order.
    public static func load(from folder: URL) throws -> [StoredFunctionFile] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { $0.hasSuffix(".sql") }
            .sorted()
            .map { StoredFunctionFile(fileName: $0, sql: try String(contentsOf: folder.appendingPathComponent($0), encoding: .utf8)) }
    }
}
