import Crypto
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NotifiableCore
import NotifiableSandbox
import NotifiableStore
import NotifiableTesting
import Testing

@testable import NotifiableApp

/// The console's features as an operator uses them, through HTTP with a signed-in session: the
/// numbers each page shows are checked against what was done (or against the deliveries
/// themselves), not only that the page answers.
///
/// Tests that fan out or re-queue work on a database of their own: `Pipeline.fanOut` takes every
/// app's notifications, and an owner's "re-queue everything" in another suite would touch this
/// suite's dead deliveries.
@Suite struct ConsoleFeaturesTests {
    // MARK: Compose

    @Test func previewCountsTheAudienceAndShowsEachPlatformsPayload() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp(name: "Compose")
            let other = try await service.createApp(name: "Someone else's")
            // 3 reachable iOS and 2 Android devices; ann has 2 + 1 of them, and an invalidated iPhone.
            let annPhone = try await Self.register(client, app, .apns, Pipeline.token(0xA1), alias: "ann")
            _ = try await Self.register(client, app, .apns, Pipeline.token(0xA2), alias: "ann")
            _ = try await Self.register(client, app, .fcm, "ann-android-token", alias: "ann", extra: #", "tags": ["beta"]"#)
            let bobPhone = try await Self.register(client, app, .apns, Pipeline.token(0xB1), alias: "bob", extra: #", "tags": ["beta"]"#)
            _ = try await Self.register(client, app, .fcm, "bob-android-token", alias: "bob")
            let gone = try await Self.register(client, app, .apns, Pipeline.token(0xA3), alias: "ann", extra: #", "tags": ["beta"]"#)
            try await service.sql("UPDATE devices SET invalidated_at = now(), invalidation_reason = 'Unregistered' WHERE id = \(gone)")
            let elsewhere = try await Self.register(client, other, .apns, Pipeline.token(0xC1), alias: "ann")

            let console = try await ConsoleSession.admin(client, service)
            // The app's push defaults shape what is sent, so the preview shows them too.
            let defaults = try await console.post(
                "/dashboard/apps/\(app.app.id)/push-defaults",
                ["android_style": "notification", "default_ttl_seconds": "3600", "default_mutable_content": "on"])
            #expect(defaults.status == .seeOther)
            let compose = "/dashboard/apps/\(app.app.id)/compose"
            let text: [String: String] = [
                "action": "preview", "title": "Sale", "message": "Today only",
                "localized": #"{"fr": {"title": "Soldes", "message": "Aujourd'hui seulement"}}"#,
                "parameters": #"{"deep_link": "app://offers", "count": 3}"#,
            ]
            // (audience fields, devices, iOS, Android)
            let audiences: [([String: String], Int64, Int64, Int64)] = [
                (["audience": "all"], 5, 3, 2),
                (["audience": "users", "users": "ann"], 3, 2, 1),
                (["audience": "users", "users": "ann, bob"], 5, 3, 2),
                (["audience": "tags", "tags": "beta"], 2, 1, 1),
                // Another app's device and an invalidated one are not reached.
                (["audience": "devices", "devices": "\(annPhone), \(bobPhone), \(gone), \(elsewhere)"], 2, 2, 0),
            ]
            for (fields, total, ios, android) in audiences {
                let answer = try await console.post(compose, text.merging(fields) { $1 })
                let page = String(buffer: answer.body)
                #expect(answer.status == .ok, "\(fields): \(page)")
                #expect(ConsolePage.card(page, "Devices") == total, "\(fields)")
                #expect(ConsolePage.card(page, "iOS (APNs)") == ios, "\(fields)")
                #expect(ConsolePage.card(page, "Android (FCM)") == android, "\(fields)")
            }

            // The payloads, default text then French: APNs (alert, n_id, parameters at the top level)
            // and FCM (title, message, n_id and every parameter as strings in `data`; CONTRACT §5).
            let page = try await console.post(compose, text.merging(["audience": "all"]) { $1 })
            let payloads = try ConsolePage.preformatted(String(buffer: page.body)).map { try JSONValue.decode(Array($0.utf8)) }
            try #require(payloads.count == 6, "two locales, three platforms each (APNs, Android, an iPhone on Firebase)")
            for (index, (title, message)) in [("Sale", "Today only"), ("Soldes", "Aujourd'hui seulement")].enumerated() {
                let apns = payloads[index * 3]
                let fcm = payloads[index * 3 + 1]
                let iphone = payloads[index * 3 + 2]
                #expect(iphone["message"]?["apns"]?["payload"]?["aps"]?["alert"]?["title"]?.stringValue == title)
                #expect(iphone["message"]?["android"] == nil)
                #expect(apns["aps"]?["alert"]?["title"]?.stringValue == title)
                #expect(apns["aps"]?["alert"]?["body"]?.stringValue == message)
                #expect(apns["n_id"]?.intValue == 0, "n_id is there (the id comes with the send)")
                #expect(apns["deep_link"]?.stringValue == "app://offers")
                #expect(apns["aps"]?["mutable-content"]?.intValue == 1, "the app's default")
                let data = fcm["message"]?["data"]
                #expect(data?["title"]?.stringValue == title)
                #expect(data?["message"]?.stringValue == message)
                #expect(data?["n_id"]?.stringValue == "0")
                #expect(data?["count"]?.stringValue == "3", "FCM data values are strings")
                #expect(data?.objectValue?.values.allSatisfy { $0.stringValue != nil } == true)
                // The app's Android style shows the text as a notification; its time to live goes along.
                #expect(fcm["message"]?["notification"]?["title"]?.stringValue == title)
                let ttl = fcm["message"]?["android"]?["ttl"]?.stringValue.flatMap { Int($0.dropLast()) }
                #expect(ttl.map { (3590...3600).contains($0) } == true, "\(fcm)")
            }
            #expect(try await service.integer("SELECT count(*) FROM notifications WHERE app_id = \(app.app.id)") == 0, "a preview sends nothing")
        }
    }

    static func composePath(_ appID: Int64) -> String { "/dashboard/apps/\(appID)/compose" }

    @Test func composeOffersThePresentationFieldsAndPreviewsThemPerPlatform() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp(name: "Presenting")
            _ = try await Self.register(client, app, .apns, Pipeline.token(0xE1), alias: "eve")
            let console = try await ConsoleSession.admin(client, service)
            // The app's default Android channel is set on its page and fills what a notification leaves unsaid.
            let saved = try await console.post(
                "/dashboard/apps/\(app.app.id)/push-defaults",
                ["android_style": "notification", "default_ttl_seconds": "3600", "default_android_channel_id": "general"])
            #expect(saved.status == .seeOther)
            #expect(try await console.page("/dashboard/apps/\(app.app.id)").contains(#"name="default_android_channel_id" maxlength="255" value="general""#))
            let defaulted = try await console.post(Self.composePath(app.app.id), ["action": "preview", "title": "t", "audience": "all"])
            let drawn = try ConsolePage.preformatted(String(buffer: defaulted.body)).map { try JSONValue.decode(Array($0.utf8)) }
            #expect(drawn[1]["message"]?["android"]?["notification"]?["channel_id"]?.stringValue == "general")
            _ = try await console.post(
                "/dashboard/apps/\(app.app.id)/push-defaults", ["android_style": "data", "default_ttl_seconds": "3600", "default_android_channel_id": ""])
            let compose = Self.composePath(app.app.id)
            let form = try await console.page(compose)
            for field in ["interruption_level", "image_url", "android_channel_id", "android_color", "loc_key", "apns_overrides", "fcm_overrides"] {
                #expect(form.contains("name=\"\(field)\""), "\(field)")
            }
            let fields = [
                "action": "preview", "title": "Boarding", "audience": "all", "interruption_level": "time-sensitive",
                "image_url": "https://cdn.example.com/gate.png", "android_channel_id": "flights", "android_color": "#123456",
                "fcm_overrides": #"{"data": {"gate": "B7"}}"#,
            ]
            let page = try await console.post(compose, fields)
            #expect(page.status == .ok, "\(String(buffer: page.body))")
            let payloads = try ConsolePage.preformatted(String(buffer: page.body)).map { try JSONValue.decode(Array($0.utf8)) }
            try #require(payloads.count == 3)
            #expect(payloads[0]["aps"]?["interruption-level"]?.stringValue == "time-sensitive")
            #expect(payloads[0]["image_url"]?.stringValue == "https://cdn.example.com/gate.png")
            #expect(payloads[1]["message"]?["android"]?["priority"]?.stringValue == "HIGH")
            #expect(payloads[1]["message"]?["data"]?["android_channel_id"]?.stringValue == "flights")
            #expect(payloads[1]["message"]?["data"]?["gate"]?.stringValue == "B7")
            #expect(payloads[2]["message"]?["apns"]?["fcm_options"]?["image"]?.stringValue == "https://cdn.example.com/gate.png")
            // A critical level comes with the default critical sound; a bad colour is the API's own 422, naming the field.
            let critical = try await console.post(compose, fields.merging(["interruption_level": "critical"]) { $1 })
            let sound = try ConsolePage.preformatted(String(buffer: critical.body)).first.map { try JSONValue.decode(Array($0.utf8)) }
            #expect(sound?["aps"]?["sound"]?["critical"]?.intValue == 1)
            let refused = try await console.post(compose, fields.merging(["android_color": "blue"]) { $1 })
            #expect(refused.status == .unprocessableContent)
            #expect(String(buffer: refused.body).contains("android.color"))
        }
    }

    @Test func composeRefusesWhatTheAPIWouldAndSendsEachFormOnce() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp(name: "Compose and send")
            for n in 1...2 { _ = try await Self.register(client, app, .apns, Pipeline.token(0xD0 + n), alias: "ann") }
            _ = try await Self.register(client, app, .fcm, "ann-fcm", alias: "ann")
            _ = try await Self.register(client, app, .apns, Pipeline.token(0xE0), alias: "bob")
            let console = try await ConsoleSession.admin(client, service)
            let compose = "/dashboard/apps/\(app.app.id)/compose"
            func sent() async throws -> Int64? { try await service.integer("SELECT count(*) FROM notifications WHERE app_id = \(app.app.id)") }

            // Forms the API would refuse: 422, the reason on the page, the operator's text kept, nothing made.
            let refused: [([String: String], String)] = [
                (["localized": "{\"fr\": "], "localized: This is not valid JSON."),
                (["audience": "devices", "devices": "12, twelve"], "devices: Device ids are numbers separated by commas."),
                (["audience": "users", "users": "ann", "ttl_seconds": "soon"], "ttl_seconds: The time to live is a number of seconds."),
            ]
            for (fields, reason) in refused {
                for action in ["preview", "send"] {
                    let answer = try await console.post(compose, ["action": action, "title": "Sale"].merging(fields) { $1 })
                    let page = String(buffer: answer.body)
                    #expect(answer.status == .unprocessableContent, "\(action) \(fields)")
                    #expect(page.contains(#"<p class="bad" id="error">\#(HTML.escape(reason))</p>"#), "\(action) \(fields): \(page)")
                    #expect(page.contains(#"name="title" value="Sale""#), "the form keeps what was typed")
                }
            }
            #expect(try await sent() == 0)

            // The page's form carries one idempotency key: sending it twice (a double click) makes one notification.
            let form = try await console.page(compose)
            let key = try #require(ConsolePage.inputValue(form, "idempotency_key"))
            let fields = ["action": "send", "title": "Sale", "message": "Today only", "audience": "users", "users": "ann", "idempotency_key": key]
            let first = try await console.post(compose, fields)
            #expect(first.status == .seeOther)
            let location = try #require(first.headers[.location])
            let again = try await console.post(compose, fields)
            #expect(again.status == .seeOther)
            #expect(again.headers[.location] == location)
            #expect(try await sent() == 1)
            let id = try #require(Int64(location.split(separator: "/").last ?? ""))
            #expect(location == "/dashboard/apps/\(app.app.id)/notifications/\(id)")

            // The live page shows what the form said, and the notification targets it.
            let live = try await console.get(location)
            #expect(live.status == .ok)
            #expect(String(buffer: live.body).contains("audience: users ann"))
            let stored = try #require(
                try await NotificationStore(client: service.postgres, logger: TestDatabase.logger).notification(id: id, appID: app.app.id))
            #expect(stored.targeting.userAliases == ["ann"])
            #expect(!stored.targeting.all)
            #expect(stored.content.text.title == "Sale")
            try await Pipeline.fanOut(service)
            #expect(try await service.integer("SELECT count(*) FROM deliveries WHERE notification_id = \(id)") == 3, "ann's three devices")

            // The same form changed after it was sent (the browser's back button keeps the key):
            // refused with a reason, not a 500, and nothing more is made; the page brings a new key.
            let changed = try await console.post(compose, fields.merging(["title": "Sale, now 50 % off"]) { $1 })
            let changedPage = String(buffer: changed.body)
            #expect(changed.status == .unprocessableContent, "\(changedPage)")
            #expect(changedPage.contains("notification \(id)"))
            #expect(try await sent() == 1)
            let newKey = try #require(ConsolePage.inputValue(changedPage, "idempotency_key"))
            #expect(newKey != key)
            #expect(try await console.post(compose, fields.merging(["idempotency_key": newKey]) { $1 }).status == .seeOther)
            #expect(try await sent() == 2)
        }
    }

    // MARK: Finding devices

    @Test func searchFindsDevicesByAliasTokenPrefixAndIdAndOpensANotificationById() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            // Device and notification ids come from two sequences; kept far apart here, so that the
            // notification searched for shares its id with no device (then both would be listed).
            try await service.sql("ALTER SEQUENCE notifications_id_seq RESTART WITH 1000000")
            let app = try await service.createApp(name: "Search")
            let coffee = "c0ffee" + String(repeating: "1", count: 58)
            let ann = try await Self.register(client, app, .apns, coffee, alias: "ann")
            let percent = try await Self.register(client, app, .fcm, "Ab%_first:APA91b", alias: "ann")
            let mixed = try await Self.register(client, app, .fcm, "AbXYsecond:APA91b", alias: "bob")
            _ = try await Self.register(client, app, .fcm, "abc1third:APA91b", alias: "carl")
            let underscore = try await Self.register(client, app, .fcm, "ab_1fourth:APA91b", alias: "dan")
            // Two rows of eve's; giving the second the first's token merges the first into it.
            let merged = try await Self.register(client, app, .apns, Pipeline.token(0xE7E1), alias: "eve")
            let survivor = try await Self.register(client, app, .apns, Pipeline.token(0xE7E2), alias: "eve")
            let merge = try await client.signed(
                .patch, "/api/v1/device_tokens/\(survivor)", body: #"{"device_token": {"token": "\#(Pipeline.token(0xE7E1))"}}"#, as: app.deviceCredential)
            #expect(merge.status == .ok)
            #expect(try await service.integer("SELECT merged_into FROM devices WHERE id = \(merged)") == survivor)
            let notification = try await Pipeline.send(client, app.serverCredential, #"{"title": "Found", "all": true}"#)

            let console = try await ConsoleSession.admin(client, service)
            func found(_ text: String) async throws -> Set<Int64> {
                let answer = try await console.get("/dashboard/search?q=" + (text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""))
                #expect(answer.status == .ok, "q=\(text)")
                return Set(ConsolePage.deviceIDs(String(buffer: answer.body)))
            }
            #expect(try await found("ann") == [ann, percent])
            #expect(try await found("C0FFEE") == [ann], "APNs tokens are stored lower-case; the search ignores case")
            #expect(try await found("abxy") == [mixed], "an FCM token keeps its case; the search ignores it")
            #expect(try await found("ab%_") == [percent], "% and _ in the query are themselves, not wildcards")
            #expect(try await found("ab_1") == [underscore])
            #expect(try await found("abc") == [], "a token is searched from 4 characters")
            #expect(try await found("\(mixed)") == [mixed])
            #expect(try await found("eve") == [survivor], "a merged device is not shown")
            #expect(try await found("\(merged)") == [])
            #expect(try await found(Pipeline.token(0xE7E1)) == [survivor], "the token now is the survivor's")

            // A notification's id opens its page.
            let opened = try await console.get("/dashboard/search?q=\(notification)")
            #expect(opened.status == .seeOther)
            #expect(opened.headers[.location] == "/dashboard/apps/\(app.app.id)/notifications/\(notification)")
            let nothing = try await console.page("/dashboard/search?q=%3Cb%3Enobody")
            #expect(nothing.contains("No device matches &lt;b&gt;nobody."))
        }
    }

    @Test func anAppsDevicesFilterAndPageThroughEveryDeviceOnce() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp(name: "Devices")
            // 110 plain iPhones, then five devices that the filters tell apart.
            try await service.insertDevices(appID: app.app.id, count: 110, tokenSeed: Int64.random(in: 1...Int64(UInt32.max)))
            let frenchCanadian = try await Self.register(
                client, app, .apns, Pipeline.token(0xF1), alias: "f1", extra: #", "language": "fr", "country": "ca", "tags": ["beta"]"#)
            let french = try await Self.register(client, app, .fcm, "fcm-french", extra: #", "language": "fr", "country": "fr""#)
            let canadian = try await Self.register(client, app, .fcm, "fcm-canadian", extra: #", "language": "en", "country": "ca", "tags": ["beta", "vip"]"#)
            let invalid = try await Self.register(client, app, .apns, Pipeline.token(0xF4), extra: #", "language": "en", "country": "gb""#)
            try await service.sql("UPDATE devices SET invalidated_at = now(), invalidation_reason = 'Unregistered' WHERE id = \(invalid)")
            let unregistered = try await Self.register(client, app, .apns, Pipeline.token(0xF5), extra: #", "language": "fr""#)
            #expect(try await client.signed(.delete, "/api/v1/device_tokens/\(unregistered)", as: app.deviceCredential).status.code < 300)

            let console = try await ConsoleSession.admin(client, service)
            let devices = "/dashboard/apps/\(app.app.id)/devices"
            let filters: [(String, Set<Int64>)] = [
                ("provider=fcm", [french, canadian]),
                ("language=fr", [frenchCanadian, french]),
                ("language=FR", [frenchCanadian, french]),
                ("country=CA", [frenchCanadian, canadian]),
                ("tag=beta", [frenchCanadian, canadian]),
                ("tag=vip", [canadian]),
                ("invalidated=yes", [invalid]),
                ("provider=apns&language=fr", [frenchCanadian]),
                ("provider=fcm&invalidated=yes", []),
            ]
            for (query, expected) in filters {
                let pages = try await console.walk("\(devices)?\(query)", next: "Older devices →", ConsolePage.deviceIDs)
                #expect(pages.count == 1 && Set(pages[0]) == expected, "\(query): \(pages)")
            }

            // Every registered device once, newest first, 50 a page; a filter stays on through the pages.
            let registered = try await service.integers(
                "SELECT id FROM devices WHERE app_id = \(app.app.id) AND unregistered_at IS NULL ORDER BY id DESC")
            #expect(registered.count == 114)
            let all = try await console.walk(devices, next: "Older devices →", ConsolePage.deviceIDs)
            #expect(all.map(\.count) == [50, 50, 14])
            #expect(all.flatMap { $0 } == registered)
            let reachable = try await console.walk("\(devices)?invalidated=no", next: "Older devices →", ConsolePage.deviceIDs)
            #expect(reachable.map(\.count) == [50, 50, 13])
            #expect(reachable.flatMap { $0 } == registered.filter { $0 != invalid })
        }
    }

    @Test func aDevicesPageShowsItsTagsPropertiesLocationDeliveriesAndItsUsersOtherDevices() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp(name: "Device pages")
            let other = try await service.createApp(name: "Another app")
            // The SDKs send latitude and longitude as platform properties; the database reads them into columns.
            let phone = try await Self.register(
                client, app, .apns, Pipeline.token(0xD01), alias: "dora",
                extra:
                    #", "language": "fr", "country": "ca", "tags": ["beta", "vip"], "custom_properties": {"plan": "gold <b>"}, "latitude": 48.8566, "longitude": 2.3522"#
            )
            let tablet = try await Self.register(client, app, .fcm, "dora-tablet", alias: "dora")
            let watch = try await Self.register(client, app, .apns, Pipeline.token(0xD03), alias: "dora")
            _ = try await Self.register(client, app, .apns, Pipeline.token(0xD04), alias: "not-dora")
            let anonymous = try await Self.register(client, app, .apns, Pipeline.token(0xD05))
            _ = try await Self.register(client, other, .apns, Pipeline.token(0xD06), alias: "dora")
            let notification = try await Pipeline.send(client, app.serverCredential, #"{"title": "Hello Dora", "user_aliases": ["dora"]}"#)
            try await Pipeline.fanOut(service)
            try await service.sql(
                "UPDATE deliveries SET state = 'sent', sent_at = now(), attempts = 1 WHERE notification_id = \(notification) AND device_id = \(phone)")
            #expect(
                try await client.signed(
                    .post, "/api/v1/notifications/\(notification)/delivered", body: #"{"device_token_id": "\#(phone)"}"#, as: app.deviceCredential
                ).status.code < 300)

            let console = try await ConsoleSession.admin(client, service)
            let page = try await console.page("/dashboard/apps/\(app.app.id)/devices/\(phone)")
            #expect(page.contains(#"<td data-label="Value"><code>beta</code> <code>vip</code></td>"#))
            #expect(page.contains(#"<td data-label="Property">plan</td><td data-label="Value"><code>&quot;gold &lt;b&gt;&quot;</code></td>"#))
            #expect(page.contains(#"<td data-label="Value">48.85660, 2.35220</td>"#))
            #expect(page.contains(#"<td data-label="Value">fr_CA</td>"#))
            #expect(Set(ConsolePage.deviceIDs(ConsolePage.section(page, "The user's other devices"))) == [tablet, watch])
            let deliveries = ConsolePage.section(page, "Deliveries")
            #expect(deliveries.contains(#"href="/dashboard/apps/\#(app.app.id)/notifications/\#(notification)""#))
            #expect(deliveries.contains(#"<span class="sent">sent</span>"#))
            #expect(!deliveries.contains(#"<td data-label="Delivered">–</td>"#), "delivered is shown with its time")

            let tabletPage = try await console.page("/dashboard/apps/\(app.app.id)/devices/\(tablet)")
            #expect(ConsolePage.section(tabletPage, "Deliveries").contains(#"<span class="available">available</span>"#))
            #expect(Set(ConsolePage.deviceIDs(ConsolePage.section(tabletPage, "The user's other devices"))) == [phone, watch])

            let lonely = try await console.page("/dashboard/apps/\(app.app.id)/devices/\(anonymous)")
            #expect(lonely.contains("not reported"))
            #expect(lonely.contains("The device is anonymous."))
            #expect(lonely.contains("Nothing sent to this device yet."))
            // Another app's device is not found under this app.
            #expect(try await console.get("/dashboard/apps/\(other.app.id)/devices/\(phone)").status == .notFound)
        }
    }

    // MARK: A notification

    @Test func aNotificationsCountersAddUpAndItsDeliveriesFilterAndPage() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp(name: "Counters")
            try await service.insertDevices(appID: app.app.id, count: 65, tokenSeed: 0xC0)
            let id = try await Pipeline.send(client, app.serverCredential, #"{"title": "Counted", "all": true}"#)
            try await Pipeline.fanOut(service)
            // As the workers would leave them: 5 sent, 3 failed, 2 dead, 4 waiting to retry, 51 waiting.
            // The sent ones are the newest, after the rest: a state's pages must not run into them.
            try await Self.settle(service, id, 5, to: "sent", newestFirst: true)
            try await Self.settle(service, id, 3, to: "failed", reason: "BadDeviceToken")
            try await Self.settle(service, id, 2, to: "dead", reason: "gave up")
            try await Self.settle(service, id, 4, to: "retrying", reason: "ServiceUnavailable")

            let console = try await ConsoleSession.admin(client, service)
            let path = "/dashboard/apps/\(app.app.id)/notifications/\(id)"
            func cards() async throws -> [String: Int64] {
                let page = try await console.page(path)
                var cards: [String: Int64] = [:]
                for label in ["Targeted", "Sent", "Failed", "Dead", "Pending", "Retrying", "Cancelled"] { cards[label] = ConsolePage.card(page, label) }
                return cards
            }
            // Each card against the deliveries themselves, and the parts against Targeted.
            func expectCardsMatchTheDeliveries() async throws {
                let shown = try await cards()
                let states = ["Sent": "sent", "Failed": "failed", "Dead": "dead", "Retrying": "retrying", "Cancelled": "cancelled"]
                for (label, state) in states { #expect(shown[label] == (try await service.deliveries(of: id, in: state)), "\(label)") }
                #expect(
                    shown["Pending"]
                        == (try await service.integer("SELECT count(*) FROM deliveries WHERE notification_id = \(id) AND state IN ('available', 'running')")))
                #expect(shown["Targeted"] == 65)
                let parts = ["Sent", "Failed", "Dead", "Pending", "Retrying", "Cancelled"].compactMap { shown[$0] }
                #expect(parts.count == 6 && parts.reduce(0, +) == shown["Targeted"], "\(shown)")
            }
            try await expectCardsMatchTheDeliveries()
            #expect(try await cards()["Pending"] == 51)

            // Cancelling from the page's own form cancels what waits, the retrying included.
            let page = try await console.page(path)
            #expect(page.contains(#"action="\#(path)/cancel""#))
            let cancelled = try await console.post("\(path)/cancel")
            #expect(cancelled.status == .seeOther)
            #expect(cancelled.headers[.location] == path)
            try await expectCardsMatchTheDeliveries()
            #expect(try await cards()["Cancelled"] == 55)
            #expect(try await console.page(path).contains(#"<strong class="status" id="status">cancelled</strong>"#))

            // The deliveries list by state, 50 a page: each delivery once, none of another state.
            for (state, count, pages) in [("cancelled", 55, [50, 5]), ("sent", 5, [5]), ("failed", 3, [3]), ("dead", 2, [2]), ("retrying", 0, [0])] {
                let walked = try await console.walk("\(path)?state=\(state)", next: "Next deliveries →") { page in
                    let rows = ConsolePage.section(page, "Deliveries")
                    #expect(rows.components(separatedBy: #"<span class=""#).count - 1 == rows.components(separatedBy: #"<span class="\#(state)">"#).count - 1)
                    return ConsolePage.deviceIDs(rows)
                }
                let expected = try await service.integers("SELECT device_id FROM deliveries WHERE notification_id = \(id) AND state = \(state) ORDER BY id")
                #expect(walked.map(\.count) == pages, "\(state)")
                #expect(walked.flatMap { $0 } == expected, "\(state)")
                #expect(expected.count == count)
            }
            let everything = try await console.walk(path, next: "Next deliveries →") { ConsolePage.deviceIDs(ConsolePage.section($0, "Deliveries")) }
            #expect(everything.map(\.count) == [50, 15])
            #expect(Set(everything.flatMap { $0 }).count == 65)
        }
    }

    /// A Live Activity's notification page says which activity it is, its tokens, its channel and
    /// its broadcasts; its pushes are rows of kind "activity" among the deliveries.
    @Test func aLiveActivitysNotificationPageShowsTheActivityAndItsChannel() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let device = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0xC0A1))
            _ = try await client.signed(
                .post, "/api/v1/device_tokens/\(device)/live_activities", body: #"{"activity_id": "race <7>", "token": "\#(Pipeline.token(0xC0A2))"}"#,
                as: app.deviceCredential)
            _ = try await client.signed(.post, "/api/v1/live_activities/race%20%3C7%3E/channel", as: app.serverCredential)
            let event = try await client.signed(
                .post, "/api/v1/live_activities", body: #"{"event": "update", "activity_id": "race <7>", "content_state": {"lap": 3}}"#,
                as: app.serverCredential)
            let id = try #require(event.json["notification_id"]?.intValue)
            let console = try await ConsoleSession.admin(client, service)
            let page = try await console.page("/dashboard/apps/\(app.app.id)/notifications/\(id)")
            #expect(page.contains("<h2>Live Activity</h2>"))
            #expect(page.contains("<strong>race &lt;7&gt;</strong> · active · 1 token registered · broadcast channel requested"), "\(page)")
            #expect(page.contains("(activity)"), "its push is listed as the activity's")
            // Any other notification's page has no such section.
            let plain = try await Pipeline.send(client, app.serverCredential, #"{"title": "x", "device_ids": [\#(device)]}"#)
            #expect(try await !console.page("/dashboard/apps/\(app.app.id)/notifications/\(plain)").contains("Live Activity"))
        }
    }

    @Test func requeueingANotificationTouchesOnlyItsOwnDeadDeliveries() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp(name: "Requeue one")
            let other = try await service.createApp(name: "Requeue other")
            try await service.insertDevices(appID: app.app.id, count: 4, tokenSeed: 0xA)
            try await service.insertDevices(appID: other.app.id, count: 2, tokenSeed: 0xB)
            let first = try await Pipeline.send(client, app.serverCredential, #"{"title": "First", "all": true}"#)
            let second = try await Pipeline.send(client, app.serverCredential, #"{"title": "Second", "all": true}"#)
            let elsewhere = try await Pipeline.send(client, other.serverCredential, #"{"title": "Elsewhere", "all": true}"#)
            try await Pipeline.fanOut(service)
            try await Self.settle(service, first, 3, to: "dead", reason: "gave up")
            try await Self.settle(service, first, 1, to: "sent")
            try await Self.settle(service, second, 4, to: "dead", reason: "gave up")
            try await Self.settle(service, elsewhere, 2, to: "dead", reason: "gave up")

            let console = try await ConsoleSession.admin(client, service)
            let path = "/dashboard/apps/\(app.app.id)/notifications/\(first)"
            #expect(try await console.page(path).contains("Re-queue this notification's 3 dead deliveries"))
            let requeued = try await console.post("\(path)/requeue")
            #expect(requeued.status == .seeOther)
            #expect(requeued.headers[.location] == "\(path)?requeued=3")
            #expect(try await service.deliveries(of: first, in: "dead") == 0)
            #expect(try await service.deliveries(of: first, in: "available") == 3)
            #expect(try await service.deliveries(of: first, in: "sent") == 1, "a sent one stays sent")
            #expect(try await service.deliveries(of: second, in: "dead") == 4, "another notification of the app is left")
            #expect(try await service.deliveries(of: elsewhere, in: "dead") == 2, "another app's notification is left")
            let after = try await console.page("\(path)?requeued=3")
            #expect(after.contains("Re-queued 3 deliveries."))
            #expect(ConsolePage.card(after, "Dead") == 0)
            #expect(ConsolePage.card(after, "Pending") == 3)

            // Another app's notification under this app's path is not found, and is not touched.
            #expect(try await console.post("/dashboard/apps/\(app.app.id)/notifications/\(elsewhere)/requeue").status == .notFound)
            #expect(try await service.deliveries(of: elsewhere, in: "dead") == 2)
        }
    }

    // MARK: The queue

    @Test func theQueuesDeadListPagesAndOneAppsRequeueTouchesOnlyThatApp() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let big = try await service.createApp(name: "Many dead")
            let small = try await service.createApp(name: "Few dead")
            try await service.insertDevices(appID: big.app.id, count: 60, tokenSeed: 0xBB)
            try await service.insertDevices(appID: small.app.id, count: 5, tokenSeed: 0x55)
            let bigSend = try await Pipeline.send(client, big.serverCredential, #"{"title": "Big", "all": true}"#)
            let smallSend = try await Pipeline.send(client, small.serverCredential, #"{"title": "Small", "all": true}"#)
            try await Pipeline.fanOut(service)
            try await Self.settle(service, bigSend, 60, to: "dead", reason: "gave up")
            try await Self.settle(service, smallSend, 5, to: "dead", reason: "gave up")

            let console = try await ConsoleSession.admin(client, service)
            let dead = try await service.integers("SELECT id FROM deliveries WHERE state = 'dead' ORDER BY id")
            #expect(dead.count == 65)
            let pages = try await console.walk("/dashboard/queue", next: "More dead deliveries →", ConsolePage.deadDeliveryIDs)
            #expect(pages.map(\.count) == [50, 15])
            #expect(pages.flatMap { $0 } == dead, "each dead delivery once, oldest first")
            #expect(ConsolePage.card(try await console.page("/dashboard/queue"), "dead") == 65)

            let requeued = try await console.post("/dashboard/queue/requeue", ["app": "\(small.app.id)"])
            #expect(requeued.status == .seeOther)
            #expect(requeued.headers[.location] == "/dashboard/apps/\(small.app.id)/settings?requeued=5")
            #expect(try await service.deliveries(of: smallSend, in: "available") == 5)
            #expect(try await service.deliveries(of: bigSend, in: "dead") == 60, "the other app's dead deliveries stay")
            let left = try await console.walk("/dashboard/queue", next: "More dead deliveries →", ConsolePage.deadDeliveryIDs)
            #expect(left.flatMap { $0 } == (try await service.integers("SELECT id FROM deliveries WHERE notification_id = \(bigSend) ORDER BY id")))
            #expect(try await console.page("/dashboard/apps/\(small.app.id)/settings?requeued=5").contains("Re-queued 5 dead deliveries."))
        }
    }

    // MARK: Trends

    @Test func trendsShowWhatWasSentFailedDeliveredAndOpened() async throws {
        try await withFakeAPNs { gateway in
            // Two attempts in all, so a delivery the gateway keeps refusing with 503 gives up quickly.
            try await withTestService(workers: true, configure: { $0.worker.retryPolicy.maxAttempts = 2 }) { client, service in
                let app = try await service.createApp(name: "Trends")
                let quiet = try await service.createApp(name: "Trends elsewhere")
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                try await service.connectAPNs(appID: quiet.app.id, to: gateway)
                let tokens = (1...5).map { Pipeline.token(0x7E0 + $0) }
                var devices: [Int64] = []
                for token in tokens { devices.append(try await Pipeline.register(client, app.deviceCredential, token: token)) }
                _ = try await Pipeline.register(client, quiet.deviceCredential, token: Pipeline.token(0x7EF))
                gateway.script(token: tokens[2], [.unregistered(since: Date())])
                gateway.script(token: tokens[3], [.reject(status: 400, reason: "PayloadEmpty")])
                gateway.script(
                    token: tokens[4], [.reject(status: 503, reason: "ServiceUnavailable"), .reject(status: 503, reason: "ServiceUnavailable")])
                let id = try await Pipeline.send(client, app.serverCredential, #"{"title": "Trend", "all": true}"#)
                let elsewhere = try await Pipeline.send(client, quiet.serverCredential, #"{"title": "Not counted here", "all": true}"#)
                #expect(try await Pipeline.settled(service, id))
                #expect(try await Pipeline.settled(service, elsewhere))
                for (event, device) in [("opened", devices[0]), ("delivered", devices[1])] {
                    let answer = try await client.signed(
                        .post, "/api/v1/notifications/\(id)/\(event)", body: #"{"device_token_id": \#(device)}"#, as: app.deviceCredential)
                    #expect(answer.status.code < 300)
                }
                let outcome = try await service.describeDeliveries(of: id)
                #expect(try await service.deliveries(of: id, in: "sent") == 2, "\(outcome)")
                #expect(try await service.deliveries(of: id, in: "failed") == 2)
                #expect(try await service.deliveries(of: id, in: "dead") == 1)

                let console = try await ConsoleSession.admin(client, service)
                // Failures by reason, as the deliveries themselves record them.
                let reasons = try await Self.failureReasons(service, appID: app.app.id)
                #expect(reasons.count == 3, "\(reasons)")
                func expectTheTotals(_ moment: String) async throws {
                    let page = try await console.page("/dashboard/apps/\(app.app.id)/trends")
                    #expect(ConsolePage.card(page, "Sent") == 2, "\(moment)")
                    #expect(ConsolePage.card(page, "Failed") == 3, "\(moment): failed for good or given up")
                    #expect(ConsolePage.card(page, "Delivered") == 2, "\(moment): opened implies delivered")
                    #expect(ConsolePage.card(page, "Opened") == 1, "\(moment)")
                    #expect(page.contains(#"Delivered of sent<b>100.0 %</b>"#), "\(moment)")
                    for (reason, count) in reasons {
                        #expect(
                            page.contains(#"<td data-label="Reason">\#(HTML.escape(reason))</td><td data-label="Pushes"><span class="num">\#(count)</span>"#),
                            "\(moment): \(reason)")
                    }
                }
                try await expectTheTotals("as the changes come")
                // The queue's maintenance folds the changes into the hourly roll-up; once it has, the page reads the same.
                try await NotificationCounterStore(client: service.postgres, logger: TestDatabase.logger).fold()
                try await TrendStore(client: service.postgres, logger: TestDatabase.logger).foldFailures()
                #expect(
                    try await service.integer(
                        "SELECT count(*) FROM notification_counter_changes c JOIN notifications n ON n.id = c.notification_id WHERE n.app_id = \(app.app.id)"
                    ) == 0)
                #expect(try await service.integer("SELECT count(*) FROM delivery_failure_changes WHERE app_id = \(app.app.id)") == 0)
                #expect(try await service.integer("SELECT sum(sent)::int8 FROM app_hourly_stats WHERE app_id = \(app.app.id)") == 2)
                try await expectTheTotals("folded")
            }
        }
    }

    // MARK: App settings

    @Test func rotatedCredentialsShowTheirSecretOnceAndTheOldOnesWorkUntilRevoked() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp(name: "Credentials")
            let console = try await ConsoleSession.admin(client, service)
            let settings = "/dashboard/apps/\(app.app.id)/settings"
            func works(_ credential: Credential) async throws -> HTTPResponse.Status {
                try await client.signed(.get, "/api/v1/device_tokens?user_alias=nobody", as: credential).status
            }

            let rotated = try await console.post("/dashboard/apps/\(app.app.id)/credentials/rotate", ["role": "server", "grace_hours": "24"])
            #expect(rotated.status == .ok)
            let new = try #require(ConsolePage.shownCredential(String(buffer: rotated.body), role: .server))
            #expect(new.accessID != app.serverCredential.accessID)
            #expect(try await works(new) == .ok)
            #expect(try await works(app.serverCredential) == .ok, "the old pair keeps working through the grace hours")
            let page = try await console.page(settings)
            #expect(!page.contains(new.secretKey), "the secret is shown once")
            #expect(page.contains(new.accessID))
            #expect(page.contains(app.serverCredential.accessID))

            let revoked = try await console.post("/dashboard/apps/\(app.app.id)/credentials/revoke", ["access_id": app.serverCredential.accessID])
            #expect(revoked.status == .seeOther)
            #expect(try await works(app.serverCredential) == .unauthorized)
            #expect(try await works(new) == .ok)
            #expect(!(try await console.page(settings).contains(app.serverCredential.accessID)))

            // No grace: the old device pair stops at once.
            let device = try await console.post("/dashboard/apps/\(app.app.id)/credentials/rotate", ["role": "device", "grace_hours": "0"])
            let newDevice = try #require(ConsolePage.shownCredential(String(buffer: device.body), role: .device))
            #expect(try await works(app.deviceCredential) == .unauthorized)
            #expect(try await works(newDevice) == .ok)
        }
    }

    @Test func anAPNsKeyIsUploadedFromTheFormAndWebhooksArePausedAndResumed() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp(name: "Gateways")
            let other = try await service.createApp(name: "Gateways elsewhere")
            let console = try await ConsoleSession.admin(client, service)
            let settings = "/dashboard/apps/\(app.app.id)/settings"
            let key = P256.Signing.PrivateKey().pemRepresentation
            func upload(_ keyText: String, environment: String) async throws -> TestResponse {
                try await console.upload(
                    "/dashboard/apps/\(app.app.id)/gateways/apns",
                    ["key_id": "ABC123DEFG", "team_id": "TEAM123456", "bundle_id": "com.example.console", "environment": environment],
                    file: (field: "private_key", filename: "AuthKey_ABC123DEFG.p8", text: keyText))
            }
            // Every environment the form offers is one the settings accept.
            let environments = ConsolePage.options(try await console.page(settings), select: "environment")
            #expect(environments.count == 2, "\(environments)")
            for environment in environments {
                let saved = try await upload(key, environment: environment)
                #expect(saved.status == .seeOther, "\(environment): \(String(buffer: saved.body))")
                #expect(saved.headers[.location]?.hasPrefix("\(settings)?saved=") == true)
                let page = try await console.page(settings)
                #expect(
                    page.contains(
                        "Key <code>ABC123DEFG</code> of team <code>TEAM123456</code> for <code>com.example.console</code> (\(environment)): <span class=\"ok\">ok</span>"
                    ), "\(environment)")
            }
            #expect(try await service.text("SELECT key_id FROM apns_settings WHERE app_id = \(app.app.id)") == "ABC123DEFG")
            let bad = try await upload("not a key", environment: "production")
            #expect(bad.status == .unprocessableContent)
            #expect(String(buffer: bad.body).contains("private_key"))

            // Web Push: the contact alone makes a key, which the page shows and a second save keeps.
            let web = "/dashboard/apps/\(app.app.id)/gateways/webpush"
            #expect(try await console.post(web, ["subject": "push@example.com"]).status == .unprocessableContent)
            #expect(try await console.post(web, ["subject": "mailto:push@example.com"]).status == .seeOther)
            let publicKey = try #require(try await service.text("SELECT public_key FROM webpush_settings WHERE app_id = \(app.app.id)"))
            #expect(try await console.page(settings).contains(publicKey))
            #expect(try await console.post(web, ["subject": "https://example.com/contact"]).status == .seeOther)
            #expect(try await service.text("SELECT public_key FROM webpush_settings WHERE app_id = \(app.app.id)") == publicKey)
            #expect(try await console.post(web, ["subject": "https://example.com/contact", "rotate": "1"]).status == .seeOther)
            #expect(try await service.text("SELECT public_key FROM webpush_settings WHERE app_id = \(app.app.id)") != publicKey)
            #expect(try await console.post(web, ["remove": "1"]).status == .seeOther)
            #expect(try await service.integer("SELECT count(*) FROM webpush_settings WHERE app_id = \(app.app.id)") == 0)

            // Webhooks: added (the secret shown once), paused, resumed; another app's is not reachable from here.
            let added = try await console.post("/dashboard/apps/\(app.app.id)/webhooks", ["url": "https://example.com/console-hook", "events": "sent,failed"])
            #expect(added.status == .ok)
            #expect(String(buffer: added.body).contains(#"<pre id="secret">"#))
            let webhook = try #require(try await service.integer("SELECT id FROM webhooks WHERE app_id = \(app.app.id)"))
            func state() async throws -> String? { try await service.text("SELECT state FROM webhooks WHERE id = \(webhook)") }
            #expect(try await service.text("SELECT array_to_string(events, ',') FROM webhooks WHERE id = \(webhook)") == "sent,failed")
            var page = try await console.page(settings)
            #expect(page.contains("<code>https://example.com/console-hook</code></td><td data-label=\"Events\">sent, failed</td>"))
            #expect(page.contains(#"<span class="ok">active</span>"#))

            #expect(try await console.post("/dashboard/apps/\(app.app.id)/webhooks", ["webhook": "\(webhook)", "do": "pause"]).status == .seeOther)
            #expect(try await state() == "paused")
            page = try await console.page(settings)
            #expect(page.contains("paused: paused by an operator"))
            #expect(page.contains(#"<input type="hidden" name="do" value="resume">"#))
            #expect(try await console.post("/dashboard/apps/\(app.app.id)/webhooks", ["webhook": "\(webhook)", "do": "resume"]).status == .seeOther)
            #expect(try await state() == "active")

            let theirs = try await console.post("/dashboard/apps/\(other.app.id)/webhooks", ["url": "https://example.com/theirs"])
            #expect(theirs.status == .ok)
            let theirID = try #require(try await service.integer("SELECT id FROM webhooks WHERE app_id = \(other.app.id)"))
            #expect(try await console.post("/dashboard/apps/\(app.app.id)/webhooks", ["webhook": "\(theirID)", "do": "pause"]).status == .notFound)
            #expect(try await service.text("SELECT state FROM webhooks WHERE id = \(theirID)") == "active")
            // A webhook's batches: its own page under its app, none under another's.
            let batches = try await console.get("/dashboard/apps/\(app.app.id)/webhooks/\(webhook)")
            #expect(batches.status == .ok)
            #expect(String(buffer: batches.body).contains("No batches yet."))
            #expect(try await console.get("/dashboard/apps/\(app.app.id)/webhooks/\(theirID)").status == .notFound)
        }
    }

    @Test func reQueueingTakesNothingBackFromTheHourThePushesGaveUpIn() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp(name: "Gave up, then re-queued")
            for index in 0..<3 { _ = try await Self.register(client, app, .apns, Pipeline.token(0xF00 + index), alias: "gus") }
            let sent = try await Pipeline.send(client, app.serverCredential, #"{"title": "Hi", "user_aliases": ["gus"]}"#)
            try await Pipeline.fanOut(service)
            try await Self.settle(service, sent, 3, to: "dead", reason: "ServiceUnavailable")
            let counters = NotificationCounterStore(client: service.postgres, logger: TestDatabase.logger)
            let console = try await ConsoleSession.admin(client, service)
            func gaveUp() async throws -> (trends: Int64?, queue: Int64?) {
                (
                    ConsolePage.card(try await console.page("/dashboard/apps/\(app.app.id)/trends"), "Failed"),
                    ConsolePage.card(try await console.page("/dashboard/queue"), "gave up")
                )
            }
            _ = try await counters.fold()
            #expect(try await gaveUp() == (3, 3))
            #expect(try await console.post("/dashboard/apps/\(app.app.id)/notifications/\(sent)/requeue").status == .seeOther)
            #expect(try await service.deliveries(of: sent, in: "available") == 3)
            // They gave up at that hour, whatever happened to them since; before the fold and after.
            #expect(try await gaveUp() == (3, 3))
            _ = try await counters.fold()
            #expect(try await gaveUp() == (3, 3))
        }
    }

    // MARK: Rich content and the lists that page

    @Test func aComposedNotificationCarriesTheChosenFileAsItsRichContent() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp(name: "Rich from the console")
            let phone = try await Self.register(client, app, .apns, Pipeline.token(0xE01), alias: "rae")
            let console = try await ConsoleSession.admin(client, service)
            let compose = "/dashboard/apps/\(app.app.id)/compose"
            let offer = #"{"offer": "two for one", "until": "Sunday"}"#
            let fields = ["title": "An offer", "audience": "users", "users": "rae", "idempotency_key": "rich-\(UUID().uuidString)"]

            // The preview shows the push as it will go: rich, and mutable so the extension can fetch it.
            let preview = String(
                buffer: try await console.upload(compose, fields.merging(["action": "preview"]) { $1 }, file: ("rich_content", "offer.json", offer)).body)
            #expect(preview.contains("Choose the file again before sending"))
            let apns = try JSONValue.decode(Array(try #require(ConsolePage.preformatted(preview).first).utf8))
            #expect(apns["rich"] == .bool(true))
            #expect(apns["aps"]?["mutable-content"]?.intValue == 1)

            let sent = try await console.upload(compose, fields.merging(["action": "send"]) { $1 }, file: ("rich_content", "offer.json", offer))
            #expect(sent.status == .seeOther, "\(String(buffer: sent.body))")
            let id = try #require(sent.headers[.location].flatMap { Int64($0.split(separator: "/").last ?? "") })
            #expect(try await service.text("SELECT rich::text || ',' || awaiting_content::text FROM notifications WHERE id = \(id)") == "true,false")
            // The device it goes to fetches the file, as the SDK's extension does.
            try await Pipeline.fanOut(service)
            let fetched = try await client.signed(.get, "/api/v1/notifications/\(id)/content?device_token_id=\(phone)", as: app.deviceCredential)
            #expect(fetched.status == .ok)
            #expect(String(buffer: fetched.body) == offer)
            #expect(fetched.headers[.contentType] == "application/octet-stream")
            // The same form sent again is the same notification; with another file under its key it is a changed form.
            let again = try await console.upload(compose, fields.merging(["action": "send"]) { $1 }, file: ("rich_content", "offer.json", offer))
            #expect(again.headers[.location] == sent.headers[.location])
            let otherFile = try await console.upload(compose, fields.merging(["action": "send"]) { $1 }, file: ("rich_content", "offer.json", "{}"))
            #expect(otherFile.status == .unprocessableContent)
            #expect(String(buffer: otherFile.body).contains("already made notification \(id)"))
            // A file the browser calls JSON must be JSON.
            let notJSON = try await console.upload(
                compose, ["action": "send", "title": "Bad", "audience": "all"], file: ("rich_content", "bad.json", "{not json"),
                contentType: "application/json")
            #expect(notJSON.status == .unprocessableContent)
            #expect(String(buffer: notJSON.body).contains("not valid JSON"))

            // Without a file nothing is rich, whatever the form claims; a bad file is refused with nothing made.
            let plain = try await console.post(compose, ["action": "send", "title": "Plain", "audience": "users", "users": "rae", "rich": "on"])
            let plainID = try #require(plain.headers[.location].flatMap { Int64($0.split(separator: "/").last ?? "") })
            #expect(try await service.text("SELECT rich::text FROM notifications WHERE id = \(plainID)") == "false")
            let before = try await service.integer("SELECT count(*) FROM notifications WHERE app_id = \(app.app.id)")
            let tooBig = try await console.upload(
                compose, ["action": "send", "title": "Huge", "audience": "all"],
                file: ("rich_content", "huge.bin", String(repeating: "x", count: NotifiableRequestContext.maxRichContentBytes + 1)))
            #expect(tooBig.status == .unprocessableContent)
            #expect(String(buffer: tooBig.body).contains("MiB at most"))
            #expect(try await service.integer("SELECT count(*) FROM notifications WHERE app_id = \(app.app.id)") == before)
        }
    }

    @Test func theAppsListAndADevicesDeliveriesPage() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            var apps: [AppStore.CreatedApp] = []
            for index in 0..<53 { apps.append(try await service.createApp(name: "Listed \(index)")) }
            let first = apps[0]
            let phone = try await Self.register(client, first, .apns, Pipeline.token(0xE11), alias: "lee")
            _ = try await Self.register(client, first, .apns, Pipeline.token(0xE12))
            _ = try await Self.register(client, first, .fcm, "lee-tablet")
            let gone = try await Self.register(client, first, .apns, Pipeline.token(0xE13))
            try await service.sql("UPDATE devices SET invalidated_at = now(), invalidation_reason = 'Unregistered' WHERE id = \(gone)")

            let owner = try await ConsoleSession.admin(client, service)
            let pages = try await owner.walk("/dashboard", next: "More apps →") { page in
                page.components(separatedBy: "<a href=\"/dashboard/apps/").dropFirst().compactMap { Int64($0.prefix { $0.isASCII && $0.isNumber }) }
            }
            #expect(pages.map(\.count) == [50, 3])
            #expect(pages.flatMap { $0 } == apps.map(\.app.id), "every app once, in order")
            // The first app's row: 2 reachable iPhones, 1 Android, no browser, 1 invalidated, 4 new today.
            let home = try await owner.page("/dashboard")
            let row = try #require(home.components(separatedBy: "<tr>").first { $0.contains("Listed 0 (\(first.app.id))") })
            #expect(
                row.contains(
                    #"<td data-label="iOS devices"><span class="num">2</span></td><td data-label="Android devices"><span class="num">1</span></td><td data-label="Browsers"><span class="num">0</span></td><td data-label="Invalidated"><span class="num">1</span></td><td data-label="New in 24 h"><span class="num">4</span></td>"#
                ), "\(row)")
            // An editor of two apps is listed those two.
            let editor = try await ConsoleSession.addOperator(service, .editor, apps: [apps[5].app.id, apps[51].app.id])
            let theirs = try await ConsoleSession.signIn(client, service, name: editor.name, password: editor.password)
            let listed = try await theirs.page("/dashboard")
            #expect(listed.contains("Listed 5 (") && listed.contains("Listed 51 (") && !listed.contains("Listed 0 ("))

            // A device's deliveries page too: 53 notifications to one phone.
            var sent: [Int64] = []
            for index in 0..<53 { sent.append(try await Pipeline.send(client, first.serverCredential, #"{"title": "N\#(index)", "device_ids": [\#(phone)]}"#)) }
            try await Pipeline.fanOut(service)
            let deliveryPages = try await owner.walk("/dashboard/apps/\(first.app.id)/devices/\(phone)", next: "Older deliveries →") { page in
                ConsolePage.section(page, "Deliveries").components(separatedBy: "/notifications/").dropFirst()
                    .compactMap { Int64($0.prefix { $0.isASCII && $0.isNumber }) }
            }
            #expect(deliveryPages.map(\.count) == [50, 3])
            // A mangled cursor is a page for the operator, not JSON for a program.
            let mangled = try await owner.get("/dashboard/apps/\(first.app.id)/devices/\(phone)?cursor=tomorrow")
            #expect(mangled.status == .unprocessableContent)
            #expect(mangled.headers[.contentType]?.hasPrefix("text/html") == true)
            #expect(String(buffer: mangled.body).contains("cursor must be"))
            #expect(Set(deliveryPages.flatMap { $0 }) == Set(sent))
            #expect(
                deliveryPages.flatMap { $0 }
                    == (try await service.integers("SELECT notification_id FROM deliveries WHERE device_id = \(phone) ORDER BY id DESC")),
                "newest first, each once")
        }
    }

    // MARK: Fixtures

    /// Registers a device as the SDKs do (device credentials); `extra` adds members to `device_token`.
    static func register(
        _ client: some TestClientProtocol, _ app: AppStore.CreatedApp, _ provider: Provider, _ token: String, alias: String? = nil, extra: String = ""
    ) async throws -> Int64 {
        try await Pipeline.register(client, app.deviceCredential, provider: provider.rawValue, token: token, alias: alias, extra: extra)
    }

    /// Moves `count` of a notification's waiting deliveries (oldest first, or newest) to `state`, as
    /// the workers leave them. An UPDATE, so the deliveries' triggers keep the counters and trends.
    static func settle(
        _ service: TestService, _ notificationID: Int64, _ count: Int, to state: String, reason: String? = nil, newestFirst: Bool = false
    ) async throws {
        try await service.sql(
            """
            UPDATE deliveries SET state = \(state), reason = \(reason), attempts = 1, updated_at = now(),
                sent_at = CASE WHEN \(state) = 'sent' THEN now() END,
                failed_at = CASE WHEN \(state) = 'failed' THEN now() END,
                dead_at = CASE WHEN \(state) = 'dead' THEN now() END,
                run_at = CASE WHEN \(state) = 'retrying' THEN now() + interval '1 hour' ELSE run_at END
            WHERE id IN (SELECT id FROM deliveries WHERE notification_id = \(notificationID) AND state = 'available' ORDER BY \(unescaped: newestFirst ? "id DESC" : "id") LIMIT \(count))
            """)
        #expect(try await service.deliveries(of: notificationID, in: state) >= Int64(count), "\(count) \(state)")
    }

    /// An app's pushes that failed for good or gave up, by reason, from the deliveries themselves.
    static func failureReasons(_ service: TestService, appID: Int64) async throws -> [(String, Int64)] {
        var reasons: [(String, Int64)] = []
        let rows = try await service.postgres.query(
            """
            SELECT coalesce(reason, 'unknown'), count(*) FROM deliveries
            WHERE app_id = \(appID) AND kind = 'push' AND state IN ('failed', 'dead') GROUP BY 1 ORDER BY 1
            """, logger: TestDatabase.logger)
        for try await (reason, count) in rows.decode((String, Int64).self) { reasons.append((reason, count)) }
        return reasons
    }
}

