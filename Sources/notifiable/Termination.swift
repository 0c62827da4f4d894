import Foundation
import Logging
import ServiceLifecycle

/// Runs `services` until SIGTERM or SIGINT, then lets them finish what is in flight for at most
/// `drainTime` before cancelling them. A process whose database commits hang (a synchronous
/// standby lost) may not finish even then: five seconds later it exits anyway.
func runUntilTerminated(_ services: [any Service], drainTime: Duration, logger: Logger) async throws {
    // Last in the list, so the first told of the shutdown.
    let services = services + [ShutdownBackstop(after: drainTime + .seconds(5), logger: logger)]
    var configuration = ServiceGroupConfiguration(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
    configuration.maximumGracefulShutdownDuration = drainTime
    try await ServiceGroup(configuration: configuration).run()
}

/// Once a graceful shutdown begins, ends the process `after` that long if it is still running.
/// ServiceLifecycle's own limit on cancellation traps (`fatalError`); this exits with status 1
/// and a log line naming the cause.
private struct ShutdownBackstop: Service {
    let after: Duration
    let logger: Logger

    func run() async throws {
        try? await gracefulShutdown()
        let after = after
        let logger = logger
        Task.detached {
            try? await Task.sleep(for: after)
            logger.error(
                "still stopping \(after) after the signal (work waiting on the database that never answered); exiting now")
            exit(1)
        }
    }
}
