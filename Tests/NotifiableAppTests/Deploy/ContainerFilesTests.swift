import Foundation
import HTTPTypes
import HummingbirdTesting
import NotifiableCore
import NotifiableTesting
import Testing

/// What a team deploying the container relies on: a compose file Docker Compose reads, with
/// restart policies, healthchecks and no secret written in it; an image build that resolves the
/// versions the tests ran with; `notifiable health` for the healthcheck; /metrics behind a token.
@Suite struct ContainerFilesTests {
    static let root = TestDatabase.migrationsDirectory.deletingLastPathComponent()

    static func compose(_ environment: [String: String]) async throws -> (status: Int32, output: String) {
        var base = ProcessInfo.processInfo.environment
        for name in ["POSTGRES_PASSWORD", "NOTIFIABLE_MASTER_KEY", "NOTIFIABLE_ADMIN_TOKEN", "NOTIFIABLE_METRICS_TOKEN"] { base[name] = nil }
        return try await runProgram(
            URL(fileURLWithPath: "/usr/bin/docker-compose"),
            ["--project-directory", root.path, "-f", root.appendingPathComponent("docker-compose.yml").path, "config"],
            environment: base.merging(environment) { _, new in new }
        )
    }

    @Test func dockerComposeReadsTheFileWithRestartsHealthchecksAndSecretsFromTheEnvironment() async throws {
        let secrets = [
            "POSTGRES_PASSWORD": "pw-\(UUID().uuidString)", "NOTIFIABLE_MASTER_KEY": MasterKey.generate().base64,
            "NOTIFIABLE_METRICS_TOKEN": "metrics-\(UUID().uuidString)",
        ]
        let parsed = try await Self.compose(secrets)
        #expect(parsed.status == 0, "\(parsed.output)")
        #expect(parsed.output.components(separatedBy: "restart: unless-stopped").count - 1 == 2, "\(parsed.output)")
        #expect(parsed.output.contains("/app/notifiable"), "the service's healthcheck runs notifiable health")
        #expect(parsed.output.contains("pg_isready"))
        #expect(parsed.output.contains(secrets["POSTGRES_PASSWORD"]!), "the password comes from the environment (.env)")

        // Without the secrets it refuses, naming what to set.
        let missing = try await Self.compose([:])
        #expect(missing.status != 0)
        #expect(missing.output.contains("POSTGRES_PASSWORD"), "\(missing.output)")
        // And no secret is written in the file itself.
        let file = try String(contentsOf: Self.root.appendingPathComponent("docker-compose.yml"), encoding: .utf8)
        #expect(!file.contains("POSTGRES_PASSWORD: notifiable"))
        #expect(!file.contains("notifiable:notifiable@"))
    }

    /// The image build uses deploy/pinned-versions.resolved with --force-resolved-versions: it must name
    /// exactly the versions this build resolved, or images would be built from others.
    @Test func theImagesPinnedVersionsAreTheTestedOnes() throws {
        func pins(_ path: String) throws -> [String: String] {
            let json = try JSONValue.decode(try Data(contentsOf: Self.root.appendingPathComponent(path)))
            var pins: [String: String] = [:]
            for pin in json["pins"]?.arrayValue ?? [] {
                if let identity = pin["identity"]?.stringValue, let version = pin["state"]?["version"]?.stringValue { pins[identity] = version }
            }
            return pins
        }
        let tested = try pins("Package.resolved"), image = try pins("deploy/pinned-versions.resolved")
        #expect(!image.isEmpty)
        #expect(image == tested, "update deploy/pinned-versions.resolved from Package.resolved")
        let dockerfile = try String(contentsOf: Self.root.appendingPathComponent("Dockerfile"), encoding: .utf8)
        #expect(dockerfile.contains("COPY deploy/pinned-versions.resolved ./Package.resolved"))
        #expect(dockerfile.contains("--force-resolved-versions"))
        #expect(dockerfile.contains("USER notifiable"))
        let ignored = try String(contentsOf: Self.root.appendingPathComponent(".dockerignore"), encoding: .utf8)
        for entry in [".build", ".data", ".git", ".env"] { #expect(ignored.split(separator: "\n").contains(Substring(entry)), "\(entry)") }
    }

    @Test func healthExitsZeroForAServerThatAnswersAndOneOtherwise() async throws {
        try await withTestService(.live) { client, _ in
            let port = try #require(client.port)
            let up = try await NotifiableProcess.run(["health", "--url", "http://127.0.0.1:\(port)", "--timeout", "30"])
            #expect(up.status == 0, "\(up.output)")
            let ready = try await NotifiableProcess.run(["health", "--ready", "--url", "http://127.0.0.1:\(port)", "--timeout", "30"])
            #expect(ready.status == 0, "\(ready.output)")
        }
        let down = try await NotifiableProcess.run(["health", "--url", "http://127.0.0.1:9", "--timeout", "2"])
        #expect(down.status == 1)
        #expect(down.output.contains("did not answer"), "\(down.output)")
    }

    @Test func metricsAnswerOnlyTheTokenWhenOneIsSet() async throws {
        try await withTestService(configure: { $0.metricsToken = "scrape-secret" }) { client, _ in
            #expect(try await client.execute(uri: "/metrics", method: .get).status == .unauthorized)
            #expect(try await client.execute(uri: "/metrics", method: .get, headers: [.authorization: "Bearer wrong"]).status == .unauthorized)
            let scraped = try await client.execute(uri: "/metrics", method: .get, headers: [.authorization: "Bearer scrape-secret"])
            #expect(scraped.status == .ok)
            // Guessing the scrape token is slowed as guessing the admin token is.
            var statuses: [HTTPResponse.Status] = []
            for guess in 0..<10 {
                statuses.append(try await client.execute(uri: "/metrics", method: .get, headers: [.authorization: "Bearer guess-\(guess)"]).status)
            }
            #expect(statuses.dropLast().allSatisfy { $0 == .unauthorized }, "\(statuses)")
            let throttled = try await client.execute(uri: "/metrics", method: .get, headers: [.authorization: "Bearer scrape-secret"])
            #expect(throttled.status == .tooManyRequests)
            #expect(throttled.headers[.retryAfter] != nil)
        }
    }
}
