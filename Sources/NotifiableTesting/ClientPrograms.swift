import Foundation

extension TestDatabase {
    public struct NoClientPrograms: Error, CustomStringConvertible {
        public var description: String {
            "no PostgreSQL client programs: set PG_BIN, or run the tests through scripts/test, which installs them."
        }
    }

    /// A PostgreSQL client program (`psql`, `pg_dump`): from `PG_BIN`, as `scripts/test` sets it,
    /// else from the newest version Debian's packages installed.
    public static func clientProgram(_ name: String) throws -> URL {
        if let bin = ProcessInfo.processInfo.environment["PG_BIN"] {
            return URL(fileURLWithPath: bin).appendingPathComponent(name)
        }
        guard let version = try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql").sorted().last else {
            throw NoClientPrograms()
        }
        return URL(fileURLWithPath: "/usr/lib/postgresql/\(version)/bin/\(name)")
    }
}
