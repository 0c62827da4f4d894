import Foundation
import Hummingbird
import NotifiableCore
import NotifiableStore

/// Live Activities: devices register their activities' push tokens and their push-to-start
/// tokens (device credentials), and the app's backend starts, updates and ends activities
/// (server credentials). Every event goes through the delivery queue as any push does.
struct LiveActivitiesController {
    let activities: LiveActivityStore

    func addRoutes(to group: RouterGroup<NotifiableRequestContext>, limiter: RateLimiter? = nil) {
        let registrations = group.limited(.registrations, by: limiter)
        registrations.post("device_tokens/:id/live_activities", use: registerToken)
        registrations.post("device_tokens/:id/push_to_start_tokens", use: registerPushToStart)
        registrations.delete("device_tokens/:id/live_activities/:activity_id", use: removeToken)
        registrations.delete("device_tokens/:id/push_to_start_tokens/:attributes_type", use: removePushToStart)
        group.limited(.sends, by: limiter).post("live_activities", use: send)
        group.get("live_activities/:activity_id", use: show)
        group.limited(.sends, by: limiter).post("live_activities/:activity_id/channel", use: requestChannel)
    }

    /// `{"activity_id", "token", "attributes_type"?}`: the token ActivityKit gave the app for one
    /// of its activities (`Activity.pushTokenUpdates`), under the id the backend knows it by.
    @Sendable func registerToken(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<RegisteredTokenJSON> {
        let caller = try context.requireCaller()
        let deviceID = try await ownedDevice(caller, context)
        var request = request
        let fields = try AdminBody(try await request.jsonBody(context: context))
        try fields.allowOnly(["activity_id", "token", "attributes_type"])
        let activityID = try fields.requiredText("activity_id", max: LiveActivityRequest.maxActivityIDLength)
        let token = try fields.activityToken()
        let attributesType = try fields.text("attributes_type", max: NotificationRequest.maxShortTextLength)
        do {
            try Self.check(
                try await activities.registerToken(
                    appID: caller.appID, deviceID: deviceID, activityID: activityID, token: token, attributesType: attributesType),
                deviceID: deviceID)
        } catch let ended as LiveActivityStore.ActivityEnded {
            throw Self.ended(ended)
        }
        return JSONResponse(RegisteredTokenJSON(deviceID: deviceID, activityID: activityID, attributesType: attributesType, token: token))
    }

    /// `{"attributes_type", "token"}`: the device's push-to-start token for an ActivityKit
    /// attributes type (`Activity<T>.pushToStartTokenUpdates`, iOS 17.2+).
    @Sendable func registerPushToStart(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<RegisteredTokenJSON> {
        let caller = try context.requireCaller()
        let deviceID = try await ownedDevice(caller, context)
        var request = request
        let fields = try AdminBody(try await request.jsonBody(context: context))
        try fields.allowOnly(["attributes_type", "token"])
        let attributesType = try fields.requiredText("attributes_type", max: NotificationRequest.maxShortTextLength)
        let token = try fields.activityToken()
        try Self.check(
            try await activities.registerPushToStart(appID: caller.appID, deviceID: deviceID, attributesType: attributesType, token: token),
            deviceID: deviceID)
        return JSONResponse(RegisteredTokenJSON(deviceID: deviceID, activityID: nil, attributesType: attributesType, token: token))
    }

    /// The app stopped showing the activity on this device (or the user dismissed it): its token
    /// goes, and the activity's event still waiting for it is cancelled. Answers whether there was one,
    /// so that a repeat is harmless.
    @Sendable func removeToken(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<RemovedTokenJSON> {
        let caller = try context.requireCaller()
        let deviceID = try await ownedDevice(caller, context)
        let activityID = try Self.pathText(context, "activity_id", max: LiveActivityRequest.maxActivityIDLength)
        let removed = try await activities.removeToken(appID: caller.appID, deviceID: deviceID, activityID: activityID)
        return JSONResponse(RemovedTokenJSON(deviceID: deviceID, activityID: activityID, attributesType: nil, removed: removed))
    }

    /// The device no longer wants activities of this attributes type started remotely.
    @Sendable func removePushToStart(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<RemovedTokenJSON> {
        let caller = try context.requireCaller()
        let deviceID = try await ownedDevice(caller, context)
        let attributesType = try Self.pathText(context, "attributes_type", max: NotificationRequest.maxShortTextLength)
        let removed = try await activities.removePushToStart(appID: caller.appID, deviceID: deviceID, attributesType: attributesType)
        return JSONResponse(RemovedTokenJSON(deviceID: deviceID, activityID: nil, attributesType: attributesType, removed: removed))
    }

    /// A path parameter of 1 to `max` characters without control characters; 422 naming it otherwise.
    private static func pathText(_ context: NotifiableRequestContext, _ name: String, max: Int) throws -> String {
        let text = context.parameters.get(name)?.removingPercentEncoding ?? ""
        guard !text.isEmpty, text.unicodeScalars.count <= max, !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw APIError(
                status: .unprocessableContent, code: "invalid_value", message: "\(name) in the path must be 1 to \(max) characters, percent-encoded.",
                field: name)
        }
        return text
    }

    @Sendable func send(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<LiveActivityEventJSON> {
        let caller = try context.requireServerCaller()
        var request = request
        let parsed = try LiveActivityRequest.parse(try await request.jsonBody(context: context), now: Date())
        do {
            let sent = try await activities.send(appID: caller.appID, parsed)
            return JSONResponse(
                LiveActivityEventJSON(
                    activityID: parsed.activityID, event: parsed.push.event.rawValue, notificationID: sent.notificationID,
                    timestamp: sent.timestamp, devices: sent.devices),
                status: .accepted)
        } catch let ended as LiveActivityStore.ActivityEnded {
            throw Self.ended(ended)
        } catch let started as LiveActivityStore.ActivityStarted {
            throw APIError(
                status: .conflict, code: "activity_exists",
                message: "The activity \(started.activityID) exists already; a start names a new activity_id (starting it again would show "
                    + "a second activity on the devices).", field: "activity_id")
        }
    }

    /// `{"message_storage": false}` (optional): a broadcast channel for the activity (iOS 18), made
    /// at Apple by a worker. 202 while it is asked for, 200 with it once it exists; the activity's
    /// summary says when it is open and its `channel_id`.
    @Sendable func requestChannel(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<ActivityChannelRequestJSON> {
        let caller = try context.requireServerCaller()
        let activityID = try Self.pathText(context, "activity_id", max: LiveActivityRequest.maxActivityIDLength)
        var request = request
        let fields = try AdminBody(try await request.jsonBody(context: context))
        try fields.allowOnly(["message_storage"])
        let messageStorage = try fields.boolean("message_storage") ?? false
        do {
            let channel = try await activities.requestChannel(appID: caller.appID, activityID: activityID, messageStorage: messageStorage)
            return JSONResponse(
                ActivityChannelRequestJSON(activityID: activityID, channel: ActivityChannelJSON(channel)),
                status: channel.state == .requested ? .accepted : .ok)
        } catch let ended as LiveActivityStore.ActivityEnded {
            throw Self.ended(ended)
        }
    }

    @Sendable func show(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<LiveActivityJSON> {
        let caller = try context.requireServerCaller()
        let activityID = try Self.pathText(context, "activity_id", max: LiveActivityRequest.maxActivityIDLength)
        guard let summary = try await activities.summary(appID: caller.appID, activityID: activityID) else {
            throw APIError.notFound("This app has no Live Activity \(activityID).")
        }
        return JSONResponse(LiveActivityJSON(summary))
    }

    /// The path's device, when it is a registered device of the caller's app; 404 otherwise, before
    /// anything else is judged (another app's device must not be told apart from none).
    private func ownedDevice(_ caller: Caller, _ context: NotifiableRequestContext) async throws -> Int64 {
        let deviceID = try context.pathID("id", what: "registered device of this app")
        guard try await activities.hasDevice(appID: caller.appID, deviceID: deviceID) else {
            throw APIError.notFound("There is no registered device of this app \(deviceID).")
        }
        return deviceID
    }

    static func ended(_ ended: LiveActivityStore.ActivityEnded) -> APIError {
        APIError(
            status: .conflict, code: "activity_ended",
            message: "The activity \(ended.activityID) has ended; start a new one under another activity_id.", field: "activity_id")
    }

    private static func check(_ registration: LiveActivityStore.Registration, deviceID: Int64) throws {
        switch registration {
        case .registered: return
        case .noSuchDevice: throw APIError.notFound("There is no registered device of this app \(deviceID).")
        case .notOnAPNs:
            throw APIError(
                status: .unprocessableContent, code: "not_on_apns",
                message: "Live Activities are iOS's: register them on the device's APNs registration, or on an FCM registration made "
                    + "with \"platform\": \"ios\"; an Android device has none.")
        }
    }
}

extension AdminBody {
    /// A string of 1 to `max` characters without control characters; nil when absent or null.
    func text(_ key: String, max: Int) throws -> String? {
        guard let text = try string(key) else { return nil }
        guard text.unicodeScalars.count <= max, !text.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
            throw APIError(
                status: .unprocessableContent, code: "invalid_value", message: "\(key) must be a string of 1 to \(max) characters.", field: key)
        }
        return text
    }

    /// As `text`, and required.
    func requiredText(_ key: String, max: Int) throws -> String {
        guard let text = try text(key, max: max) else {
            throw APIError(status: .unprocessableContent, code: "missing_field", message: "\(key) is required.", field: key)
        }
        return text
    }

    /// A Live Activity's token is an APNs token: hexadecimal, stored lower-case.
    func activityToken() throws -> String {
        do {
            return try PushToken.normalized(try requiredText("token", max: 4096), provider: .apns, field: "token")
        } catch let error as ValidationError {
            throw APIError.validation(error)
        }
    }
}
