/// The `# HELP` text of every metric the service exposes, in one place: swift-metrics, through
/// which the code counts, carries no help text, so the exposition adds it (`ServiceMetrics`).
/// A metric missing here fails `promtool check metrics` in the tests.
enum MetricHelp {
    static let texts: [String: String] = [
        "notifiable_build_info": "The running release (version label); always 1.",
        "notifiable_deliveries_total": "Send attempts by app, provider and outcome (sent, retrying, failed, dead, token_invalidated).",
        "notifiable_delivery_retries_total": "Send attempts that were retries (attempt 2 or later), by provider.",
        "notifiable_token_invalidations_total": "Devices invalidated because a gateway called their token dead, by provider.",
        "notifiable_gateway_request_duration_seconds": "Time one push spent in its sender, by provider and mode (live or sandbox).",
        "notifiable_http_requests_total": "HTTP requests answered, by method, route and status.",
        "notifiable_http_request_duration_seconds": "Time to answer an HTTP request, by method, route and status.",
        "notifiable_queue_deliveries": "Deliveries in each queue state, sampled from the database.",
        "notifiable_database_replica_lag_seconds": "How far the server the read pool reads lags behind its primary (0 on a primary).",
        "notifiable_queue_notifications_fanning_out": "Notifications whose audience is still being resolved, sampled from the database.",
        "notifiable_queue_oldest_ready_age_seconds": "Age of the oldest delivery ready to send, sampled from the database.",
        "notifiable_queue_sample_failures_total": "Queue samples that could not be read from the database.",
        "notifiable_queue_lease_rescues_total": "Deliveries returned to the queue after their worker's lease ran out.",
        "notifiable_delivery_unknown_outcomes_total":
            "Attempts with no answer after the request may have reached the gateway; the only ones that can show a push twice.",
        "notifiable_queue_given_back_total": "Deliveries handed back unsent because their lease was not known to outlast a send.",
        "notifiable_queue_late_renewals_total": "Lease renewals asked with less than a third of the lease left (a starved process).",
        "notifiable_queue_expired_total": "Deliveries settled dead because their notification expired while they waited.",
        "notifiable_apps_misconfigured": "Apps whose gateway settings a gateway refused, by provider, sampled from the database.",
        "notifiable_webhook_batches_total": "Webhook POSTs by outcome (delivered, failed).",
        "notifiable_webhooks_paused_total": "Webhooks paused after failing too many times in a row.",
        "notifiable_rate_limited_total": "Requests refused 429 by a rate limit, by action (registrations, sends, events), scope (credential, app) and app.",
        "process_cpu_seconds_total": "CPU time the process has used, user and system, in seconds.",
        "process_resident_memory_bytes": "Resident memory of the process in bytes.",
        "process_open_fds": "File descriptors the process has open.",
        "process_max_fds": "The process's limit on open file descriptors (its soft limit).",
        "process_start_time_seconds": "When the process started, in seconds since 1970.",
    ]

    private static let typePrefix = Array("# TYPE ".utf8)

    /// `exposition` with a `# HELP` line before each family's `# TYPE` line whose name has a text.
    static func adding(to exposition: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(exposition.count + texts.count * 96)
        for line in exposition.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            if line.starts(with: typePrefix) {
                let name = String(decoding: line.dropFirst(7).prefix { $0 != UInt8(ascii: " ") }, as: UTF8.self)
                if let help = texts[name] { out += Array("# HELP \(name) \(help)\n".utf8) }
            }
            out += line
            out.append(UInt8(ascii: "\n"))
        }
        if out.last == UInt8(ascii: "\n"), exposition.last != UInt8(ascii: "\n") { out.removeLast() }
        return out
    }
}
