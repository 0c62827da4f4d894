import Foundation
import HummingbirdTesting
import NotifiableApp
import NotifiableCore
import NotifiableTesting
import Testing

/// The command line follows its conventions: `--version`; a mistake in the command line is a
/// usage error (exit 64, with usage), a command that cannot do its work says why in one line
/// (exit 1); a database or server that does not answer is said within seconds; `call` keeps its
/// standard output for the answer alone.
@Suite struct CommandLineErrorsTests {
    static func environment(_ url: String) -> [String: String] {
        ["DATABASE_URL": url, "NOTIFIABLE_MASTER_KEY": TestDatabase.masterKey.base64, "NOTIFIABLE_MIGRATIONS_DIR": TestDatabase.migrationsDirectory.path]
    }

    /// Standard output alone (standard error dropped), and the exit status.
    static func standardOutput(_ arguments: [String], environment: [String: String] = [:]) async throws -> (status: Int32, output: String) {
        try await runProgram(
            URL(fileURLWithPath: "/bin/sh"), ["-c", #"exec "$0" "$@" 2>/dev/null"#, NotifiableProcess.executable.path] + arguments,
            environment: ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        )
    }

    @Test func versionUsageAndRuntimeErrorsExitAsConventionsSay() async throws {
        let version = try await NotifiableProcess.run(["--version"])
        #expect(version.status == 0)
        #expect(version.output.trimmingCharacters(in: .whitespacesAndNewlines) == BuildInfo.version)

        let usage = try await NotifiableProcess.run(["apps", "show"])
        #expect(usage.status == 64, "\(usage.output)")
        #expect(usage.output.contains("Usage:"))

        try await TestDatabase.withFreshDatabase { url in
            let missingApp = try await NotifiableProcess.run(["apps", "show", "--app", "999"], environment: Self.environment(url))
            #expect(missingApp.status == 1, "\(missingApp.output)")
            #expect(missingApp.output.contains("There is no app 999."))
            #expect(!missingApp.output.contains("Usage:"), "a runtime failure is not a usage error")

            let created = try await NotifiableProcess.run(["apps", "create", "--name", "CLI", "--json"], environment: Self.environment(url))
            let appID = try #require(try JSONValue.decode(Array(created.output.utf8))["id"]?.intValue, "\(created.output)")
            let missingFile = try await NotifiableProcess.run(
                ["devices", "import", "--app", "\(appID)", "/no/such/devices.csv"], environment: Self.environment(url)
            )
            #expect(missingFile.status == 1, "\(missingFile.output)")
            #expect(missingFile.output.contains("Cannot read /no/such/devices.csv: no such file"), "\(missingFile.output)")
            #expect(!missingFile.output.contains("NSCocoaErrorDomain") && !missingFile.output.contains("Error Domain"))
        }
    }

    @Test func aDatabaseOrServerThatDoesNotAnswerIsSaidWithinSeconds() async throws {
        let started = Date()
        let noDatabase = try await NotifiableProcess.run(["apps", "list"], environment: Self.environment("postgres://nobody@127.0.0.1:9/none?sslmode=disable"))
        #expect(noDatabase.status == 1, "\(noDatabase.output)")
        #expect(noDatabase.output.contains("Cannot reach the database at 127.0.0.1:9/none (DATABASE_URL)"), "\(noDatabase.output)")
        #expect(!noDatabase.output.contains("nobody"), "no credentials in the message")
        #expect(Date().timeIntervalSince(started) < 15)

        let callStarted = Date()
        let noServer = try await NotifiableProcess.run(["call", "GET", "/health/live", "--url", "http://127.0.0.1:9", "--access-id", "a", "--secret-key", "b"])
        #expect(noServer.status == 1)
        #expect(noServer.output.contains("No answer from http://127.0.0.1:9"), "\(noServer.output)")
        #expect(Date().timeIntervalSince(callStarted) < 10)
    }

    /// A database that accepts the connection and then says nothing (a hung server, a firewall that
    /// swallows packets) is given up within the command's seconds, not the pool's minute.
    @Test func aDatabaseThatAcceptsButNeverAnswersIsGivenUpWithinSeconds() async throws {
        let silent = try await SilentListener.start()
        let started = Date()
        let hung = try await NotifiableProcess.run(
            ["apps", "list"], environment: Self.environment("postgres://nobody@127.0.0.1:\(silent.port)/none?sslmode=disable")
        )
        let elapsed = Date().timeIntervalSince(started)
        try await silent.stop()
        #expect(hung.status == 1, "\(hung.output)")
        #expect(hung.output.contains("Cannot reach the database at 127.0.0.1:\(silent.port)/none (DATABASE_URL)"), "\(hung.output)")
        // The command's 5 s connect timeout, not the pool's minute; the rest is a starved machine's slack.
        #expect(elapsed > 4 && elapsed < 40, "gave up after \(elapsed) s")
    }

    @Test func callPrintsTheAnswerAloneOnStandardOutput() async throws {
        try await withTestService(.live) { client, service in
            let app = try await service.createApp()
            let url = "http://127.0.0.1:\(try #require(client.port))"
            let signing = ["--url", url, "--access-id", app.deviceCredential.accessID, "--secret-key", app.deviceCredential.secretKey]
            let plain = try await Self.standardOutput(["call", "GET", "/api/v1/device_tokens?user_alias=nobody"] + signing)
            #expect(plain.status == 0, "\(plain.output)")
            #expect(plain.output.trimmingCharacters(in: .whitespacesAndNewlines) == "[]", "only the answer, for jq: \(plain.output)")
            let included = try await Self.standardOutput(["call", "-i", "GET", "/api/v1/device_tokens?user_alias=nobody"] + signing)
            #expect(included.output.hasPrefix("HTTP 200\n"), "\(included.output)")
        }
    }
}
