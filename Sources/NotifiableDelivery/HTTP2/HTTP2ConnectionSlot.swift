import Logging
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// One push on its way through ``HTTP2Client``.
///
/// `@unchecked Sendable`: the `let`s are set at creation; every `var` is read and written only on the event loop
/// of `slot` (the caller hands the push over through the slot's mutex-protected inbox, and from then on only that
/// loop touches it).
final class HTTP2PendingRequest: @unchecked Sendable {
    enum State {
        /// Made by `send`, not yet taken from the inbox by the event loop.
        case new
        /// Waiting in the slot's queue for a connection with a free stream.
        case queued
        /// On a stream; `handler` and `streamID` say which.
        case inFlight
        /// Answered or failed; the continuation has been resumed.
        case finished
    }

    let wire: HTTP2Request
    let deadline: NIODeadline
    let slot: HTTP2ConnectionSlot

    // Event-loop state.
    var state = State.new
    /// Cancellation arrived before the event loop took the push from the inbox.
    var cancelRequested = false
    var continuation: UnsafeContinuation<HTTP2Response, any Error>?
    var handler: HTTP2ConnectionHandler?
    var streamID = HTTP2StreamID.rootStream
    var status: Int?
    var headers: HPACKHeaders = [:]
    var body: ByteBuffer?

    init(wire: HTTP2Request, deadline: NIODeadline, slot: HTTP2ConnectionSlot) {
        self.wire = wire
        self.deadline = deadline
        self.slot = slot
    }

    var isFinished: Bool {
        if case .finished = state { return true }
        return false
    }

    /// Back to the queue (its stream was never processed): forgets any partial answer.
    func requeue() {
        state = .queued
        handler = nil
        status = nil
        headers = [:]
        body = nil
    }

    func succeed(_ response: HTTP2Response) {
        complete(.success(response))
    }

    func fail(_ error: any Error) {
        complete(.failure(error))
    }

    private func complete(_ result: Result<HTTP2Response, any Error>) {
        if case .finished = state { return }
        state = .finished
        handler = nil
        body = nil
        slot.load.subtract(1, ordering: .relaxed)
        if let continuation {
            self.continuation = nil
            continuation.resume(with: result)
        }
    }
}

/// One of the client's connection slots: an inbox any thread can drop pushes into, and (on its event loop)
/// a queue, the current connection and the deadline timer. A slot outlives its connections: it opens a new
/// one when pushes are waiting and there is none.
final class HTTP2ConnectionSlot: Sendable {
    typealias Continuation = UnsafeContinuation<HTTP2Response, any Error>
    typealias InboxItem = (request: HTTP2PendingRequest, continuation: Continuation)

    struct Inbox {
        var items: [InboxItem] = []
        var drainScheduled = false
        var closed = false
    }

    let eventLoop: any EventLoop
    /// Pushes sent to this slot and not finished yet (for choosing the least-loaded slot).
    let load = Atomic<Int>(0)
    private let inbox = Mutex(Inbox())
    private let state: NIOLoopBoundBox<HTTP2SlotState>

    init(index: Int, eventLoop: any EventLoop, configuration: HTTP2ClientConfiguration) {
        self.eventLoop = eventLoop
        self.state = .makeBoxSendingValue(
            HTTP2SlotState(index: index, eventLoop: eventLoop, configuration: configuration),
            eventLoop: eventLoop
        )
    }

    /// Any thread. Hands the push to the event loop; the first push into an empty inbox schedules the drain.
    func enqueue(_ request: HTTP2PendingRequest, _ continuation: Continuation) {
        load.add(1, ordering: .relaxed)
        let (accepted, mustSchedule) = inbox.withLock { inbox -> (Bool, Bool) in
            if inbox.closed { return (false, false) }
            inbox.items.append((request, continuation))
            if inbox.drainScheduled { return (true, false) }
            inbox.drainScheduled = true
            return (true, true)
        }
        guard accepted else {
            load.subtract(1, ordering: .relaxed)
            continuation.resume(throwing: HTTP2ClientError.shutDown)
            return
        }
        if mustSchedule {
            eventLoop.execute { self.drain() }
        }
    }

    /// Any thread: the caller's task was cancelled.
    func cancel(_ request: HTTP2PendingRequest) {
        eventLoop.execute { self.state.value.cancel(request) }
    }

    func shutdown() -> EventLoopFuture<Void> {
        eventLoop.flatSubmit { self.state.value.shutdown(remaining: self.closeInbox()) }
    }

    /// On the event loop: everything in the inbox goes to the queue (or straight onto streams), one flush.
    private func drain() {
        let items = inbox.withLock { inbox -> [InboxItem] in
            inbox.drainScheduled = false
            var items: [InboxItem] = []
            swap(&items, &inbox.items)
            return items
        }
        state.value.admit(items)
    }

    private func closeInbox() -> [InboxItem] {
        inbox.withLock { inbox -> [InboxItem] in
            inbox.closed = true
            var items: [InboxItem] = []
            swap(&items, &inbox.items)
            return items
        }
    }
}

