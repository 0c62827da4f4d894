import Crypto
import Foundation
import NIOCore
import NIOHTTP2
import NotifiableCore
import Synchronization

/// The parts of an HTTP/2 request that APNs looks at, gathered by the stream handler.
struct SandboxAPNsRequest {
    var method: String?
    var path: String?
    var authorization: String?
    var topic: String?
    var pushType: String?
    var priority: String?
    var expiration: String?
    var apnsID: String?
    var collapseID: String?
    var channelID: String?
    /// ``SandboxGatewayRequestRecord/connection``.
    var connection = 0
    /// The request's HEADERS frame, turned into a dictionary only when an accepted push is recorded.
    var headerFrame: HTTP2Frame.FramePayload.Headers?
    var body: ByteBuffer?
    var bodyLength = 0

    /// Takes the fields APNs reads from the request's HEADERS frame.
    mutating func read(_ frame: HTTP2Frame.FramePayload.Headers) {
        headerFrame = frame
        for (name, value, _) in frame.headers {
            switch name {
            case ":method": method = value
            case ":path": path = value
            case "authorization": authorization = value
            case "apns-topic": topic = value
            case "apns-push-type": pushType = value
            case "apns-priority": priority = value
            case "apns-expiration": expiration = value
            case "apns-id": apnsID = value
            case "apns-collapse-id": collapseID = value
            case "apns-channel-id": channelID = value
            default: break
            }
        }
    }

    /// Adds a DATA frame's bytes, keeping no more than one byte past the limit (enough to answer PayloadTooLarge).
    mutating func append(body buffer: inout ByteBuffer) {
        guard buffer.readableBytes > 0 else { return }
        bodyLength += buffer.readableBytes
        guard bodyLength <= SandboxAPNsRules.maxPayloadBytes + 1 else { return }
        if body == nil {
            body = buffer
        } else {
            body!.writeBuffer(&buffer)
        }
    }

    /// A request as the stream handler would gather it (for unit tests of the rules).
    init(method: String, path: String, headers: [(String, String)], body: [UInt8]) {
        var frame = HTTP2Frame.FramePayload.Headers(headers: [":method": method, ":path": path])
        for (name, value) in headers { frame.headers.add(name: name, value: value) }
        read(frame)
        var buffer = ByteBuffer(bytes: body)
        append(body: &buffer)
    }

    init() {}
}

/// An answer to write on the stream.
struct SandboxAPNsReply: Sendable, Equatable {
    var status: Int
    var apnsID: String
    var reason: String?
    var timestamp: Date?
    var retryAfterSeconds: Int?
    /// A channel management answer's `apns-channel-id`.
    var channelID: String?
    /// A channel read's JSON body.
    var channelBody: String?

    /// The JSON body APNs sends with an error, or nil for 200.
    var body: String? {
        if let channelBody { return channelBody }
        guard let reason else { return nil }
        if let timestamp {
            let milliseconds = Int64((timestamp.timeIntervalSince1970 * 1000).rounded())
            return #"{"reason":"\#(reason)","timestamp":\#(milliseconds)}"#
        }
        return #"{"reason":"\#(reason)"}"#
    }
}

enum SandboxAPNsDecision: Sendable, Equatable {
    case answer(SandboxAPNsReply, after: Duration)
    case dropConnection
    case resetStream
    case noAnswer
}

struct TrustedKeyID: Hashable, Sendable {
    var teamID: String
    var keyID: String
}

/// The gateway's state and APNs's rules; shared by every connection, guarded by one mutex held only briefly.
final class SandboxAPNsRules: FaultInjectingRules {
    static let maxPayloadBytes = 4096
    static let tokenLifetimeSeconds: Int64 = 3600
    static let maxCollapseIDBytes = 64
    static let pushTypes: Set<String> = [
        "alert", "background", "voip", "complication", "fileprovider", "mdm", "liveactivity", "location", "pushtotalk",
    ]
    /// Verified JWTs kept at most; past this the cache starts over (clients reuse one JWT for 20–60 minutes).
    static let maxVerifiedTokens = 4096

    struct RandomFailures {
        var rate: Double
        var generator: SplitMix64
        var outcome: SandboxAPNsOutcome
    }

    struct State: FaultInjectionState {
        var trustedKeys: [TrustedKeyID: P256.Signing.PublicKey] = [:]
        /// JWT string → its `iat`, for JWTs whose signature was already checked.
        var verifiedTokens: [String: Int64] = [:]
        var allowedTopics: Set<String>?
        /// Per lower-cased token, outcomes still to use, last one first.
        var scripts: [String: [SandboxAPNsOutcome]] = [:]
        var randomFailures: RandomFailures?
        var faults: SandboxGatewayFaultMix?
        var tally = SandboxGatewayTally()
        /// JWT string → `TEAM_ID:KEY_ID`, for statistics per signing key.
        var keyLabels: [String: String] = [:]
        var latency: Duration = .zero
        var recording = true
        var accepted: [AcceptedPush] = []
        var acceptedCount = 0
        var requestCount = 0
        /// Broadcast channels made and not deleted, by id.
        var channels: [String: SandboxAPNsChannel] = [:]
        /// Broadcasts answered 200, in order; each one's `token` is its channel's id.
        var broadcasts: [AcceptedPush] = []
    }

