import Foundation
import Hummingbird
import NotifiableCore
import NotifiableStore

/// The apps, an app's notifications, a notification, a device: reading them, and the few changes
/// made from their pages (push defaults, re-queueing, cancelling).
struct ConsoleNotificationPages: ConsolePages {
    let console: ConsoleRequests
    /// The pages' reads, from the read pool when there is one (NOTIFIABLE_READ_DATABASE_URL).
    let notifications: NotificationStore
    /// Cancels (a write: the primary).
    let sending: NotificationStore
    /// Re-queues dead deliveries (a write: the primary).
    let queue: QueueAdminStore
    let queries: DashboardStore
    let devices: DeviceStore
    let finder: DeviceFinder
    let administration: AppAdministration
    let activities: LiveActivityStore

    func addRoutes(to pages: RouterGroup<NotifiableRequestContext>) {
        pages.get(use: overview)
        pages.get("apps/:id", use: appNotifications)
        pages.post("apps/:id/push-defaults", use: changePushDefaults)
        pages.get("apps/:id/notifications/:notification", use: notification)
        pages.post("apps/:id/notifications/:notification/requeue", use: requeueNotification)
        pages.post("apps/:id/notifications/:notification/cancel", use: cancelNotification)
        pages.get("notifications/:notification", use: notificationByID)
        pages.get("apps/:id/devices/:device", use: device)
    }
}

extension ConsoleNotificationPages {
    /// The apps the operator may see. Owners and viewers see every app; admins and editors their own.
    @Sendable func overview(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let viewer = try context.requireOperator()
        let page = try await queries.appOverviews(
            in: viewer.role.isScopedToApps ? viewer.appIDs.sorted() : nil, afterID: try request.cursor(), limit: Self.pageSize)
        return DashboardPages.apps(page, mayCreate: viewer.may(.administer), nextCursor: page.count == Self.pageSize ? page.last?.app.id : nil)
    }

    /// A notification by its id alone: its page under its app.
    @Sendable func notificationByID(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let id = try context.pathID("notification", what: "notification")
        guard let appID = try await queries.appID(notificationID: id), try context.requireOperator().sees(appID: appID) else {
            throw ConsoleRefusal.notFound("There is no notification \(id).")
        }
        return Response(status: .seeOther, headers: [.location: "/dashboard/apps/\(appID)/notifications/\(id)"])
    }

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
            requeued: request.uri.queryParameters["requeued"].flatMap { Int(String($0)) },
            activity: try await activities.summary(appID: app.id, notificationID: id)
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
}
