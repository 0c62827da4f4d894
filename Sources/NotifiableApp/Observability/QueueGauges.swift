import CoreMetrics
import Logging
import NotifiableCore
import NotifiableStore

/// Queue depth as gauges, sampled when `/metrics` is scraped, at most once per `interval`:
/// `notifiable_queue_deliveries{state}` (available, retrying, running, dead),
/// `notifiable_queue_oldest_ready_age_seconds`, `notifiable_queue_notifications_fanning_out`,
/// `notifiable_apps_misconfigured{provider}` and `notifiable_database_replica_lag_seconds` (of
/// the read pool they come from, NOTIFIABLE_READ_DATABASE_URL; 0 on a primary).
///
/// Sampled on scrape rather than by the workers' maintenance loop because `/metrics` lives in
/// the API process, which may run without workers (`serve --no-workers`), and a worker's own
/// port (NOTIFIABLE_METRICS_PORT) is optional. The interval bounds the cost whatever the number of scrapers
/// (concurrent scrapes share one query), and nothing is queried while nobody scrapes. The query
/// itself reads only waiting rows through partial indexes (`QueueAdminStore.depth()`).
actor QueueGauges {
    private let queue: QueueAdminStore
    private let interval: Duration
    private let available, retrying, running, dead, oldestReadyAge, fanningOut, replicaLag: Gauge
    private let misconfigured: [Provider: Gauge]
    private let failures: CoreMetrics.Counter
    private var sampledAt: ContinuousClock.Instant?
    private var sampling: Task<Void, Never>?

    init(queue: QueueAdminStore, interval: Duration, factory: any MetricsFactory) {
        self.queue = queue
        self.interval = interval
        func depth(_ state: String) -> Gauge {
            Gauge(label: "notifiable_queue_deliveries", dimensions: [("state", state)], factory: factory)
        }
        available = depth(DeliveryState.available.rawValue)
        retrying = depth(DeliveryState.retrying.rawValue)
        running = depth(DeliveryState.running.rawValue)
        dead = depth(DeliveryState.dead.rawValue)
        oldestReadyAge = Gauge(label: "notifiable_queue_oldest_ready_age_seconds", factory: factory)
        fanningOut = Gauge(label: "notifiable_queue_notifications_fanning_out", factory: factory)
        replicaLag = Gauge(label: "notifiable_database_replica_lag_seconds", factory: factory)
        misconfigured = Dictionary(
            uniqueKeysWithValues: Provider.allCases.map { provider in
                (provider, Gauge(label: "notifiable_apps_misconfigured", dimensions: [("provider", provider.rawValue)], factory: factory))
            })
        failures = CoreMetrics.Counter(label: "notifiable_queue_sample_failures_total", factory: factory)
    }

    /// Samples the queue unless a sample is fresh enough; waits for a sample under way. A failed
    /// or slow query leaves the previous values and counts a failure; the scrape still answers.
    func refresh(logger: Logger) async {
        if let sampling { return await sampling.value }
        if let sampledAt, ContinuousClock.now - sampledAt < interval { return }
        let task = Task { await self.sample(logger: logger) }
        sampling = task
        await task.value
        sampling = nil
        sampledAt = .now
    }

    private func sample(logger: Logger) async {
        do {
            let queue = self.queue
            let depth = try await withDeadline(.seconds(2)) { try await queue.depth() }
            available.record(depth.available)
            retrying.record(depth.retrying)
            running.record(depth.running)
            dead.record(depth.dead)
            oldestReadyAge.record(depth.oldestReadyAgeSeconds)
            fanningOut.record(depth.fanningOut)
            replicaLag.record(depth.replicaLagSeconds)
            for (provider, gauge) in misconfigured { gauge.record(depth.misconfigured[provider] ?? 0) }
        } catch {
            failures.increment()
            logger.warning("could not sample the queue for metrics", metadata: ["error": "\(String(reflecting: error))"])
        }
    }
}
