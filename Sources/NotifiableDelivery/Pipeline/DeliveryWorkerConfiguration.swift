import NotifiableCore

/// How a worker process paces itself.
public struct DeliveryWorkerConfiguration: Sendable {
    /// Deliveries claimed at once by one lane.
    public var batchSize = 500
    /// Lanes claim, send and record independently, so one lane's batch waiting on its
    /// slowest push does not stall the others. 0 makes a fan-out-only worker.
    public var lanes = 4
    /// How long a claim holds a delivery; after it, a rescuer returns the delivery to the queue.
    public var lease: Duration = .seconds(60)
    /// Devices examined per fan-out transaction.
    public var fanOutBatchSize = 1_000
    /// How long a worker fans out one notification before it lets notifications accepted since
    /// go first (FanOutStage).
    public var fanOutTurn: Duration = .milliseconds(250)
    /// Longest sleep when idle (NOTIFY usually wakes the worker sooner).
    public var pollInterval: Duration = .milliseconds(500)
    /// How often expired leases are rescued and expired notifications settled.
    public var maintenanceInterval: Duration = .seconds(5)
    /// Longest wait for one database step of a loop (a claim, a record, a fan-out batch) before it is
    /// abandoned and the loop carries on (see `databaseStep`).
    public var databaseStepDeadline: Duration = .seconds(30)
    /// How long a delivery's send takes at most (a gateway request's deadline). A send starts only
    /// while its batch's lease is known to outlast this; renewals keep the lease beyond it after.
    public var sendBudget: Duration = .seconds(15)
    public var retryPolicy = RetryPolicy()

    public init() {}
}
