import ArgumentParser
import Logging

@main
struct Notifiable: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notifiable",
        abstract: "NotifiableServer: a self-hosted push notification service.",
        subcommands: [
            Serve.self, Work.self, Migrate.self, Apps.self, Devices.self, Notifications.self, Queue.self,
            Keys.self, Sign.self, Call.self, FakeAPNs.self, FakeFCM.self,
        ]
    )
}

/// Logs to standard error at the configured level; call once, before anything logs.
func bootstrapLogging(level: Logger.Level) -> Logger {
    LoggingSystem.bootstrap { label in
        var handler = StreamLogHandler.standardError(label: label)
        handler.logLevel = level
        return handler
    }
    var logger = Logger(label: "notifiable")
    logger.logLevel = level
    return logger
}
