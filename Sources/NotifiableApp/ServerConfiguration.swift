import Foundation
import Logging
import NIOSSL
import NotifiableCore
import NotifiableDelivery
import NotifiableStore

/// Everything `notifiable serve` needs, read once from the environment (flags may override).
public struct ServerConfiguration: Sendable {
    public var databaseURL: String
    public var host: String = "127.0.0.1"
    public var port: Int = 8080
    /// Bearer token for the admin endpoints; they are closed when it is not set.
    public var adminToken: String?
    /// Seals new secrets.
    public var masterKey: MasterKey
    /// Earlier master keys, still able to open what they sealed until `notifiable keys rotate`.
    public var previousMasterKeys: [MasterKey] = []
    public var logLevel: Logger.Level = .info
    public var logFormat: LogFormat = .text
    /// Where this process's metrics are counted; `/metrics` shows them.
    public var metrics = ServiceMetrics()
    /// Queue gauges are sampled on scrape at most this often.
    public var queueMetricsInterval: Duration = .seconds(15)
    /// How long a sync signal waits for further changes to the same user notification, so that
    /// a burst of changes sends one.
    public var syncSignalDelay: Duration = .seconds(1)
    /// Where `notifiable work` serves `/metrics`; it serves nothing when nil.
    public var workerMetricsPort: Int?
    public var migrateOnStart: Bool = true
    public var migrationsDirectory: URL?
    public var databasePoolSize: Int = 20
    /// NOTIFIABLE_READ_DATABASE_URL: where operators' reads go (a standby); nil reads the primary.
    public var readDatabaseURL: String?
    /// NOTIFIABLE_DATABASE_POOL_MODE: what DATABASE_URL leads to, as far as a session's state goes.
    public var databasePoolMode = DatabasePoolMode.session
    /// NOTIFIABLE_SESSION_DATABASE_URL: a few connections that keep their session, for what a
    /// pooler in transaction mode cannot carry (LISTEN, retention's lock); DATABASE_URL when nil.
    public var sessionDatabaseURL: String?
    /// Whether this process runs delivery workers beside (or, with `notifiable work`, instead
    /// of) the API.
    public var runsWorkers: Bool = true
    public var worker = DeliveryWorkerConfiguration()
    public var webhooks = WebhookWorkerConfiguration()
    public var apnsRequestTimeout: Duration = .seconds(15)
    /// NOTIFIABLE_WEBPUSH_ALLOWED_HOSTS: the push services a browser's subscription may point at.
    public var webPushHosts = WebPushHosts.browsers
    /// NOTIFIABLE_WEB_ORIGINS: the web apps' origins whose pages may call the device API (CORS).
    public var webOrigins: Set<String> = []
    /// NOTIFIABLE_WEBPUSH_CA_FILE: a CA (PEM) trusted for push services besides the system's.
    public var webPushTrustedCAPEM: String?
    /// How long a connection may go without sending a complete request head, or sit idle between
    /// requests, before it is closed: a client holding connections open cannot use up the
    /// server's descriptors.
    public var idleTimeout: Duration = .seconds(30)
    /// How long a request may run, from its head to its answer's head, before it is answered 503:
    /// a commit waiting on a synchronous standby that is gone, or a lock held elsewhere, must not
    /// keep a client (and a load balancer's connection) waiting for ever.
    public var requestDeadline: Duration = .seconds(15)
    /// After SIGTERM, how long in-flight requests and batches may take to finish before the
    /// process stops anyway (within a container's usual 30 s grace).
    public var drainTime: Duration = .seconds(25)
    /// Addresses of reverse proxies whose X-Forwarded-For and X-Forwarded-Proto are believed (the
    /// client's address for sign-in throttling, HTTPS for the session cookie's Secure attribute).
    /// Reverse proxies whose forwarding headers are believed, as `NetworkAddress.canonical` spells them.
    public var trustedProxies: Set<String> = []
    /// When set, `GET /metrics` needs `Authorization: Bearer <token>`.
    public var metricsToken: String?
    /// Registrations, sends and status events allowed per credential and per app, across all API processes.
    public var rateLimits = RateLimits.defaults
    /// How often an API process records that it is alive, so that the others know how many share
    /// each rate limit.
    public var apiBeatInterval: Duration = .seconds(5)
    /// How many days deliveries, notifications, sandbox pushes and gone devices are kept.
    public var retentionDays = 30
    /// How often a process makes the coming days' delivery partitions and, in a worker, removes
    /// what is past retention.
    public var upkeepInterval: Duration = .seconds(3600)