    let state = Mutex(State())

    func withState<Result: Sendable>(_ body: (inout State) -> Result) -> Result {
        state.withLock { body(&$0) }
    }

    // MARK: Configuration

    func trust(teamID: String, keyID: String, publicKey: P256.Signing.PublicKey) {
        state.withLock {
            $0.trustedKeys[TrustedKeyID(teamID: teamID, keyID: keyID)] = publicKey
            $0.verifiedTokens.removeAll()
        }
    }

    func distrustAll() {
        state.withLock {
            $0.trustedKeys.removeAll()
            $0.verifiedTokens.removeAll()
        }
    }

    func allowTopics(_ topics: Set<String>?) {
        state.withLock { $0.allowedTopics = topics }
    }

    func script(token: String, _ outcomes: [SandboxAPNsOutcome]) {
        state.withLock {
            let key = token.lowercased()
            if outcomes.isEmpty {
                $0.scripts[key] = nil
            } else {
                $0.scripts[key] = outcomes.reversed()
            }
        }
    }

    func setRandomFailures(rate: Double, seed: UInt64, outcome: SandboxAPNsOutcome) {
        state.withLock {
            $0.randomFailures =
                rate > 0 ? RandomFailures(rate: min(rate, 1), generator: SplitMix64(seed: seed), outcome: outcome) : nil
        }
    }

    func setRecording(_ enabled: Bool) {
        state.withLock { $0.recording = enabled }
    }

    /// Forgets what happened and the per-test behaviour (scripts, random failures, latency);
    /// keeps the trusted keys, allowed topics and recording setting.
    func reset() {
        state.withLock {
            $0.scripts.removeAll()
            $0.randomFailures = nil
            $0.faults = nil
            $0.tally.reset()
            $0.latency = .zero
            $0.accepted.removeAll()
            $0.acceptedCount = 0
            $0.requestCount = 0
            $0.broadcasts.removeAll()
        }
    }

    // MARK: Deciding

