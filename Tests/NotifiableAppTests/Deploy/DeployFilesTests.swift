import Foundation
import NotifiableApp
import NotifiableCore
import NotifiableTesting
import Testing

/// deploy/systemd, as an operator installs it: the units are what systemd's own checker accepts,
/// and the environment file is one the service starts with once its CHANGE-ME values are filled.
/// (The Patroni, PgBouncer and HAProxy files are started by scripts/topology in the fault suite.)
@Suite struct DeployFilesTests {
    static let deploy = TestDatabase.migrationsDirectory.deletingLastPathComponent().appendingPathComponent("deploy")

    @Test func theSystemdUnitsPassSystemdAnalyzeVerify() async throws {
        let analyze = URL(fileURLWithPath: "/usr/bin/systemd-analyze")
        try #require(FileManager.default.isExecutableFile(atPath: analyze.path), "systemd-analyze (Debian's systemd) is missing")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("units-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var units: [String] = []
        for (template, instance) in [("notifiable-serve@.service", "8081"), ("notifiable-work@.service", "1")] {
            // Instantiated, and run from the binary under test instead of the release's path.
            let text = try String(contentsOf: Self.deploy.appendingPathComponent("systemd/\(template)"), encoding: .utf8)
            #expect(text.contains("ExecStart=/usr/local/bin/notifiable "))
            let unit = folder.appendingPathComponent(template.replacingOccurrences(of: "@.", with: "@\(instance)."))
            try text.replacingOccurrences(of: "/usr/local/bin/notifiable", with: NotifiableProcess.executable.path)
                .write(to: unit, atomically: true, encoding: .utf8)
            units.append(unit.path)
        }
        let verified = try await runProgram(analyze, ["verify"] + units)
        #expect(verified.status == 0, "\(verified.output)")
        #expect(verified.output.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "systemd-analyze has remarks: \(verified.output)")
    }

    @Test func theEnvironmentFileIsOneTheServiceStartsWith() throws {
        let text = try String(contentsOf: Self.deploy.appendingPathComponent("systemd/notifiable.env"), encoding: .utf8)
        var environment: [String: String] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") && line.contains("=") {
            let parts = line.split(separator: "=", maxSplits: 1)
            environment[String(parts[0])] = String(parts[1])
        }
        #expect(environment.values.contains { $0.contains("CHANGE-ME") }, "the secrets are left for the operator")
        environment["NOTIFIABLE_MASTER_KEY"] = MasterKey.generate().base64
        environment["NOTIFIABLE_ADMIN_TOKEN"] = "an-admin-token-of-\(UUID().uuidString)"
        let configuration = try ServerConfiguration.fromEnvironment(environment)
        #expect(configuration.databasePoolMode == .transaction)
        #expect(configuration.sessionDatabaseURL?.contains("/notifiable_session") == true)
        #expect(configuration.trustedProxies.isEmpty == false)
    }
}
