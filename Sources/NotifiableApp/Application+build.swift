import Foundation
import Hummingbird
import Logging
import NotifiableCore
import NotifiableStore
import PostgresNIO

/// Builds the service: the HTTP API over a PostgreSQL client, both run as services so that
/// SIGTERM stops accepting, lets in-flight requests finish, then closes the pool.
public func buildApplication(_ configuration: ServerConfiguration, logger: Logger) throws -> some ApplicationProtocol {
    let postgres = PostgresClient(
        configuration: try postgresConfiguration(configuration),
        backgroundLogger: logger
    )
    return try buildApplication(configuration, postgres: postgres, logger: logger)
}

/// The same, over a PostgreSQL client the caller made (tests use it for their own fixtures).
/// The application runs the client; it must not be running already.
public func buildApplication(
    _ configuration: ServerConfiguration, postgres: PostgresClient, logger: Logger
) throws -> some ApplicationProtocol {
    let apps = AppRegistry(client: postgres, masterKey: configuration.masterKey, logger: logger)
    let devices = DeviceRegistry(client: postgres, logger: logger)

    let router = Router(context: NotifiableRequestContext.self)
    // The log sees every answer, error answers included, because errors become responses inside it.
    router.add(middleware: RequestLogMiddleware())
    router.add(middleware: ErrorMiddleware())
    HealthController(postgres: postgres).addRoutes(to: router)

    let api = router.group("api/v1").add(middleware: APIAuthMiddleware(apps: apps))
    DeviceTokensController(devices: devices).addRoutes(to: api)

    var app = Application(
        router: router,
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "NotifiableServer"),
        services: [postgres],
        logger: logger
    )
    if configuration.migrateOnStart {
        let directory = configuration.migrationsDirectory ?? Migrator.defaultDirectory()
        app.beforeServerStarts {
            guard let directory else {
                throw MigrationError(description: "cannot find the Migrations folder; set NOTIFIABLE_MIGRATIONS_DIR")
            }
            try await Migrator(client: postgres, logger: logger).migrate(try Migrator.load(from: directory))
        }
    }
    return app
}

/// The PostgreSQL client settings for a configuration.
public func postgresConfiguration(_ configuration: ServerConfiguration) throws -> PostgresClient.Configuration {
    var postgres = try DatabaseURL.configuration(from: configuration.databaseURL)
    postgres.options.maximumConnections = configuration.databasePoolSize
    return postgres
}