/// A slot's event-loop state (not `Sendable`: it is only reached through the slot's `NIOLoopBoundBox`, and
/// its connection handlers run on the same loop).
final class HTTP2SlotState {
    private enum Phase {
        /// No connection; one is opened when pushes wait.
        case idle
        case connecting(HTTP2ConnectionHandler, timeout: Scheduled<Void>, channel: EventLoopFuture<any Channel>)
        case ready(HTTP2ConnectionHandler)
        case shutDown
    }

    private let index: Int
    private let eventLoop: any EventLoop
    private let configuration: HTTP2ClientConfiguration
    private var logger: Logger
    private var phase = Phase.idle
    /// Pushes waiting for a stream, oldest first. Finished ones (deadline, cancellation) are skipped lazily.
    private var waiting = CircularBuffer<HTTP2PendingRequest>(initialCapacity: 64)
    /// Connections that received GOAWAY or ran out of stream ids, finishing their streams before closing.
    private var retiring: [HTTP2ConnectionHandler] = []
    private var timer: Scheduled<Void>?
    private var timerDeadline: NIODeadline?

    init(index: Int, eventLoop: any EventLoop, configuration: HTTP2ClientConfiguration) {
        self.index = index
        self.eventLoop = eventLoop
        self.configuration = configuration
        var logger = configuration.logger
        logger[metadataKey: "apns_endpoint"] = "\(configuration.endpoint.authority)"
        logger[metadataKey: "apns_connection"] = "\(index)"
        self.logger = logger
    }

    // MARK: Pushes in

    func admit(_ items: [HTTP2ConnectionSlot.InboxItem]) {
        let now = NIODeadline.now()
        for (request, continuation) in items {
            request.continuation = continuation
            if case .shutDown = phase {
                request.fail(HTTP2ClientError.shutDown)
            } else if request.cancelRequested {
                request.fail(CancellationError())
            } else if request.deadline <= now {
                request.fail(HTTP2ClientError.notSent("deadline passed while waiting for a stream"))
            } else {
                request.state = .queued
                waiting.append(request)
                armTimer(request.deadline)
            }
        }
        pump()
    }

    func cancel(_ request: HTTP2PendingRequest) {
        switch request.state {
        case .new:
            request.cancelRequested = true
        case .queued:
            request.fail(CancellationError())
        case .inFlight:
            let handler = request.handler
            let streamID = request.streamID
            request.fail(CancellationError())
            handler?.reset(streamID)
            handler?.flushIfNeeded()
            pump()
        case .finished:
            break
        }
    }

    // MARK: Pushes out

    /// Puts waiting pushes on streams while the connection has room; opens a connection if there is none.
    private func pump() {
        switch phase {
        case .shutDown, .connecting:
            return
        case .idle:
            while let first = waiting.first, first.isFinished { waiting.removeFirst() }
            if !waiting.isEmpty { connect() }
        case .ready(let handler):
            while handler.canOpenStream, let request = waiting.popFirst() {
                if case .queued = request.state { handler.open(request) }
            }
            handler.flushIfNeeded()
            if handler.isExhausted, case .ready(let current) = phase, current === handler {
                logger.debug("APNs connection used all its stream ids; replacing it")
                retire(handler)
                phase = .idle
                pump()
            }
        }
    }

    private func retire(_ handler: HTTP2ConnectionHandler) {
        retiring.append(handler)
        handler.closeWhenIdle()
    }

