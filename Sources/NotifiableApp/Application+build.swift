import Foundation
import Hummingbird
import Logging
import NotifiableCore
import NotifiableDelivery
import NotifiableStore
import PostgresNIO
import ServiceLifecycle

/// Builds the service: the HTTP API over a PostgreSQL client, both run as services so that
/// SIGTERM stops accepting, lets in-flight requests finish, then closes the pool.
public func buildApplication(_ configuration: ServerConfiguration, logger: Logger) throws -> some ApplicationProtocol {
    return try buildApplication(configuration, postgres: try makeDatabase(configuration, logger: logger), logger: logger)
}

/// The same, over a PostgreSQL client the caller made (tests use it for their own fixtures).
/// The application runs the client; it must not be running already.
public func buildApplication(
    _ configuration: ServerConfiguration, postgres: Database, logger: Logger
) throws -> some ApplicationProtocol {
    let availability = DatabaseAvailability(database: postgres, logger: logger, requestDeadline: configuration.requestDeadline)
    let migrated = OneTimeSignal()
    let roster = APIProcessRoster(
        store: APIProcessStore(client: postgres, logger: logger), interval: configuration.apiBeatInterval, logger: logger
    ) { try await migrated.wait() }
    let reads = try makeReadDatabase(configuration, logger: logger)
    let sessions = try makeSessionDatabase(configuration, logger: logger)
    let router = buildRouter(configuration, postgres: postgres, reads: reads, logger: logger, availability: availability) { roster.share }
    let upkeep = DataUpkeep(
        postgres: postgres, sessions: sessions, retentionDays: configuration.runsWorkers ? configuration.retentionDays : nil,
        interval: configuration.upkeepInterval, logger: logger
    ) { try await migrated.wait() }
    var services: [any Service] = [postgres, availability, roster, upkeep]
    if let reads { services.append(reads) }
    if let sessions { services.append(sessions) }
    if configuration.runsWorkers {
        services.append(makeDeliveryWorker(configuration, postgres: postgres, sessions: sessions, logger: logger) { try await migrated.wait() })
        services.append(makeWebhookWorker(configuration, postgres: postgres, logger: logger) { try await migrated.wait() })
    }

    var app = Application(
        responder: DatabaseOutageResponder(inner: router.buildResponder(), availability: availability),
        // The idle timeout closes a connection that has not completed a request head (or sat idle
        // after an answer) for that long: Hummingbird counts activity in whole HTTP parts, so bytes
        // trickled into a head never reset it.
        server: .http1(
            configuration: .init(
                additionalChannelHandlers: [MalformedRequestAnswer()],
                idleTimeout: TimeAmount(configuration.idleTimeout)
            )),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "NotifiableServer"),
        services: services,
        logger: logger
    )
    app.beforeServerStarts {
        do {
            if configuration.migrateOnStart { try await migrate(configuration, postgres: postgres, logger: logger) }
            await migrated.fire(.success(()))
        } catch {
            await migrated.fire(.failure(error))
            throw error
        }
    }
    return app
}