    func decide(_ request: SandboxAPNsRequest, now: Date = Date()) -> SandboxAPNsDecision {
        let jwt = Self.bearerToken(request.authorization)
        let (cachedIssuedAt, keys, allowedTopics, latency, recording, cachedKeyLabel, labelsKeys) = state.withLock { state in
            state.requestCount += 1
            let cached = jwt.flatMap { state.verifiedTokens[$0] }
            let labelsKeys = state.tally.observing || state.tally.logging
            return (
                cached, cached == nil ? state.trustedKeys : nil, state.allowedTopics, state.latency, state.recording,
                labelsKeys ? jwt.flatMap { state.keyLabels[$0] } : nil, labelsKeys
            )
        }
        let prefix = "/3/device/"
        let pathToken = request.path.flatMap { $0.hasPrefix(prefix) ? $0.dropFirst(prefix.utf8.count).lowercased() : nil } ?? ""
        var keyLabel = ""
        if labelsKeys, let jwt {
            if let cachedKeyLabel {
                keyLabel = cachedKeyLabel
            } else {
                keyLabel = Self.keyLabel(jwt: jwt)
                state.withLock { state in
                    if state.keyLabels.count >= Self.maxVerifiedTokens { state.keyLabels.removeAll() }
                    state.keyLabels[jwt] = keyLabel
                }
            }
        }

        var apnsID: String {
            if let id = request.apnsID, APNsID.isValid(id) { return id }
            return APNsID.random()
        }

        func record(_ outcome: String, status: Int?, retryAfter: Int? = nil, into state: inout State) {
            let record = SandboxGatewayRequestRecord(
                arrivedAt: now, token: pathToken, key: keyLabel, outcome: outcome, status: status, retryAfterSeconds: retryAfter,
                connection: request.connection
            )
            state.tally.note(record, countingTokens: state.faults != nil)
        }

        func reject(_ status: Int, _ reason: String) -> SandboxAPNsDecision {
            state.withLock { record(reason, status: status, into: &$0) }
            return .answer(SandboxAPNsReply(status: status, apnsID: apnsID, reason: reason), after: latency)
        }

        if let path = request.path, path.hasPrefix(Self.channelsPrefix) || path.hasPrefix(Self.broadcastPrefix) {
            return decideChannelRequest(request, path: path, jwt: jwt, now: now, latency: latency)
        }
        guard request.method == "POST" else { return reject(405, "MethodNotAllowed") }
        guard let path = request.path, path.hasPrefix(prefix) else { return reject(404, "BadPath") }
        let token = path.dropFirst(prefix.utf8.count)
        guard !token.utf8.contains(UInt8(ascii: "/")) else { return reject(404, "BadPath") }

        // Provider token (JWT).
        guard let jwt else { return reject(403, "MissingProviderToken") }
        let issuedAt: Int64
        if let cachedIssuedAt {
            issuedAt = cachedIssuedAt
        } else {
            guard let verified = Self.verify(jwt: jwt, keys: keys ?? [:]) else {
                return reject(403, "InvalidProviderToken")
            }
            issuedAt = verified
            state.withLock { state in
                if state.verifiedTokens.count >= Self.maxVerifiedTokens { state.verifiedTokens.removeAll() }
                state.verifiedTokens[jwt] = verified
            }
        }
        if Int64(now.timeIntervalSince1970) - issuedAt > Self.tokenLifetimeSeconds {
            return reject(403, "ExpiredProviderToken")
        }

        // Headers.
        guard let topic = request.topic, !topic.isEmpty else { return reject(400, "MissingTopic") }
        // A Live Activity's topic is its app's bundle id with APNs's suffix, and only that.
        let isLiveActivity = request.pushType == "liveactivity"
        if isLiveActivity != topic.hasSuffix(LiveActivityPush.topicSuffix) { return reject(400, "DeviceTokenNotForTopic") }
        let bundleID = isLiveActivity ? String(topic.dropLast(LiveActivityPush.topicSuffix.count)) : topic
        if let allowedTopics, !allowedTopics.contains(bundleID) { return reject(400, "TopicDisallowed") }
        guard !token.isEmpty else { return reject(400, "MissingDeviceToken") }
        guard Self.isHexToken(token) else { return reject(400, "BadDeviceToken") }
        if let pushType = request.pushType, !Self.pushTypes.contains(pushType) {
            return reject(400, "InvalidPushType")
        }
        if let priority = request.priority, priority != "10", priority != "5", priority != "1" {
            return reject(400, "BadPriority")
        }
        if let expiration = request.expiration, Int64(expiration) == nil { return reject(400, "BadExpirationDate") }
        if let id = request.apnsID, !APNsID.isValid(id) { return reject(400, "BadMessageId") }
        if let collapseID = request.collapseID, collapseID.utf8.count > Self.maxCollapseIDBytes {
            return reject(400, "BadCollapseId")
        }

        // Payload.
        guard request.bodyLength > 0 else { return reject(400, "PayloadEmpty") }
        guard request.bodyLength <= Self.maxPayloadBytes, let body = request.body else {
            return reject(413, "PayloadTooLarge")
        }
        let isObject = body.withUnsafeReadableBytes { JSONObjectValidator.isJSONObject($0.assumingMemoryBound(to: UInt8.self)) }
        guard isObject else { return reject(400, "BadPayload") }
        let needsReading = isLiveActivity || body.withUnsafeReadableBytes { SandboxAPNsPayloadRules.mayNeedReading($0) }
        if needsReading, SandboxAPNsPayloadRules.problem(in: Array(body.readableBytesView), liveActivity: isLiveActivity) != nil {
            return reject(400, "BadPayload")
        }
        let payload = recording ? Array(body.readableBytesView) : []

        // Outcome.
        let normalizedToken = pathToken
        let answerID = apnsID
        var headers: [String: String] = [:]
        if recording, let frame = request.headerFrame {
            for (name, value, _) in frame.headers where !name.hasPrefix(":") {
                headers[name] = value  // HTTP/2 header names are lower-case
            }
        }
        return state.withLock { state -> SandboxAPNsDecision in
            var outcome = SandboxAPNsOutcome.accept
            var faultName: String?
            if !state.scripts.isEmpty, let next = state.scripts[normalizedToken]?.popLast() {
                outcome = next
                if state.scripts[normalizedToken]?.isEmpty == true { state.scripts[normalizedToken] = nil }
            } else if let faults = state.faults,
                let fault = faults.fault(token: normalizedToken, earlierRequests: state.tally.earlierRequests(to: normalizedToken))
            {
                outcome = .injecting(fault, now: now)
                faultName = fault.description
            } else if var failures = state.randomFailures {
                if failures.generator.nextUnit() < failures.rate { outcome = failures.outcome }
                state.randomFailures = failures
            }
            var delay = Duration.zero
            switch outcome {
            case .dropConnection:
                record(faultName ?? "drop-connection", status: nil, into: &state)
                return .dropConnection
            case .resetStream:
                record(faultName ?? "reset-stream", status: nil, into: &state)
                return .resetStream
            case .noAnswer:
                record(faultName ?? "timeout", status: nil, into: &state)
                return .noAnswer
            case .reject(let status, let reason, let timestamp, let retryAfterSeconds):
                record(faultName ?? reason, status: status, retryAfter: retryAfterSeconds, into: &state)
                let reply = SandboxAPNsReply(
                    status: status, apnsID: answerID, reason: reason, timestamp: timestamp,
                    retryAfterSeconds: retryAfterSeconds
                )
                return .answer(reply, after: latency)
            case .delay(let duration):
                delay = max(duration, .zero)
            case .accept:
                break
            }
            record(SandboxGatewayTally.acceptedOutcome, status: 200, into: &state)
            state.acceptedCount += 1
            if state.recording {
                state.accepted.append(
                    AcceptedPush(
                        token: normalizedToken, headers: headers, payload: payload, apnsID: answerID, receivedAt: now
                    )
                )
            }
            return .answer(SandboxAPNsReply(status: 200, apnsID: answerID), after: latency + delay)
        }
    }

