import Foundation
import NotifiableCore

/// A broadcast channel the fake gateway made.
struct SandboxAPNsChannel: Sendable, Equatable {
    var bundleID: String
    /// Apple's message-storage-policy: 1 keeps the latest broadcast for offline devices.
    var messageStorage: Bool
}

/// Apple's channel management API and broadcast pushes (iOS 18), as the fake gateway answers
/// them (docs/compatibility.md §12, *Broadcast channels*): channels are made, read and deleted
/// under `/1/apps/<bundle id>/channels`, broadcast to under `/4/broadcasts/apps/<bundle id>`.
/// Refusals are Apple's documented reasons; the provider token is checked as for a push.
extension SandboxAPNsRules {
    static let channelsPrefix = "/1/apps/"
    static let broadcastPrefix = "/4/broadcasts/apps/"
    /// Apple's limit for a broadcast's payload.
    static let maxBroadcastBytes = 5120

    func decideChannelRequest(_ request: SandboxAPNsRequest, path: String, jwt: String?, now: Date, latency: Duration) -> SandboxAPNsDecision {
        func reject(_ status: Int, _ reason: String) -> SandboxAPNsDecision {
            .answer(SandboxAPNsReply(status: status, apnsID: APNsID.random(), reason: reason), after: latency)
        }
        func answer(_ status: Int, channelID: String? = nil, body: String? = nil) -> SandboxAPNsDecision {
            .answer(SandboxAPNsReply(status: status, apnsID: APNsID.random(), channelID: channelID, channelBody: body), after: latency)
        }
        guard let jwt else { return reject(403, "MissingProviderToken") }
        let keys = state.withLock { $0.trustedKeys }
        guard let issuedAt = Self.verify(jwt: jwt, keys: keys) else { return reject(403, "InvalidProviderToken") }
        if Int64(now.timeIntervalSince1970) - issuedAt > Self.tokenLifetimeSeconds { return reject(403, "ExpiredProviderToken") }
        let body = request.body.map { Array($0.readableBytesView) } ?? []

        if path.hasPrefix(Self.broadcastPrefix) {
            let bundleID = String(path.dropFirst(Self.broadcastPrefix.count))
            guard request.method == "POST" else { return reject(405, "MethodNotAllowed") }
            guard !bundleID.isEmpty, !bundleID.contains("/") else { return reject(404, "BadPath") }
            guard let channelID = request.channelID, !channelID.isEmpty else { return reject(400, "MissingChannelId") }
            guard let channel = state.withLock({ $0.channels[channelID] }), channel.bundleID == bundleID else {
                return reject(400, "ChannelNotRegistered")
            }
            guard let pushType = request.pushType else { return reject(400, "MissingPushType") }
            guard pushType == "liveactivity" else { return reject(400, "InvalidPushType") }
            guard let priority = request.priority, ["10", "5", "1"].contains(priority) else { return reject(400, "BadPriority") }
            guard let expiration = request.expiration, Int64(expiration) != nil else { return reject(400, "BadExpirationDate") }
            // A channel that stores no message takes only an expiration of 0.
            if !channel.messageStorage, expiration != "0" { return reject(400, "BadExpirationDate") }
            guard request.bodyLength > 0 else { return reject(400, "PayloadEmpty") }
            guard request.bodyLength <= Self.maxBroadcastBytes else { return reject(413, "PayloadTooLarge") }
            // A broadcast updates or ends activities; it cannot start one.
            guard SandboxAPNsPayloadRules.problem(in: body, liveActivity: true) == nil,
                case .object(let aps)? = (try? JSONValue.decode(body))?.objectValue?["aps"], aps["event"] != .string("start")
            else { return reject(400, "BadRequestPayload") }
            var headers: [String: String] = [:]
            for (name, value, _) in request.headerFrame?.headers ?? [:] where !name.hasPrefix(":") { headers[name] = value }
            let accepted = AcceptedPush(token: channelID, headers: headers, payload: body, apnsID: APNsID.random(), receivedAt: now)
            state.withLock { $0.broadcasts.append(accepted) }
            return answer(200)
        }

        let rest = path.dropFirst(Self.channelsPrefix.count).split(separator: "/", omittingEmptySubsequences: false)
        guard rest.count == 2, !rest[0].isEmpty, rest[1] == "channels" else { return reject(404, "BadPath") }
        let bundleID = String(rest[0])
        switch request.method {
        case "POST":
            guard let object = (try? JSONValue.decode(body))?.objectValue else { return reject(400, "BadRequestPayload") }
            guard let pushType = object["push-type"] else { return reject(400, "MissingPushType") }
            guard pushType == .string("LiveActivity") else { return reject(400, "InvalidPushType") }
            guard let policy = object["message-storage-policy"], policy == .integer(0) || policy == .integer(1) else {
                return reject(400, "BadRequestParams")
            }
            let channelID = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
            state.withLock { $0.channels[channelID] = SandboxAPNsChannel(bundleID: bundleID, messageStorage: policy == .integer(1)) }
            return answer(201, channelID: channelID)
        case "GET", "DELETE":
            guard let channelID = request.channelID, !channelID.isEmpty else { return reject(400, "MissingChannelId") }
            let channel: SandboxAPNsChannel? = state.withLock { state in
                guard let channel = state.channels[channelID], channel.bundleID == bundleID else { return nil }
                if request.method == "DELETE" { state.channels[channelID] = nil }
                return channel
            }
            guard let channel else { return reject(400, "ChannelNotRegistered") }
            if request.method == "DELETE" { return answer(204) }
            return answer(200, body: #"{"message-storage-policy":\#(channel.messageStorage ? 1 : 0),"push-type":"LiveActivity"}"#)
        default:
            return reject(405, "MethodNotAllowed")
        }
    }
}
