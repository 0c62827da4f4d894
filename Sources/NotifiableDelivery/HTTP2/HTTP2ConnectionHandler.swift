import Logging
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOTLS

/// The last handler of one APNs connection, after `NIOHTTP2Handler` (used without a stream multiplexer: no
/// child channel per push). It numbers streams itself, writes each push as a HEADERS frame and a DATA frame,
/// gathers the answers' HEADERS and DATA, keeps the connection's receive window open, honours the server's
/// SETTINGS_MAX_CONCURRENT_STREAMS (its slot keeps the overflow queued) and tells its slot when the connection
/// is ready, has room, goes away or closes.
///
/// Flushes are coalesced: writes made while reading are flushed once at `channelReadComplete`, and the slot
/// flushes once after putting a batch of pushes on streams.
final class HTTP2ConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private enum State {
        /// Waiting for TLS (with `h2`) and the server's first SETTINGS.
        case connecting
        case ready
        /// GOAWAY received, stream ids used up, or shutting down: no new streams.
        case goingAway
        case closed
    }

    private let slot: HTTP2SlotState
    private let logger: Logger
    private let maxStreams: Int
    private var context: ChannelHandlerContext?
    private var state = State.connecting
    /// Pushes whose streams may still be open, by stream id. A push stays here after its answer until the
    /// stream closes, so that the count matches what the server counts against its limit.
    private var streams: [HTTP2StreamID: HTTP2PendingRequest] = [:]
    private var maxConcurrentStreams = HTTP2ClientConfiguration.defaultMaxConcurrentStreams
    private var nextStreamID: Int32 = 1
    private var streamsOpened = 0
    private var inRead = false
    private var needsFlush = false
    private var capacityFreed = false
    private var closeWhenDrained = false
    private var shuttingDown = false
    private var firstError: (any Error)?
    private let authority: String
    private let idleTimeout: TimeAmount
    private var lastActive = NIODeadline.now()
    private var idleTimer: Scheduled<Void>?

    private let connectionWindow: Int

    init(slot: HTTP2SlotState, logger: Logger, authority: String, tuning: HTTP2Client.Tuning) {
        self.slot = slot
        self.logger = logger
        self.authority = authority
        self.maxStreams = tuning.maxStreamsPerConnection
        self.idleTimeout = tuning.idleTimeout
        self.connectionWindow = max(65_535, min(tuning.connectionWindow, Int(Int32.max)))
    }

    // MARK: Used by the slot

    var canOpenStream: Bool {
        if case .ready = state {
            return streams.count < maxConcurrentStreams && streamsOpened < maxStreams
        }
        return false
    }

    /// No more stream ids: the slot replaces this connection.
    var isExhausted: Bool {
        streamsOpened >= maxStreams
    }

    /// Writes the push's HEADERS and DATA frames (not flushed: see ``flushIfNeeded()``).
    func open(_ request: HTTP2PendingRequest) {
        guard let context else {
            request.fail(HTTP2ClientError.notSent("connection closed before the push was sent"))
            return
        }
        let streamID = HTTP2StreamID(nextStreamID)
        nextStreamID += 2
        streamsOpened += 1

        let headers: HPACKHeaders
        do {
            headers = try makeHeaders(request.wire)
        } catch {
            request.fail(error)
            return
        }
        request.state = .inFlight
        request.handler = self
        request.streamID = streamID
        streams[streamID] = request

        let payload = request.wire.payload
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: headers, endStream: payload.isEmpty)))),
            promise: nil
        )
        // NIOHTTP2 refuses headers it will not send (a stream error, reported through errorCaught at once).
        if !payload.isEmpty, streams[streamID] != nil {
            let body = context.channel.allocator.buffer(bytes: payload)
            context.write(
                wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(body), endStream: true)))),
                promise: nil
            )
        }
        needsFlush = true
    }

    /// Flushes what was written, unless a read is in progress (`channelReadComplete` flushes then).
    func flushIfNeeded() {
        guard needsFlush, !inRead, let context else { return }
        needsFlush = false
        lastActive = .now()
        context.flush()
    }

    /// Resets a stream whose push was cancelled or timed out (not flushed).
    func reset(_ streamID: HTTP2StreamID) {
        guard let context, streams[streamID] != nil else { return }
        switch state {
        case .closed: return
        case .connecting, .ready, .goingAway: break
        }
        context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .rstStream(.cancel))), promise: nil)
        needsFlush = true
    }

    /// Fails the pushes past their deadline (resetting their streams); returns the earliest deadline left.
    func expireStreams(now: NIODeadline) -> NIODeadline? {
        var expired: [HTTP2StreamID] = []
        var next: NIODeadline?
        for (streamID, request) in streams where !request.isFinished {
            if request.deadline <= now {
                expired.append(streamID)
            } else {
                next = next.map { min($0, request.deadline) } ?? request.deadline
            }
        }
        for streamID in expired {
            streams[streamID]?.fail(HTTP2ClientError.deadlineExceeded)
            reset(streamID)
        }
        flushIfNeeded()
        return next
    }

    /// No new streams; close once the open ones are done.
    func closeWhenIdle() {
        if case .ready = state { state = .goingAway }
        closeWhenDrained = true
        if streams.isEmpty { close() }
    }

    func close() {
        guard let context else { return }
        if case .closed = state { return }
        context.close(promise: nil)
    }

    /// Closes the connection; pushes still on it fail with ``HTTP2ClientError/shutDown``.
    func shutdown() -> EventLoopFuture<Void>? {
        shuttingDown = true
        guard let context else { return nil }
        let closed = context.channel.closeFuture
        close()
        return closed
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        inRead = true
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .headers(let headers):
            guard let request = streams[frame.streamID], case .inFlight = request.state else { return }
            read(headers.headers, into: request)
            if headers.endStream { answer(request) }
        case .data(let data):
            guard let request = streams[frame.streamID], case .inFlight = request.state else { return }
            guard case .byteBuffer(let bytes) = data.data else { return }
            if bytes.readableBytes > 0 {
                let size = (request.body?.readableBytes ?? 0) + bytes.readableBytes
                guard size <= HTTP2ClientConfiguration.maxResponseBody else {
                    request.fail(HTTP2ClientError.responseTooLarge)
                    reset(frame.streamID)
                    return
                }
                if request.body == nil {
                    request.body = bytes
                } else {
                    request.body!.writeImmutableBuffer(bytes)
                }
            }
            if data.endStream { answer(request) }
        case .settings(.settings(let settings)):
            settingsReceived(settings)
        case .goAway(let lastStreamID, let errorCode, let opaqueData):
            goAwayReceived(lastStreamID: lastStreamID, errorCode: errorCode, opaqueData: opaqueData)
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        inRead = false
        if capacityFreed {
            capacityFreed = false
            slot.handlerHasCapacity(self)  // may open streams; flushes
        }
        flushIfNeeded()
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case let event as StreamClosedEvent:
            streamClosed(event.streamID, reason: event.reason)
        case let event as NIOHTTP2WindowUpdatedEvent where event.streamID == .rootStream:
            // Keep the connection's receive window open (DATA frames of answers use it up).
            if let window = event.inboundWindowSize, window < connectionWindow / 2,
                state != .closed, state != .connecting
            {
                updateWindow(by: connectionWindow - window)
            }
        case let event as TLSUserEvent:
            if case .handshakeCompleted(let negotiated) = event, negotiated != "h2" {
                firstError = firstError ?? HTTP2ClientError.http2NotNegotiated(negotiated)
                context.close(promise: nil)
            }
        default:
            break
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let streamError = error as? NIOHTTP2Errors.StreamError {
            // One stream failed (e.g. a header NIO would not send); the connection is fine.
            // Outbound ones happen while the slot is putting pushes on streams, which then carries on; inbound
            // ones during a read, after which channelReadComplete tells the slot about the room.
            if let request = streams.removeValue(forKey: streamError.streamID) {
                request.fail(HTTP2ClientError.streamReset(String(describing: streamError.baseError)))
                capacityFreed = true
            }
            return
        }
        firstError = firstError ?? error
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        state = .closed
        idleTimer?.cancel()
        idleTimer = nil
        let error: any Error
        if shuttingDown {
            error = HTTP2ClientError.shutDown
        } else if let firstError {
            error = HTTP2ClientError.connectionClosed(String(describing: firstError))
        } else {
            error = HTTP2ClientError.connectionClosed("closed by the server")
        }
        let inFlight = streams.values
        streams = [:]
        for request in inFlight { request.fail(error) }
        slot.handlerClosed(self, error: firstError)
        context.fireChannelInactive()
    }

    // MARK: Frames

    private func settingsReceived(_ settings: HTTP2Settings) {
        let previous = maxConcurrentStreams
        for setting in settings where setting.parameter == .maxConcurrentStreams {
            maxConcurrentStreams = setting.value
        }
        switch state {
        case .connecting:
            state = .ready
            // Our receive window for the whole connection starts at 65,535 bytes; widen it once.
            updateWindow(by: connectionWindow - 65_535)
            scheduleIdleCheck(at: .now() + idleTimeout)
            slot.handlerReady(self)
        case .ready:
            if maxConcurrentStreams > previous { capacityFreed = true }
        case .goingAway, .closed:
            break
        }
    }

    private func scheduleIdleCheck(at deadline: NIODeadline) {
        guard let context else { return }
        idleTimer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { self.idleCheck() }
    }

    private func idleCheck() {
        idleTimer = nil
        guard case .ready = state else { return }
        let now = NIODeadline.now()
        if !streams.isEmpty {
            scheduleIdleCheck(at: now + idleTimeout)
        } else if lastActive + idleTimeout > now {
            scheduleIdleCheck(at: lastActive + idleTimeout)
        } else {
            logger.debug("closing idle APNs connection")
            slot.handlerGoingAway(self, unprocessed: [])  // the slot retires it, which closes it (no streams)
            closeWhenIdle()
        }
    }

    private func goAwayReceived(lastStreamID: HTTP2StreamID, errorCode: HTTP2ErrorCode, opaqueData: ByteBuffer?) {
        logger.debug(
            "APNs sent GOAWAY",
            metadata: [
                "last_stream_id": "\(lastStreamID)", "error_code": "\(errorCode)",
                "debug_data": "\(opaqueData.map { String(buffer: $0) } ?? "")",
            ]
        )
        if case .ready = state { state = .goingAway }
        if case .connecting = state { state = .goingAway }
        closeWhenDrained = true
        // Streams above lastStreamID were not processed: they go out again on another connection.
        // Only a graceful GOAWAY is believed. One with an error may name less than the server took:
        // swift-nio-http2's server names stream 0 to a peer it calls misbehaving (too many resets,
        // as a starved client's deadlines make) after its application handled the streams. Those
        // fail with the connection instead, as attempts of unknown outcome.
        var unprocessed: [(HTTP2StreamID, HTTP2PendingRequest)] = []
        for (streamID, request) in streams where streamID > lastStreamID && errorCode == .noError {
            if case .inFlight = request.state { unprocessed.append((streamID, request)) }
        }
        unprocessed.sort { $0.0 < $1.0 }
        for (streamID, _) in unprocessed { streams.removeValue(forKey: streamID) }
        slot.handlerGoingAway(self, unprocessed: unprocessed.map(\.1))
        if streams.isEmpty { close() }
    }

    private func streamClosed(_ streamID: HTTP2StreamID, reason: HTTP2ErrorCode?) {
        guard let request = streams.removeValue(forKey: streamID) else { return }
        if case .inFlight = request.state {
            if reason == .refusedStream {
                // REFUSED_STREAM guarantees the server did nothing with it: send it again.
                slot.requeue([request])
            } else {
                request.fail(HTTP2ClientError.streamReset(reason.map { "\($0)" } ?? "closed before an answer"))
            }
        }
        capacityFreed = true
        if closeWhenDrained, streams.isEmpty { close() }
    }

    private func read(_ headers: HPACKHeaders, into request: HTTP2PendingRequest) {
        if request.status != nil { return }  // trailers
        guard let status = headers.first(name: ":status").flatMap({ Int($0) }) else { return }
        // Informational answers (1xx) are followed by the real one.
        guard !(100..<200).contains(status) else { return }
        request.status = status
        request.headers = headers
    }

    private func answer(_ request: HTTP2PendingRequest) {
        guard let status = request.status else {
            request.fail(HTTP2ClientError.malformedResponse)
            return
        }
        let body = request.body.map { Array($0.readableBytesView) } ?? []
        request.succeed(
            HTTP2Response(status: status, headers: request.headers, body: body)
        )
    }

    private func updateWindow(by increment: Int) {
        guard let context, increment > 0 else { return }
        context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))), promise: nil)
        needsFlush = true
        flushIfNeeded()
    }

    private func makeHeaders(_ request: HTTP2Request) throws -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.reserveCapacity(5 + request.headers.count)
        headers.add(name: ":method", value: request.method)
        headers.add(name: ":scheme", value: "https")
        // A new path and apns-id per push: keep them out of the HPACK dynamic table.
        headers.add(name: ":path", value: request.path, indexing: .nonIndexable)
        headers.add(name: ":authority", value: authority)
        if !request.payload.isEmpty {
            headers.add(name: "content-length", value: String(request.payload.count), indexing: .nonIndexable)
        }
        for (name, value) in request.headers {
            var name = name
            var needsLowercasing = false
            for byte in name.utf8 {
                if byte >= 0x80 || byte <= 0x20 || byte == UInt8(ascii: ":") {
                    throw HTTP2ClientError.invalidHeader(name)
                }
                if byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") { needsLowercasing = true }
            }
            if needsLowercasing { name = name.lowercased() }
            if name == "content-length" { continue }  // set above, from the payload
            headers.add(name: name, value: value, indexing: name == "apns-id" ? .nonIndexable : .indexable)
        }
        return headers
    }
}