/// Every route of the API, with its middleware: what the application serves, and what the
/// OpenAPI document must describe.
///
/// `processShare` is this process's share of each rate limit (1/N with N API processes answering).
/// `reads` (a standby) answers what operators read and nobody needs to see their own writes in:
/// the dashboard's pages, the notification listings and the queue gauges of `/metrics`.
public func buildRouter(
    _ configuration: ServerConfiguration, postgres: Database, reads: Database? = nil, logger: Logger,
    availability: DatabaseAvailability? = nil, processShare: @escaping @Sendable () -> Double = { 1 }
) -> Router<NotifiableRequestContext> {
    let reads = reads ?? postgres
    let apps = AppStore(client: postgres, keys: configuration.keys, logger: logger)
    let devices = DeviceStore(client: postgres, logger: logger)
    let gatewaySettings = GatewaySettingsStores(client: postgres, keys: configuration.keys, logger: logger)

    let router = Router(context: NotifiableRequestContext.self)
    // Outermost, so every answer carries them, error answers included.
    router.add(middleware: SecurityHeadersMiddleware())
    // The log sees every answer, error answers included, because errors become responses inside it.
    router.add(middleware: RequestLogMiddleware())
    // Outside the error middleware too, so error answers count with their status.
    router.add(middleware: HTTPMetricsMiddleware(factory: configuration.metrics.factory))
    // Outside the error middleware, so a browser can read an error answer too.
    if !configuration.webOrigins.isEmpty { router.add(middleware: BrowserOriginsMiddleware(origins: configuration.webOrigins)) }
    router.add(middleware: ErrorMiddleware())
    HealthController(postgres: postgres).addRoutes(to: router)
    OpenAPIController().addRoutes(to: router)
    // One count of failed guesses for every bearer token and the dashboard's sign-in.
    let throttle = SignInThrottle()
    MetricsController.addRoutes(to: router, configuration, postgres: reads, logger: logger, throttle: throttle)

    let userTokens = UserTokenVerifier(settings: UserTokenSettingsStore(client: postgres, logger: logger), keys: configuration.keys, now: { Date() })
    // While the database is away, what needs it is answered 503 before any work.
    let databaseGate = availability.map { DatabaseAvailabilityMiddleware<NotifiableRequestContext>(availability: $0) }
    let credentials = CredentialCache(apps: apps)
    let api = router.group("api/v1").addIfPresent(databaseGate).add(
        middleware: APIAuthMiddleware(credentials: credentials, seen: SeenRequestStore(client: postgres, logger: logger)))
    let limiter = RateLimiter(limits: configuration.rateLimits, share: processShare, factory: configuration.metrics.factory)
    DeviceTokensController(devices: devices, userTokens: userTokens, webPushHosts: configuration.webPushHosts).addRoutes(to: api, limiter: limiter)
    DeviceTagsController(devices: devices).addRoutes(to: api, limiter: limiter)
    WebPushPublicKeyController(settings: gatewaySettings.webpush).addRoutes(to: api)
    UserTokensController(verifier: userTokens).addRoutes(to: api)
    let userNotifications = UserNotificationStore(client: postgres, logger: logger, syncDelay: configuration.syncSignalDelay)
    let userNotificationRoutes = UserNotificationsController(store: userNotifications)
    userNotificationRoutes.addServerRoutes(to: api)
    userNotificationRoutes.addUserRoutes(
        to: router.group("api/v1/me").addIfPresent(databaseGate).add(middleware: UserTokenMiddleware(verifier: userTokens)), limiter: limiter)
    NotificationsController(
        notifications: NotificationStore(client: postgres, logger: logger), listings: NotificationStore(client: reads, logger: logger),
        userNotifications: userNotifications,
        verifiedAliases: VerifiedAliasGate(verifier: userTokens)
    ).addRoutes(to: api, limiter: limiter)
    RichContentController(
        contents: NotificationContentStore(client: postgres, logger: logger), devices: devices, verifiedAliases: VerifiedAliasGate(verifier: userTokens)
    ).addRoutes(to: api, limiter: limiter)
    LiveActivitiesController(activities: LiveActivityStore(client: postgres, logger: logger)).addRoutes(to: api, limiter: limiter)
    let personalData = PersonalData(client: postgres, keys: configuration.keys, logger: logger)
    UsersDataController(personalData: personalData, trustedProxies: configuration.trustedProxies).addRoutes(to: api)

    let audit = AuditLogStore(client: postgres, logger: logger)
    let admin = router.group("admin").addIfPresent(databaseGate).add(
        middleware: AdminAccessMiddleware(
            adminToken: configuration.adminToken, keys: OperatorKeyStore(client: postgres, logger: logger), throttle: throttle,
            trustedProxies: configuration.trustedProxies)
    ).add(middleware: AuditMiddleware(log: audit, channel: .adminAPI, trustedProxies: configuration.trustedProxies))
    let webhooks = WebhookStore(client: postgres, keys: configuration.keys, logger: logger)
    QueueAdminController(queue: QueueAdminStore(client: postgres, logger: logger)).addRoutes(to: admin)
    let administration = AppAdministration(apps: apps, credentials: credentials)
    AppsAdminController(
        apps: apps, administration: administration, gatewaySettings: gatewaySettings, userTokens: userTokens.settings,
        serviceRetentionDays: configuration.retentionDays
    ).addRoutes(to: admin)
    WebhooksAdminController(webhooks: webhooks, targets: configuration.webhooks.targets).addRoutes(to: admin)
    GatewaySettingsAdminController(store: gatewaySettings.apns).addRoutes(to: admin)
    GatewaySettingsAdminController(store: gatewaySettings.fcm).addRoutes(to: admin)
    GatewaySettingsAdminController(store: gatewaySettings.webpush).addRoutes(to: admin)
    SandboxAdminController(apps: apps, pushes: SandboxPushStore(client: postgres, logger: logger)).addRoutes(to: admin)

    let console = ConsoleRequests(
        session: configuration.adminToken.map { DashboardSession(adminToken: $0, sessions: DashboardSessionStore(client: postgres, logger: logger)) },
        apps: apps)
    let operators = OperatorStore(client: postgres, logger: logger)
    let passwords = PasswordChecks()
    let queue = QueueAdminStore(client: postgres, logger: logger), queueReads = QueueAdminStore(client: reads, logger: logger)
    let notificationReads = NotificationStore(client: reads, logger: logger), sending = NotificationStore(client: postgres, logger: logger)
    let finder = DeviceFinder(client: reads, logger: logger), trends = TrendStore(client: reads, logger: logger)
    DashboardController(
        session: console.session, audit: audit, trustedProxies: configuration.trustedProxies,
        signIn: ConsoleSignIn(
            console: console, adminToken: configuration.adminToken, throttle: throttle, passwords: passwords, operators: operators, audit: audit,
            trustedProxies: configuration.trustedProxies),
        groups: [
            ConsoleNotificationPages(
                console: console, notifications: notificationReads, sending: sending, queue: queue,
                queries: DashboardStore(client: reads, logger: logger), devices: devices, finder: finder, administration: administration,
                activities: LiveActivityStore(client: reads, logger: logger)),
            ConsoleAppSettings(
                console: console, administration: administration, gatewaySettings: gatewaySettings, webhooks: webhooks,
                webhookTargets: configuration.webhooks.targets, rateLimits: configuration.rateLimits,
                serviceRetentionDays: configuration.retentionDays, queueReads: queueReads, audit: audit),
            ConsoleCompose(console: console, sending: sending, contents: NotificationContentStore(client: postgres, logger: logger)),
            ConsoleFind(console: console, devices: devices, finder: finder, notifications: notificationReads),
            ConsoleQueuePages(console: console, queue: queue, queueReads: queueReads, trends: trends),
            ConsoleTrends(console: console, trends: trends),
            ConsolePeople(console: console, personalData: personalData, trustedProxies: configuration.trustedProxies),
            ConsoleOperators(console: console, operators: operators, passwords: passwords, audit: audit),
            ConsoleKeys(console: console, operatorKeys: OperatorKeyStore(client: postgres, logger: logger)),
        ]
    ).addRoutes(to: router)
    return router
}

