import Foundation
import NotifiableCore
import NotifiableStore

/// What Apple's channel management API answered.
public enum ActivityChannelAnswer: Sendable, Equatable {
    case created(channelID: String)
    case deleted
    /// No useful answer (unreachable, 429, 5xx, credentials to refresh): ask again later.
    case retry(reason: String, retryAfter: Duration?)
    /// Apple refused (the capability not enabled, too many channels, bad settings).
    case refused(reason: String)
}

/// Broadcast channels of Live Activities (iOS 18) at a gateway: made, deleted, and broadcast to.
public protocol ActivityChannelGateway: Sendable {
    func createChannel(appID: Int64, messageStorage: Bool) async -> ActivityChannelAnswer
    func deleteChannel(appID: Int64, channelID: String) async -> ActivityChannelAnswer
    /// Sends one broadcast; the outcome as a push's, and the HTTP status when there was one.
    func broadcast(_ broadcast: ClaimedBroadcast) async -> (outcome: DeliveryOutcome, status: Int?)
}

/// Apple's channel management API and broadcast pushes, over the app's APNs settings and token
/// key (docs/compatibility.md §12, *Broadcast channels*):
/// - `POST /1/apps/<bundle id>/channels` `{"message-storage-policy": 0|1, "push-type": "LiveActivity"}`
///   → 201 with the channel's id in `apns-channel-id`;
/// - `DELETE /1/apps/<bundle id>/channels` with `apns-channel-id` → 204;
/// - `POST /4/broadcasts/apps/<bundle id>` with `apns-channel-id`, `apns-push-type: liveactivity`,
///   `apns-priority` and `apns-expiration` (0 on a channel that stores no message) → 200.
extension APNsSender: ActivityChannelGateway {
    public func createChannel(appID: Int64, messageStorage: Bool) async -> ActivityChannelAnswer {
        let body = #"{"message-storage-policy":\#(messageStorage ? 1 : 0),"push-type":"LiveActivity"}"#
        return await manage(appID: appID, method: "POST", channelID: nil, body: Array(body.utf8)) { response in
            guard let id = response.header("apns-channel-id"), !id.isEmpty else {
                return .retry(reason: "APNs made a channel but named none (no apns-channel-id)", retryAfter: nil)
            }
            return .created(channelID: id)
        }
    }

    public func deleteChannel(appID: Int64, channelID: String) async -> ActivityChannelAnswer {
        await manage(appID: appID, method: "DELETE", channelID: channelID, body: []) { _ in .deleted }
    }

    public func broadcast(_ broadcast: ClaimedBroadcast) async -> (outcome: DeliveryOutcome, status: Int?) {
        guard let activity = broadcast.content.liveActivity else { return (.failed(reason: "a broadcast without a Live Activity event"), nil) }
        let payload: [UInt8]
        do {
            payload = try APNsPayload.encode(content: broadcast.content, language: nil, country: nil, notificationID: broadcast.notificationID)
        } catch {
            return (.failed(reason: error.description), nil)
        }
        let connection: APNsConnection
        switch await connections.connection(appID: broadcast.appID) {
        case .success(let ready): connection = ready
        case .failure(let missing):
            return (missing.outcome(notConfigured: "apns_not_configured: set the app's APNs key with `notifiable apps set-apns`"), nil)
        }
        if let misconfiguration = connection.misconfiguration { return (.misconfigured(reason: misconfiguration), nil) }
        let jwt = await connection.tokens.token()
        let headers: [(String, String)] = [
            ("apns-channel-id", broadcast.channelID),
            ("apns-push-type", "liveactivity"),
            ("apns-priority", activity.priority == .high ? "10" : "5"),
            // A channel that stores no message takes only 0 (Apple: BadExpirationDate otherwise).
            ("apns-expiration", broadcast.messageStorage ? APNsRequestHeaders.expiration(broadcast.expiresAt, now: Date()) : "0"),
            ("apns-request-id", APNsRequestHeaders.apnsID(forDelivery: broadcast.id)),
            ("authorization", "bearer \(jwt)"),
        ]
        do {
            let response = try await connection.transport.send(
                HTTP2Request(path: "/4/broadcasts/apps/\(connection.topic)", headers: headers, payload: payload), deadline: requestTimeout)
            let outcome = APNsResponseClassifier.classify(
                status: response.status, body: response.body, retryAfter: response.retryAfter, apnsID: response.header("apns-unique-id"))
            if case .refreshCredentialsAndRetry = outcome { await connection.tokens.refresh(rejected: jwt) }
            return (outcome, response.status)
        } catch {
            return (APNsResponseClassifier.classify(transportError: error), nil)
        }
    }

    /// One request to the channel management API for the app's bundle id; `success` reads a 2xx answer.
    private func manage(
        appID: Int64, method: String, channelID: String?, body: [UInt8], success: (HTTP2Response) -> ActivityChannelAnswer
    ) async -> ActivityChannelAnswer {
        let connection: APNsConnection
        switch await connections.connection(appID: appID) {
        case .success(let ready): connection = ready
        case .failure(let missing):
            return Self.answer(missing.outcome(notConfigured: "apns_not_configured: set the app's APNs key with `notifiable apps set-apns`"))
        }
        if let misconfiguration = connection.misconfiguration { return .refused(reason: misconfiguration) }
        let jwt = await connection.tokens.token()
        var headers: [(String, String)] = [("authorization", "bearer \(jwt)")]
        if let channelID { headers.append(("apns-channel-id", channelID)) }
        if !body.isEmpty { headers.append(("content-type", "application/json")) }
        do {
            let response = try await connection.channelTransport.send(
                HTTP2Request(method: method, path: "/1/apps/\(connection.topic)/channels", headers: headers, payload: body),
                deadline: requestTimeout)
            if (200..<300).contains(response.status) { return success(response) }
            let outcome = APNsResponseClassifier.classify(status: response.status, body: response.body, retryAfter: response.retryAfter)
            // A channel Apple no longer knows is as good as deleted.
            if method == "DELETE", outcome.reason == "ChannelNotRegistered" { return .deleted }
            if case .refreshCredentialsAndRetry = outcome { await connection.tokens.refresh(rejected: jwt) }
            return Self.answer(outcome)
        } catch {
            logger.debug("APNs channel request failed", metadata: ["app_id": "\(appID)", "error": "\(String(reflecting: error))"])
            return Self.answer(APNsResponseClassifier.classify(transportError: error))
        }
    }

    private static func answer(_ outcome: DeliveryOutcome) -> ActivityChannelAnswer {
        switch outcome {
        // Only a 2xx is `sent`, and `manage` reads those itself; here it would be an answer
        // without what was asked for, which asking again may get.
        case .sent: .retry(reason: "APNs answered without what was asked for", retryAfter: nil)
        case .retry(let reason, let retryAfter): .retry(reason: reason, retryAfter: retryAfter)
        case .outcomeUnknown(let reason), .refreshCredentialsAndRetry(let reason): .retry(reason: reason, retryAfter: nil)
        case .failed(let reason), .tokenDead(let reason, _), .misconfigured(let reason, _): .refused(reason: reason)
        }
    }
}
