import Logging
import NotifiableApp
import NotifiableCore
import Testing

@Suite struct ServerConfigurationTests {
    static let valid = [
        "DATABASE_URL": "postgres://notifiable@127.0.0.1:5432/notifiable",
        "NOTIFIABLE_MASTER_KEY": MasterKey.generate().base64,
    ]

    @Test func readsDefaultsAndOverrides() throws {
        let defaults = try ServerConfiguration.fromEnvironment(Self.valid)
        #expect(defaults.port == 8080)
        #expect(defaults.host == "127.0.0.1")
        #expect(defaults.adminToken == nil)
        var environment = Self.valid
        environment["PORT"] = "9090"
        environment["HOST"] = "0.0.0.0"
        environment["LOG_LEVEL"] = "DEBUG"
        environment["NOTIFIABLE_ADMIN_TOKEN"] = "0123456789abcdef0123"
        let configured = try ServerConfiguration.fromEnvironment(environment)
        #expect(configured.port == 9090)
        #expect(configured.host == "0.0.0.0")
        #expect(configured.logLevel == .debug)
        #expect(configured.adminToken == "0123456789abcdef0123")
    }

    @Test func readsTheLogFormatAndQueueMetricsInterval() throws {
        let defaults = try ServerConfiguration.fromEnvironment(Self.valid)
        #expect(defaults.logFormat == .text)
        #expect(defaults.queueMetricsInterval == .seconds(15))
        var environment = Self.valid
        environment["LOG_FORMAT"] = "JSON"
        environment["NOTIFIABLE_QUEUE_METRICS_SECONDS"] = "0"
        let configured = try ServerConfiguration.fromEnvironment(environment)
        #expect(configured.logFormat == .json)
        #expect(configured.queueMetricsInterval == .zero)
    }

    static func refusal(_ environment: [String: String]) -> ConfigurationError? {
        do {
            _ = try ServerConfiguration.fromEnvironment(environment)
            return nil
        } catch {
            return error
        }
    }

    /// Behind a transaction pooler, statements are not prepared by name, and what needs a session
    /// has a URL of its own; without one the service refuses to start and says which to set.
    @Test func aTransactionPoolerNeedsASessionURL() throws {
        let defaults = try ServerConfiguration.fromEnvironment(Self.valid)
        #expect(defaults.databasePoolMode == .session)
        #expect(defaults.sessionDatabaseURL == nil)
        var environment = Self.valid
        environment["NOTIFIABLE_DATABASE_POOL_MODE"] = "transaction"
        let refusal = Self.refusal(environment)
        #expect(refusal?.variable == "NOTIFIABLE_SESSION_DATABASE_URL")
        #expect(refusal?.problem.contains("NOTIFIABLE_DATABASE_POOL_MODE=transaction") == true, "\(String(describing: refusal))")
        environment["NOTIFIABLE_SESSION_DATABASE_URL"] = "postgres://notifiable@127.0.0.1:6432/notifiable_session"
        let pooled = try ServerConfiguration.fromEnvironment(environment)
        #expect(pooled.databasePoolMode == .transaction)
        #expect(pooled.sessionDatabaseURL == "postgres://notifiable@127.0.0.1:6432/notifiable_session")
        #expect(try makeDatabase(pooled, logger: .init(label: "test")).preparesStatements == false)
        #expect(try makeDatabase(defaults, logger: .init(label: "test")).preparesStatements)
    }

    @Test(
        arguments: [
            ("DATABASE_URL", nil),
            ("DATABASE_URL", "mysql://localhost/db"),
            ("NOTIFIABLE_MASTER_KEY", nil),
            ("NOTIFIABLE_MASTER_KEY", "c2hvcnQ="),
            ("PORT", "eighty"),
            ("PORT", "70000"),
            ("LOG_LEVEL", "loud"),
            ("LOG_FORMAT", "yaml"),
            ("NOTIFIABLE_QUEUE_METRICS_SECONDS", "-1"),
            ("NOTIFIABLE_ADMIN_TOKEN", "short"),
            ("NOTIFIABLE_MIGRATE_ON_START", "maybe"),
            ("NOTIFIABLE_LEASE_SECONDS", "20"),
            ("NOTIFIABLE_TRUSTED_PROXIES", "10.0.0.2, proxy.internal"),
            ("NOTIFIABLE_DATABASE_POOL_MODE", "statement"),
            ("NOTIFIABLE_SESSION_DATABASE_URL", "mysql://localhost/db"),
            ("NOTIFIABLE_WEBPUSH_ALLOWED_HOSTS", "https://push.example.com"),
            ("NOTIFIABLE_WEBPUSH_CA_FILE", "/nonexistent/ca.pem"),
            ("NOTIFIABLE_WEB_ORIGINS", "app.example.com"),
        ] as [(String, String?)])
    func aBadVariableIsNamedInTheError(variable: String, value: String?) {
        var environment = Self.valid
        environment[variable] = value
        #expect(throws: ConfigurationError.self) { try ServerConfiguration.fromEnvironment(environment) }
        do {
            _ = try ServerConfiguration.fromEnvironment(environment)
        } catch {
            #expect(error.variable == variable)
            #expect(error.description.hasPrefix(variable))
        }
    }

    @Test func webPushSettingsAreRead() throws {
        var environment = Self.valid
        environment["NOTIFIABLE_WEBPUSH_ALLOWED_HOSTS"] = "push.example.com, *.push.example.org"
        environment["NOTIFIABLE_WEB_ORIGINS"] = "https://App.Example.com,http://localhost:3000"
        let configuration = try ServerConfiguration.fromEnvironment(environment)
        #expect(configuration.webPushHosts.allows(host: "a.push.example.org"))
        #expect(!configuration.webPushHosts.allows(host: "fcm.googleapis.com"))
        #expect(configuration.webOrigins == ["https://app.example.com", "http://localhost:3000"])
        #expect(try ServerConfiguration.fromEnvironment(Self.valid).webPushHosts == .browsers)
    }
}
