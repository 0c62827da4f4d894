import Logging
import PostgresNIO

/// Tells idle workers there is work (`NOTIFY notifiable_work`). Only a hint: the work is
/// already committed and workers poll anyway, so a failure here must not fail the caller.
func wakeWorkers(_ client: Database, logger: Logger) async {
    do {
        try await client.query("SELECT pg_notify('notifiable_work', '')", logger: logger)
    } catch {
        logger.debug("could not notify workers", metadata: ["error": "\(databaseErrorText(error))"])
    }
}