    private func connect() {
        let configuration = configuration
        let handler = HTTP2ConnectionHandler(
            slot: self, logger: logger, authority: configuration.endpoint.authority,
            tuning: configuration.tuning
        )
        configuration.stats.connectionsOpened.add(1, ordering: .relaxed)
        let boundHandler = NIOLoopBound(handler, eventLoop: eventLoop)
        let endpoint = configuration.endpoint
        let http2 = configuration.http2
        logger.debug("connecting to APNs")
        let channel = ClientBootstrap(group: eventLoop)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(configuration.tuning.connectTimeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(
                        NIOSSLClientHandler(context: configuration.sslContext, serverHostname: endpoint.serverName)
                    )
                    try pipeline.addHandler(HTTP2WriteCoalescer())
                    try pipeline.addHandler(NIOHTTP2Handler(mode: .client, connectionConfiguration: http2))
                    try pipeline.addHandler(boundHandler.value)
                }
            }
            .connect(host: endpoint.host, port: endpoint.port)
        let timeout = eventLoop.assumeIsolated().scheduleTask(in: configuration.tuning.connectTimeout) {
            self.connectionFailed(handler, HTTP2ClientError.connectTimeout)
        }
        phase = .connecting(handler, timeout: timeout, channel: channel)
        channel.assumeIsolated().whenComplete { result in
            switch result {
            case .success(let channel):
                switch self.phase {
                case .connecting(let current, _, _) where current === handler: break
                case .ready(let current) where current === handler: break
                default: channel.close(promise: nil)  // shut down, or given up on (timeout), while connecting
                }
            case .failure(let error):
                self.connectionFailed(handler, error)
            }
        }
    }

    /// The attempt failed before the connection was ready: the pushes waiting for it fail (they are retried
    /// by the caller), so a broken endpoint cannot keep them forever.
    private func connectionFailed(_ handler: HTTP2ConnectionHandler, _ error: any Error) {
        guard case .connecting(let current, let timeout, _) = phase, current === handler else { return }
        timeout.cancel()
        phase = .idle
        handler.close()
        logger.debug("cannot connect to APNs", metadata: ["error": "\(String(reflecting: error))"])
        while let request = waiting.popFirst() {
            request.fail(error)
        }
    }

    // MARK: From connection handlers

    /// TLS is up with `h2` and the server's SETTINGS arrived.
    func handlerReady(_ handler: HTTP2ConnectionHandler) {
        guard case .connecting(let current, let timeout, _) = phase, current === handler else {
            handler.close()
            return
        }
        timeout.cancel()
        phase = .ready(handler)
        logger.debug("connected to APNs")
        pump()
    }

    /// Streams finished, or the server allowed more.
    func handlerHasCapacity(_ handler: HTTP2ConnectionHandler) {
        if case .ready(let current) = phase, current === handler { pump() }
    }

    /// Pushes the server did not process (above a GOAWAY's last stream id, or refused) go to the front of the
    /// queue, in order. The caller pumps (or is in a read, after which the handler asks the slot to pump).
    func requeue(_ requests: [HTTP2PendingRequest]) {
        if case .shutDown = phase {
            for request in requests { request.fail(HTTP2ClientError.shutDown) }
            return
        }
        for request in requests.reversed() {
            request.requeue()
            waiting.prepend(request)
        }
    }

    /// GOAWAY (or idle): no new streams on this connection; `unprocessed` go out again on another.
    func handlerGoingAway(_ handler: HTTP2ConnectionHandler, unprocessed: [HTTP2PendingRequest]) {
        requeue(unprocessed)
        if case .shutDown = phase { return }
        if case .ready(let current) = phase, current === handler {
            retire(handler)
            phase = .idle
        }
        pump()
    }

    /// The channel closed; the handler has already failed its streams.
    func handlerClosed(_ handler: HTTP2ConnectionHandler, error: (any Error)?) {
        configuration.stats.connectionsClosed.add(1, ordering: .relaxed)
        switch phase {
        case .connecting(let current, _, _) where current === handler:
            connectionFailed(
                handler, error ?? HTTP2ClientError.connectionClosed("closed before the HTTP/2 connection was ready")
            )
        case .ready(let current) where current === handler:
            logger.debug("APNs connection closed", metadata: ["error": "\(error.map { String(reflecting: $0) } ?? "none")"])
            phase = .idle
            pump()
        default:
            break
        }
        retiring.removeAll { $0 === handler }
    }

    // MARK: Deadlines

    /// One timer per slot, at the earliest deadline it knows of; when it fires, every push past its deadline
    /// fails and the timer is set for the next one.
    private func armTimer(_ deadline: NIODeadline) {
        if let timerDeadline, timerDeadline <= deadline { return }
        timer?.cancel()
        timerDeadline = deadline
        timer = eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { self.timerFired() }
    }

    private func timerFired() {
        timer = nil
        timerDeadline = nil
        let now = NIODeadline.now()
        var next: NIODeadline?
        var stillWaiting = CircularBuffer<HTTP2PendingRequest>(initialCapacity: Swift.max(16, waiting.count))
        while let request = waiting.popFirst() {
            guard case .queued = request.state else { continue }
            if request.deadline <= now {
                request.fail(HTTP2ClientError.notSent("deadline passed while waiting for a stream"))
            } else {
                stillWaiting.append(request)
                next = next.map { Swift.min($0, request.deadline) } ?? request.deadline
            }
        }
        waiting = stillWaiting
        var handlers = retiring
        switch phase {
        case .ready(let handler): handlers.append(handler)
        default: break
        }
        for handler in handlers {
            if let deadline = handler.expireStreams(now: now) {
                next = next.map { Swift.min($0, deadline) } ?? deadline
            }
        }
        if let next { armTimer(next) }
        pump()
    }

    // MARK: Shutdown

    func shutdown(remaining: [HTTP2ConnectionSlot.InboxItem]) -> EventLoopFuture<Void> {
        var closing: [EventLoopFuture<Void>] = []
        var handlers = retiring
        retiring = []
        switch phase {
        case .connecting(let handler, let timeout, let channel):
            timeout.cancel()
            handlers.append(handler)
            closing.append(channel.flatMap { $0.closeFuture }.recover { _ in })
        case .ready(let handler):
            handlers.append(handler)
        case .idle, .shutDown:
            break
        }
        phase = .shutDown
        timer?.cancel()
        timer = nil
        timerDeadline = nil
        for (request, continuation) in remaining {
            request.continuation = continuation
            request.fail(HTTP2ClientError.shutDown)
        }
        while let request = waiting.popFirst() {
            request.fail(HTTP2ClientError.shutDown)
        }
        for handler in handlers {
            if let closed = handler.shutdown() { closing.append(closed) }
        }
        return EventLoopFuture.andAllComplete(closing, on: eventLoop)
    }
}
