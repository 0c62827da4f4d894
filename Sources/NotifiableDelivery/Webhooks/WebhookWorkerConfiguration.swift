import NotifiableCore

/// How the webhook worker paces itself.
public struct WebhookWorkerConfiguration: Sendable {
    /// Events in one POST at most.
    public var batchSize = 100
    /// Batches sent concurrently by one worker (each to a different webhook).
    public var concurrency = 8
    /// Longest sleep when idle.
    public var pollInterval: Duration = .seconds(1)
    /// Every POST's deadline, connecting included.
    public var requestTimeout: Duration = .seconds(10)
    /// How long a claim holds a batch; more than a request's deadline, so only a dead worker loses it.
    public var lease: Duration = .seconds(60)
    /// How long delivered batches (and their events) stay listed for operators.
    public var retention: Duration = .seconds(7 * 24 * 3600)
    /// Failed attempts in a row after which a webhook is paused until an operator resumes it.
    public var pauseAfter = 12
    /// Longest wait for one database step before it is abandoned (see `databaseStep`).
    public var databaseStepDeadline: Duration = .seconds(30)
    /// Where webhooks may be sent (NOTIFIABLE_WEBHOOK_PUBLIC_TARGETS_ONLY).
    public var targets = WebhookTargets(refusesInternalAddresses: false)
    /// Backoff between attempts (its `maxAttempts` is not used: pausing ends the retries).
    public var retryPolicy = RetryPolicy(maxAttempts: .max, baseDelay: .seconds(5), maxDelay: .seconds(3600), jitter: 0.2)

    public init() {}
}