/// The delivery worker of a process, with a sender for each provider it can reach
/// (`replacingSenders` instead, for the queue benchmark).
public func makeDeliveryWorker(
    _ configuration: ServerConfiguration, postgres: Database, sessions: Database? = nil, logger: Logger,
    replacingSenders: [Provider: any PushSender]? = nil,
    beforeStart: @escaping @Sendable () async throws -> Void = {}
) -> DeliveryWorker {
    let apnsSettings = APNsSettingsStore(client: postgres, keys: configuration.keys, logger: logger)
    let fcmSettings = FCMSettingsStore(client: postgres, keys: configuration.keys, logger: logger)
    let apns = APNsSender(
        settings: { appID in try await apnsSettings.settings(appID: appID) }, logger: logger, requestTimeout: configuration.apnsRequestTimeout
    )
    let fcm = FCMSender(
        settings: { appID in try await fcmSettings.settings(appID: appID) }, logger: logger, requestTimeout: configuration.apnsRequestTimeout
    )
    let devices = DeviceStore(client: postgres, logger: logger)
    let webPushSettings = WebPushSettingsStore(client: postgres, keys: configuration.keys, logger: logger)
    var senders: [Provider: any PushSender] = [.apns: apns, .fcm: fcm]
    // The CA was read at start (ServerConfiguration); should the client still not take it, browsers
    // get nothing, and the log says why.
    do {
        senders[.webpush] = try WebPushSender(
            settings: { appID in try await webPushSettings.settings(appID: appID) }, keys: { try await devices.pushKeys(deviceID: $0) },
            route: .endpoints(configuration.webPushHosts), trustedCAPEM: configuration.webPushTrustedCAPEM, logger: logger,
            requestTimeout: configuration.apnsRequestTimeout)
    } catch {
        logger.error("Web Push cannot send: its HTTP client did not start", metadata: ["error": "\(String(reflecting: error))"])
    }
    var worker = configuration.worker
    worker.sendBudget = configuration.apnsRequestTimeout
    return DeliveryWorker(
        postgres: postgres, sessions: sessions, senders: replacingSenders ?? senders,
        sandbox: BuiltInSandbox(
            webPushKeys: { try await devices.pushKeys(deviceID: $0) }, logger: logger, requestTimeout: configuration.apnsRequestTimeout),
        configuration: worker, metrics: DeliveryMetrics(factory: configuration.metrics.factory),
        logger: logger, beforeStart: beforeStart
    )
}

