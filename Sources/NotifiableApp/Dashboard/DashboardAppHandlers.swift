import Foundation
import Hummingbird
import NotifiableCore
import NotifiableStore

/// An app's notifications, a notification, a device, the queue: reading them, and the few
/// changes made from their pages (push defaults, re-queueing, cancelling).
extension DashboardController {
    static let pageSize = 50

    @Sendable func appNotifications(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let app = try await app(context, ConsoleAction.view, "see this app")
        let viewer = try context.requireOperator()
        let page = try await notifications.list(appID: app.id, beforeID: try request.cursor(), limit: Self.pageSize)
        let counters = try await notifications.counters(notificationIDs: page.map(\.id))
        return DashboardPages.notifications(
            app: app, page.map { ($0, counters[$0.id] ?? NotificationCounters()) }, nextCursor: page.count == Self.pageSize ? page.last?.id : nil,
            csrf: csrf(request), notice: request.uri.queryParameters["saved"] != nil ? "Push defaults saved." : nil,
            mayManage: viewer.may(.manage(appID: app.id)), maySend: viewer.may(.send(appID: app.id))
        )
    }

    /// The push defaults form: Android style, default time to live, iOS flags.
    @Sendable func changePushDefaults(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let form = try await form(of: request, "nothing was changed")
        let app = try await app(context, ConsoleAction.manage, "change this app's push defaults")
        guard let style = form["android_style"].flatMap(AndroidStyle.init(rawValue:)),
            let ttl = form["default_ttl_seconds"].flatMap({ Int64($0) }), PushDefaults.timeToLiveRange.contains(ttl)
        else {
            throw ConsoleRefusal.invalid(
                "The Android style must be data or notification, and the time to live "
                    + "\(PushDefaults.timeToLiveRange.lowerBound) to \(PushDefaults.timeToLiveRange.upperBound) seconds; nothing was changed.")
        }
        // An empty channel removes it, as null does in the admin API.
        let channel = form["default_android_channel_id"]?.trimmingCharacters(in: .whitespaces) ?? ""
        guard channel.unicodeScalars.count <= 255, !channel.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
            throw ConsoleRefusal.invalid("The Android channel is at most 255 characters, without control characters; nothing was changed.")
        }
        // An unticked checkbox is not sent at all.
        _ = try await administration.update(
            appID: app.id,
            AppStore.Changes(
                androidStyle: style, timeToLiveSeconds: ttl, mutableContent: form["default_mutable_content"] == "on",
                contentAvailable: form["default_content_available"] == "on", androidChannelID: .some(channel.isEmpty ? nil : channel)
            ))
        return Response(status: .seeOther, headers: [.location: "/dashboard/apps/\(app.id)?saved=1"])
    }

    @Sendable func notification(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let app = try await app(context, ConsoleAction.view, "see this app")
        let viewer = try context.requireOperator()
        let id = try context.pathID("notification", what: "notification")
        guard let notification = try await notifications.notification(id: id, appID: app.id) else {
            throw ConsoleRefusal.notFound("App \(app.id) has no notification \(id).")
        }
        let states = DeliveryState.names
        let state = request.uri.queryParameters["state"].map(String.init).flatMap { states.contains($0) ? $0 : nil }
        let deliveries = try await notifications.deliveries(notificationID: id, state: state, afterID: try request.cursor(), limit: Self.pageSize)
        let counters = try await notifications.counters(notificationID: id)
        return DashboardNotificationPage(
            app: app, notification: notification, counters: counters,
            status: NotificationJSON.state(of: notification, counters: counters),
            perMinute: try await queries.sendsPerMinute(notificationID: id), reasons: try await queries.failureReasons(notificationID: id),
            deliveries: deliveries, state: state, nextCursor: deliveries.count == Self.pageSize ? deliveries.last?.id : nil,
            csrf: csrf(request), maySend: viewer.may(.send(appID: app.id)),
            requeued: request.uri.queryParameters["requeued"].flatMap { Int(String($0)) }
        ).response()
    }

    /// Re-queues this notification's dead deliveries only.
    @Sendable func requeueNotification(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        _ = try await form(of: request, "nothing was re-queued")
        let app = try await app(context, ConsoleAction.send, "re-queue this app's deliveries")
        let id = try context.pathID("notification", what: "notification")
        guard try await sending.notification(id: id, appID: app.id) != nil else { throw ConsoleRefusal.notFound("App \(app.id) has no notification \(id).") }
        let count = try await queue.requeueDead(appID: app.id, ids: nil, notificationID: id)
        return Response(status: .seeOther, headers: [.location: "/dashboard/apps/\(app.id)/notifications/\(id)?requeued=\(count)"])
    }

    /// Cancels what of the notification has not been sent yet.
    @Sendable func cancelNotification(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        _ = try await form(of: request, "nothing was cancelled")
        let app = try await app(context, ConsoleAction.send, "cancel this app's notifications")
        let id = try context.pathID("notification", what: "notification")
        guard try await sending.cancel(id: id, appID: app.id) else { throw ConsoleRefusal.notFound("App \(app.id) has no notification \(id).") }
        return Response(status: .seeOther, headers: [.location: "/dashboard/apps/\(app.id)/notifications/\(id)"])
    }

    @Sendable func device(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let app = try await app(context, ConsoleAction.view, "see this app")
        let id = try context.pathID("device", what: "device")
        guard let device = try await devices.device(id: id, appID: app.id) else { throw ConsoleRefusal.notFound("App \(app.id) has no device \(id).") }
        let deliveries = try await queries.deliveries(deviceID: id, appID: app.id, beforeID: try request.cursor(), limit: Self.pageSize)
        return DashboardPages.device(
            app: app, device, location: try await finder.location(deviceID: id), others: try await finder.otherDevices(of: device),
            history: try await queries.history(deviceID: id, appID: app.id), deliveries: deliveries,
            nextCursor: deliveries.count == Self.pageSize ? deliveries.last?.id : nil
        )
    }

    @Sendable func queuePage(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        try require(.viewService, context, "see every app's queue")
        let dead = try await queueReads.dead(appID: nil, afterID: try request.cursor(), limit: Self.pageSize)
        // The waiting states through their partial indexes, and the last day's outcomes from the
        // trends' roll-up: never a count of the sent and failed rows that make up most of the table.
        let lastDay = try await trends.hourly(appID: nil, since: Date().addingTimeInterval(-24 * 3600))
        return DashboardPages.queue(
            try await queueReads.depth(), lastDay: lastDay, dead: dead, nextCursor: dead.count == Self.pageSize ? dead.last?.id : nil, csrf: csrf(request),
            requeued: request.uri.queryParameters["requeued"].flatMap { Int(String($0)) },
            mayRequeue: try context.requireOperator().may(.administer)
        )
    }

    /// Re-queues every app's dead deliveries (owners), or one app's (`app` in the form; its admins).
    @Sendable func requeue(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let form = try await form(of: request, "nothing was re-queued")
        if let named = form["app"] {
            let app = try await app(id: Int64(named), context, ConsoleAction.manage, "re-queue this app's dead deliveries")
            let count = try await queue.requeueDead(appID: app.id, ids: nil)
            return Response(status: .seeOther, headers: [.location: "/dashboard/apps/\(app.id)/settings?requeued=\(count)"])
        }
        try require(.administer, context, "re-queue every app's dead deliveries")
        let count = try await queue.requeueDead(appID: nil, ids: nil)
        return Response(status: .seeOther, headers: [.location: "/dashboard/queue?requeued=\(count)"])
    }
}