    public init(databaseURL: String, masterKey: MasterKey) {
        self.databaseURL = databaseURL
        self.masterKey = masterKey
    }

    public var keys: MasterKeyring { MasterKeyring(current: masterKey, previous: previousMasterKeys) }

    /// Reads the variables the README's configuration table lists.
    public static func fromEnvironment(_ environment: [String: String]) throws(ConfigurationError) -> ServerConfiguration {
        let reader = EnvironmentReader(environment: environment)
        let databaseURL = try reader.checkedDatabaseURL(
            "DATABASE_URL", reader.required("DATABASE_URL", example: "postgres://user:password@127.0.0.1:5432/notifiable"))
        let keyText = try reader.required("NOTIFIABLE_MASTER_KEY", example: "the base64 of 32 random bytes (openssl rand -base64 32)")
        guard let masterKey = MasterKey(base64: keyText) else {
            throw ConfigurationError(
                variable: "NOTIFIABLE_MASTER_KEY",
                problem: "must be the base64 of exactly 32 bytes; make one with `openssl rand -base64 32`"
            )
        }
        var configuration = ServerConfiguration(databaseURL: databaseURL, masterKey: masterKey)
        if let previous = reader.optional("NOTIFIABLE_PREVIOUS_MASTER_KEYS") {
            configuration.previousMasterKeys = try previous.split(separator: ",").enumerated().map { index, text throws(ConfigurationError) in
                guard let key = MasterKey(base64: String(text)) else {
                    throw ConfigurationError(
                        variable: "NOTIFIABLE_PREVIOUS_MASTER_KEYS",
                        problem: "entry \(index + 1) is not the base64 of 32 bytes; list the earlier master keys separated by commas"
                    )
                }
                return key
            }
        }
        configuration.host = reader.optional("HOST") ?? configuration.host
        configuration.port = try reader.integer("PORT", in: 1...65535) ?? configuration.port
        configuration.databasePoolSize = try reader.integer("NOTIFIABLE_DATABASE_POOL_SIZE", in: 1...1000) ?? configuration.databasePoolSize
        if let url = reader.optional("NOTIFIABLE_READ_DATABASE_URL") {
            configuration.readDatabaseURL = try reader.checkedDatabaseURL("NOTIFIABLE_READ_DATABASE_URL", url)
        }
        if let mode = reader.optional("NOTIFIABLE_DATABASE_POOL_MODE") {
            guard let parsed = DatabasePoolMode(rawValue: mode.lowercased()) else {
                throw ConfigurationError(
                    variable: "NOTIFIABLE_DATABASE_POOL_MODE",
                    problem:
                        "is \"\(mode)\"; use session (a direct connection, or a pooler in session mode) or transaction (PgBouncer's pool_mode = transaction)")
            }
            configuration.databasePoolMode = parsed
        }
        if let url = reader.optional("NOTIFIABLE_SESSION_DATABASE_URL") {
            configuration.sessionDatabaseURL = try reader.checkedDatabaseURL("NOTIFIABLE_SESSION_DATABASE_URL", url)
        }
        if configuration.databasePoolMode == .transaction, configuration.sessionDatabaseURL == nil {
            throw ConfigurationError(
                variable: "NOTIFIABLE_SESSION_DATABASE_URL",
                problem:
                    "must be set with NOTIFIABLE_DATABASE_POOL_MODE=transaction: LISTEN and retention's lock need a session that a transaction pooler does not keep (point it at PostgreSQL, or at a PgBouncer database in pool_mode=session)"
            )
        }
        configuration.migrateOnStart = try reader.boolean("NOTIFIABLE_MIGRATE_ON_START") ?? true
        if let token = reader.optional("NOTIFIABLE_ADMIN_TOKEN") {
            guard token.count >= 16 else {
                throw ConfigurationError(variable: "NOTIFIABLE_ADMIN_TOKEN", problem: "must be at least 16 characters long")
            }
            configuration.adminToken = token
        }
        if let level = reader.optional("LOG_LEVEL") {
            guard let parsed = Logger.Level(rawValue: level.lowercased()) else {
                throw ConfigurationError(
                    variable: "LOG_LEVEL",
                    problem: "is \"\(level)\"; use one of trace, debug, info, notice, warning, error, critical"
                )
            }
            configuration.logLevel = parsed
        }
        if let format = reader.optional("LOG_FORMAT") {
            guard let parsed = LogFormat(rawValue: format.lowercased()) else {
                throw ConfigurationError(variable: "LOG_FORMAT", problem: "is \"\(format)\"; use text or json")
            }
            configuration.logFormat = parsed
        }
        if let seconds = try reader.integer("NOTIFIABLE_QUEUE_METRICS_SECONDS", in: 0...3600) {
            configuration.queueMetricsInterval = .seconds(seconds)
        }
        configuration.workerMetricsPort = try reader.integer("NOTIFIABLE_METRICS_PORT", in: 1...65535)
        configuration.runsWorkers = try reader.boolean("NOTIFIABLE_WORKERS") ?? true
        if let lanes = try reader.integer("NOTIFIABLE_WORKER_LANES", in: 0...64) { configuration.worker.lanes = lanes }
        if let size = try reader.integer("NOTIFIABLE_WORKER_BATCH_SIZE", in: 1...5000) { configuration.worker.batchSize = size }
        if let attempts = try reader.integer("NOTIFIABLE_MAX_ATTEMPTS", in: 1...100) { configuration.worker.retryPolicy.maxAttempts = attempts }
        if let base = try reader.integer("NOTIFIABLE_RETRY_BASE_MS", in: 1...3_600_000) { configuration.worker.retryPolicy.baseDelay = .milliseconds(base) }
        if let lease = try reader.integer("NOTIFIABLE_LEASE_SECONDS", in: 1...3600) { configuration.worker.lease = .seconds(lease) }
        if let poll = try reader.integer("NOTIFIABLE_POLL_MS", in: 1...60_000) { configuration.worker.pollInterval = .milliseconds(poll) }
        if let failures = try reader.integer("NOTIFIABLE_WEBHOOK_PAUSE_AFTER", in: 1...1000) { configuration.webhooks.pauseAfter = failures }
        if let delay = try reader.integer("NOTIFIABLE_SYNC_SIGNAL_DELAY_MS", in: 0...60_000) { configuration.syncSignalDelay = .milliseconds(delay) }
        if let timeout = try reader.integer("NOTIFIABLE_APNS_TIMEOUT_SECONDS", in: 1...300) { configuration.apnsRequestTimeout = .seconds(timeout) }
        if let idle = try reader.integer("NOTIFIABLE_IDLE_TIMEOUT_SECONDS", in: 1...3600) { configuration.idleTimeout = .seconds(idle) }
        if let deadline = try reader.integer("NOTIFIABLE_REQUEST_DEADLINE_SECONDS", in: 1...3600) { configuration.requestDeadline = .seconds(deadline) }
        if let drain = try reader.integer("NOTIFIABLE_DRAIN_SECONDS", in: 1...3600) { configuration.drainTime = .seconds(drain) }
        if let publicOnly = try reader.boolean("NOTIFIABLE_WEBHOOK_PUBLIC_TARGETS_ONLY") {
            configuration.webhooks.targets = WebhookTargets(refusesInternalAddresses: publicOnly)
        }
        if let list = reader.optional("NOTIFIABLE_WEBPUSH_ALLOWED_HOSTS") {
            guard let hosts = WebPushHosts(list: list) else {
                throw ConfigurationError(
                    variable: "NOTIFIABLE_WEBPUSH_ALLOWED_HOSTS",
                    problem: "list push service host names or *.suffix patterns, comma-separated (e.g. fcm.googleapis.com,*.push.apple.com)")
            }
            configuration.webPushHosts = hosts
        }
        if let list = reader.optional("NOTIFIABLE_WEB_ORIGINS") {
            let origins = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            for origin in origins where origin != "*" {
                guard let url = URL(string: origin), ["https", "http"].contains(url.scheme ?? ""), url.host != nil, url.path.isEmpty else {
                    throw ConfigurationError(
                        variable: "NOTIFIABLE_WEB_ORIGINS",
                        problem: "\"\(origin)\" is not an origin; list them as https://app.example.com (scheme, host, port), comma-separated")
                }
            }
            // Browsers send the scheme and host lower-case; an origin written otherwise would never match.
            configuration.webOrigins = Set(origins.map { $0.lowercased() })
        }
        if let path = reader.optional("NOTIFIABLE_WEBPUSH_CA_FILE") {
            guard let pem = try? String(contentsOfFile: path, encoding: .utf8),
                let certificates = try? NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)), !certificates.isEmpty
            else {
                throw ConfigurationError(variable: "NOTIFIABLE_WEBPUSH_CA_FILE", problem: "\(path) is not a readable PEM certificate file")
            }
            configuration.webPushTrustedCAPEM = pem
        }
        configuration.metricsToken = reader.optional("NOTIFIABLE_METRICS_TOKEN")
        if let proxies = reader.optional("NOTIFIABLE_TRUSTED_PROXIES") {
            var trusted: Set<String> = []
            for entry in proxies.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !entry.isEmpty {
                guard let address = NetworkAddress.canonical(entry) else {
                    throw ConfigurationError(
                        variable: "NOTIFIABLE_TRUSTED_PROXIES", problem: "\"\(entry)\" is not an IP address; list the proxies' addresses, comma-separated"
                    )
                }
                trusted.insert(address)
            }
            configuration.trustedProxies = trusted
        }
        // A lease shorter than a send could outlive would hand in-flight deliveries to another
        // worker and push them twice.
        guard configuration.worker.lease > configuration.apnsRequestTimeout * 2 else {
            throw ConfigurationError(
                variable: "NOTIFIABLE_LEASE_SECONDS",
                problem:
                    "must be more than twice NOTIFIABLE_APNS_TIMEOUT_SECONDS (\(configuration.apnsRequestTimeout.components.seconds) s), or deliveries still being sent would be handed to another worker"
            )
        }
        for action in RateLimitedAction.allCases {
            for perApp in [false, true] {
                let variable = RateLimits.variable(action, perApp: perApp)
                guard let text = reader.optional(variable) else { continue }
                let limit: RateLimit?
                if text.lowercased() == "off" {
                    limit = nil
                } else if let parsed = RateLimit.parse(text) {
                    limit = parsed
                } else {
                    throw ConfigurationError(
                        variable: variable, problem: "is \"\(text)\"; write a count per second, minute or hour (\"500/s\", \"6000/min\", \"100000/h\") or off")
                }
                if perApp { configuration.rateLimits.perApp[action] = limit } else { configuration.rateLimits.perCredential[action] = limit }
            }
        }
        if let seconds = try reader.integer("NOTIFIABLE_API_BEAT_SECONDS", in: 1...300) { configuration.apiBeatInterval = .seconds(seconds) }
        if let days = try reader.integer("NOTIFIABLE_RETENTION_DAYS", in: 1...3650) { configuration.retentionDays = days }
        if let directory = reader.optional("NOTIFIABLE_MIGRATIONS_DIR") {
            configuration.migrationsDirectory = URL(fileURLWithPath: directory)
        }
        return configuration
    }
}

