import Logging
import PostgresNIO

/// What a NOTIFY tells the workers there is to do: deliveries to send (the default, which every
/// earlier release sends too), or Live Activities' broadcast channels' work, which only the
/// channel stage wakes for, so that a burst of pushes does not make it look for channels.
public enum WorkerWake: String, Sendable {
    case deliveries = ""
    case channels
}

/// Tells idle workers there is work (`NOTIFY notifiable_work`). Only a hint: the work is
/// already committed and workers poll anyway, so a failure here must not fail the caller.
func wakeWorkers(_ client: Database, logger: Logger, for wake: WorkerWake = .deliveries) async {
    do {
        try await client.query("SELECT pg_notify('notifiable_work', \(wake.rawValue))", logger: logger)
    } catch {
        logger.debug("could not notify workers", metadata: ["error": "\(databaseErrorText(error))"])
    }
}