/// Reading the console's pages as an operator reads them: the numbers on the cards, the rows'
/// links, the pager's link.
enum ConsolePage {
    /// The number on a card: `<div class="card">Sent<b>3</b></div>`.
    static func card(_ page: String, _ label: String) -> Int64? {
        guard let start = page.range(of: "\">\(HTML.escape(label))<b>") else { return nil }
        return Int64(page[start.upperBound...].prefix { $0.isASCII && $0.isNumber })
    }

    /// The devices the page links to, in its order.
    static func deviceIDs(_ page: String) -> [Int64] {
        page.components(separatedBy: "/devices/").dropFirst().compactMap { rest in
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            return rest.dropFirst(digits.count).hasPrefix("\"") ? Int64(digits) : nil
        }
    }

    /// The queue page's dead deliveries, by their ids in the first column.
    static func deadDeliveryIDs(_ page: String) -> [Int64] {
        page.components(separatedBy: #"<td data-label="Delivery">#"#).dropFirst().compactMap { Int64($0.prefix { $0.isASCII && $0.isNumber }) }
    }

    /// Where the link with this text points, unescaped.
    static func link(_ page: String, _ text: String) -> String? {
        guard let end = page.range(of: "\">\(HTML.escape(text))</a>"), let start = page[..<end.lowerBound].range(of: "<a href=\"", options: .backwards)
        else { return nil }
        return unescape(String(page[start.upperBound..<end.lowerBound]))
    }

    /// The value of a form's input named `name`.
    static func inputValue(_ page: String, _ name: String) -> String? {
        guard let start = page.range(of: "name=\"\(name)\" value=\"") else { return nil }
        return unescape(String(page[start.upperBound...].prefix { $0 != "\"" }))
    }

    /// The values a `<select>` offers (an option without a value sends its text).
    static func options(_ page: String, select name: String) -> [String] {
        guard let start = page.range(of: "<select name=\"\(name)\">"), let end = page[start.upperBound...].range(of: "</select>") else { return [] }
        return page[start.upperBound..<end.lowerBound].components(separatedBy: "<option").dropFirst().compactMap { option in
            if let value = option.range(of: "value=\"") { return unescape(String(option[value.upperBound...].prefix { $0 != "\"" })) }
            guard let open = option.firstIndex(of: ">"), let close = option.range(of: "</option>") else { return nil }
            return unescape(String(option[option.index(after: open)..<close.lowerBound]))
        }
    }

    /// The text of each `<pre>` block, unescaped.
    static func preformatted(_ page: String) -> [String] {
        page.components(separatedBy: "<pre>").dropFirst().compactMap { $0.components(separatedBy: "</pre>").first.map(unescape) }
    }

    /// The page from the heading `<h2>title</h2>` to the next heading.
    static func section(_ page: String, _ title: String) -> String {
        guard let start = page.range(of: "<h2>\(title)</h2>") else { return "" }
        let rest = page[start.upperBound...]
        return String(rest[..<(rest.range(of: "<h2>")?.lowerBound ?? rest.endIndex)])
    }

    /// The credential a "new credentials" page shows, its secret included.
    static func shownCredential(_ page: String, role: CredentialRole) -> Credential? {
        guard let accessID = between(page, #"<td data-label="Access id"><code>"#, "</code>"),
            let secret = between(page, #"<code class="secret">"#, "</code>")
        else { return nil }
        return Credential(role: role, accessID: unescape(accessID), secretKey: unescape(secret))
    }

    static func unescape(_ text: String) -> String {
        text.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'").replacingOccurrences(of: "&lt;", with: "<")
            .replacingOccurrences(of: "&gt;", with: ">").replacingOccurrences(of: "&amp;", with: "&")
    }

    private static func between(_ page: String, _ before: String, _ after: String) -> String? {
        guard let start = page.range(of: before), let end = page[start.upperBound...].range(of: after) else { return nil }
        return String(page[start.upperBound..<end.lowerBound])
    }
}

extension ConsoleSession {
    /// Follows a list's pager from `first` until it has no next link; each page's ids as `ids` reads them.
    func walk(_ first: String, next label: String, _ ids: (String) -> [Int64]) async throws -> [[Int64]] {
        var pages: [[Int64]] = []
        var uri: String? = first
        while let current = uri, pages.count < 20 {
            let answer = try await get(current)
            #expect(answer.status == .ok, "\(current)")
            let page = String(buffer: answer.body)
            pages.append(ids(page))
            uri = ConsolePage.link(page, label)
        }
        return pages
    }

    /// A form sent as a browser sends one with a file field (`multipart/form-data`), with the session's CSRF token.
    func upload(
        _ uri: String, _ fields: [String: String], file: (field: String, filename: String, text: String), contentType: String = "application/octet-stream"
    ) async throws -> TestResponse {
        let boundary = "----ConsoleFeaturesTests\(UUID().uuidString.prefix(8))"
        var body = ""
        for (name, value) in fields.merging(["csrf": csrf], uniquingKeysWith: { $1 }).sorted(by: { $0.key < $1.key }) {
            body += "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n"
        }
        body += "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(file.field)\"; filename=\"\(file.filename)\"\r\n"
        body += "Content-Type: \(contentType)\r\n\r\n\(file.text)\r\n--\(boundary)--\r\n"
        return try await client.execute(
            uri: uri, method: .post, headers: [.cookie: cookie, .contentType: "multipart/form-data; boundary=\(boundary)"], body: ByteBuffer(string: body))
    }
}