@available(*, unavailable)
extension HTTP2ConnectionHandler: Sendable {}

/// Sits between NIOSSL and NIOHTTP2 and turns the many small writes NIOHTTP2 makes per flush (a frame
/// header, a payload...) into one buffer, so NIOSSL encrypts one TLS record per 16 KiB rather than one per
/// frame piece.
final class HTTP2WriteCoalescer: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = ByteBuffer

    private var pending: ByteBuffer?
    private var pendingPromise: EventLoopPromise<Void>?
    /// The last flushed buffer, cleared and reused when NIOSSL has let go of it.
    private var spare: ByteBuffer?

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .byteBuffer(let buffer):
            if pending == nil {
                if var spare {
                    self.spare = nil
                    spare.clear()
                    pending = spare
                } else {
                    pending = context.channel.allocator.buffer(capacity: max(4096, buffer.readableBytes))
                }
            }
            pending!.writeImmutableBuffer(buffer)
            if let promise {
                if let pendingPromise {
                    pendingPromise.futureResult.cascade(to: promise)
                } else {
                    pendingPromise = promise
                }
            }
        case .fileRegion:
            writePending(context: context)
            context.write(data, promise: promise)
        }
    }

    func flush(context: ChannelHandlerContext) {
        writePending(context: context)
        context.flush()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        pending = nil
        let promise = pendingPromise
        pendingPromise = nil
        promise?.fail(ChannelError.ioOnClosedChannel)
    }

    private func writePending(context: ChannelHandlerContext) {
        guard let buffer = pending else { return }
        pending = nil
        let promise = pendingPromise
        pendingPromise = nil
        if buffer.capacity <= 1 << 20 { spare = buffer }
        context.write(wrapOutboundOut(buffer), promise: promise)
    }
}

@available(*, unavailable)
extension HTTP2WriteCoalescer: Sendable {}