    // MARK: Helpers

    /// The JWT of `authorization: bearer <jwt>`, or nil when the header is missing or another scheme.
    static func bearerToken(_ authorization: String?) -> String? {
        BearerAuthorization.token(authorization)
    }

    static func isHexToken(_ token: Substring) -> Bool {
        let utf8 = token.utf8
        guard (64...200).contains(utf8.count) else { return false }
        return utf8.allSatisfy { byte in
            (48...57).contains(byte) || (65...70).contains(byte) || (97...102).contains(byte)
        }
    }

    private struct JWTHeader: Decodable {
        var alg: String
        var kid: String
    }

    private struct UnverifiedKey: Decodable {
        var kid: String?
        var iss: String?
    }

    /// `TEAM_ID:KEY_ID` as a provider token claims them, signature unchecked (a revoked key is still named);
    /// `?` for a part that cannot be read.
    static func keyLabel(jwt: String) -> String {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        func field(_ part: Int, _ read: (UnverifiedKey) -> String?) -> String {
            guard parts.count > part, let data = base64URLDecode(parts[part]),
                let decoded = try? JSONDecoder().decode(UnverifiedKey.self, from: data), let value = read(decoded)
            else { return "?" }
            return value
        }
        return field(1, \.iss) + ":" + field(0, \.kid)
    }

    private struct JWTClaims: Decodable {
        var iss: String
        var iat: Int64
    }

    /// Checks an ES256 provider token against the trusted keys; returns its `iat`, or nil when it is not valid.
    static func verify(jwt: String, keys: [TrustedKeyID: P256.Signing.PublicKey]) -> Int64? {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerData = base64URLDecode(parts[0]),
            let claimsData = base64URLDecode(parts[1]),
            let signatureData = base64URLDecode(parts[2]),
            let header = try? JSONDecoder().decode(JWTHeader.self, from: headerData),
            header.alg == "ES256",
            let claims = try? JSONDecoder().decode(JWTClaims.self, from: claimsData),
            let key = keys[TrustedKeyID(teamID: claims.iss, keyID: header.kid)],
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureData)
        else { return nil }
        let signingInput = Data(jwt.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard key.isValidSignature(signature, for: signingInput) else { return nil }
        return claims.iat
    }

    static func base64URLDecode(_ text: Substring) -> Data? {
        Base64URL.decode(text)
    }
}

/// `apns-id` values: canonical UUIDs (8-4-4-4-12 hex digits), made without Foundation's per-call cost.
enum APNsID {
    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    /// A new random (version 4) UUID, upper-case as APNs writes them.
    static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        let high = generator.next() & 0xFFFF_FFFF_FFFF_0FFF | 0x0000_0000_0000_4000
        let low = generator.next() & 0x3FFF_FFFF_FFFF_FFFF | 0x8000_0000_0000_0000
        return String(unsafeUninitializedCapacity: 36) { buffer in
            var position = 0
            for nibble in 0..<32 {
                if position == 8 || position == 13 || position == 18 || position == 23 {
                    buffer[position] = UInt8(ascii: "-")
                    position += 1
                }
                let word = nibble < 16 ? high : low
                buffer[position] = hexDigits[Int(word >> UInt64(60 - 4 * (nibble % 16)) & 0xF)]
                position += 1
            }
            return position
        }
    }

    /// Whether `text` is a UUID in its canonical text form (either case).
    static func isValid(_ text: String) -> Bool {
        let utf8 = text.utf8
        guard utf8.count == 36 else { return false }
        for (offset, byte) in utf8.enumerated() {
            if offset == 8 || offset == 13 || offset == 18 || offset == 23 {
                guard byte == UInt8(ascii: "-") else { return false }
            } else {
                guard (48...57).contains(byte) || (65...70).contains(byte) || (97...102).contains(byte) else { return false }
            }
        }
        return true
    }
}