/// The worker that sends apps' webhook events.
public func makeWebhookWorker(
    _ configuration: ServerConfiguration, postgres: Database, logger: Logger,
    beforeStart: @escaping @Sendable () async throws -> Void = {}
) -> WebhookWorker {
    WebhookWorker(
        postgres: postgres, keys: configuration.keys, configuration: configuration.webhooks,
        metrics: WebhookMetrics(factory: configuration.metrics.factory), logger: logger, beforeStart: beforeStart
    )
}

/// Applies pending migrations from the configured folder.
public func migrate(_ configuration: ServerConfiguration, postgres: Database, logger: Logger) async throws {
    guard let directory = configuration.migrationsDirectory ?? Migrator.defaultDirectory() else {
        throw MigrationError(description: "cannot find the Migrations folder; set NOTIFIABLE_MIGRATIONS_DIR")
    }
    try await Migrator(client: postgres, logger: logger).migrate(try Migrator.load(from: directory))
}

/// The service's database: the servers of DATABASE_URL, each pooled up to the configured size.
public func makeDatabase(_ configuration: ServerConfiguration, logger: Logger) throws -> Database {
    try Database(
        url: configuration.databaseURL, poolSize: configuration.databasePoolSize, applicationName: "notifiable",
        preparesStatements: configuration.databasePoolMode == .session, logger: logger)
}

/// Where a session is kept for as long as it is needed (LISTEN, retention's locked pass):
/// NOTIFIABLE_SESSION_DATABASE_URL's servers, a few connections; nil to use DATABASE_URL's pool.
public func makeSessionDatabase(_ configuration: ServerConfiguration, logger: Logger) throws -> Database? {
    try configuration.sessionDatabaseURL.map {
        try Database(url: $0, poolSize: 4, applicationName: "notifiable-session", logger: logger)
    }
}

/// Where operators' reads go: NOTIFIABLE_READ_DATABASE_URL's servers (a standby), or nil to read
/// the primary.
public func makeReadDatabase(_ configuration: ServerConfiguration, logger: Logger) throws -> Database? {
    try configuration.readDatabaseURL.map {
        try Database(url: $0, poolSize: configuration.databasePoolSize, applicationName: "notifiable-read", logger: logger)
    }
}

extension RouterGroup {
    fileprivate func addIfPresent(_ middleware: (some RouterMiddleware<Context>)?) -> RouterGroup<Context> {
        guard let middleware else { return self }
        return add(middleware: middleware)
    }
}
