import ArgumentParser
import CoreMetrics
import Logging
import NotifiableApp

@main
struct Notifiable: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notifiable",
        abstract: "NotifiableServer: a self-hosted push notification service.",
        version: BuildInfo.version,
        subcommands: [
            Serve.self, Work.self, Migrate.self, Apps.self, Devices.self, Users.self, Notifications.self, Queue.self, Retention.self,
            Operators.self, Audit.self, Keys.self, Sign.self, Call.self, Health.self, FakeAPNs.self, FakeFCM.self, FakeWebPush.self,
            BenchRegistrationCeiling.self,
        ]
    )
}

/// Logs to standard error at the configured level, as text or one JSON object per line; call
/// once, before anything logs.
func bootstrapLogging(level: Logger.Level, format: LogFormat = .text) -> Logger {
    LoggingSystem.bootstrap { label in
        switch format {
        case .text:
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        case .json:
            var handler = JSONLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
    var logger = Logger(label: "notifiable")
    logger.logLevel = level
    return logger
}

/// Makes the process's metrics registry the one swift-metrics reports to; call once.
func bootstrapMetrics(_ metrics: ServiceMetrics) {
    MetricsSystem.bootstrap(metrics.factory)
}