public struct ConfigurationError: Error, CustomStringConvertible, Equatable {
    public let variable: String
    public let problem: String

    public init(variable: String, problem: String) {
        self.variable = variable
        self.problem = problem
    }

    public var description: String { "\(variable) \(problem)" }
}

struct EnvironmentReader {
    let environment: [String: String]

    func optional(_ name: String) -> String? {
        guard let value = environment[name]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        return value
    }

    /// `url`, the value of `name`, once it reads as a database URL.
    func checkedDatabaseURL(_ name: String, _ url: String) throws(ConfigurationError) -> String {
        do {
            _ = try DatabaseURL.servers(from: url)
        } catch {
            throw ConfigurationError(variable: name, problem: "\(error)")
        }
        return url
    }

    func required(_ name: String, example: String) throws(ConfigurationError) -> String {
        guard let value = optional(name) else {
            throw ConfigurationError(variable: name, problem: "is not set; set it to \(example)")
        }
        return value
    }

    func integer(_ name: String, in range: ClosedRange<Int>) throws(ConfigurationError) -> Int? {
        guard let text = optional(name) else { return nil }
        guard let value = Int(text), range.contains(value) else {
            throw ConfigurationError(variable: name, problem: "is \"\(text)\"; it must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    func boolean(_ name: String) throws(ConfigurationError) -> Bool? {
        guard let text = optional(name) else { return nil }
        switch text.lowercased() {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off": return false
        default: throw ConfigurationError(variable: name, problem: "is \"\(text)\"; use true or false")
        }
    }
}

/// What DATABASE_URL leads to, as far as a session's state goes.
public enum DatabasePoolMode: String, Sendable {
    /// PostgreSQL itself, or a pooler that gives a client one server connection while it stays
    /// connected: everything works.
    case session
    /// A pooler that gives a client a server connection for one transaction at a time (PgBouncer's
    /// `pool_mode = transaction`): statements are not prepared by name, and LISTEN and retention's
    /// lock use NOTIFIABLE_SESSION_DATABASE_URL.
    case transaction
}
