import Foundation
import Hummingbird
import NotifiableCore
import NotifiableDelivery
import NotifiableStore

/// Composing and sending a notification from the console. The form becomes the same JSON body
/// the API takes, checked by the same `NotificationRequest.parse`, so the console can send
/// nothing the API would refuse. "Preview" counts the audience and shows each platform's
/// payload; "Send" stores the notification and opens its live page.
struct ConsoleCompose: ConsolePages {
    let console: ConsoleRequests
    /// Sends (a write: the primary).
    let sending: NotificationStore
    /// Rich content sent with a notification composed here (a write: the primary).
    let contents: NotificationContentStore

    func addRoutes(to pages: RouterGroup<NotifiableRequestContext>) {
        pages.get("apps/:id/compose", use: composePage)
        pages.post("apps/:id/compose", use: compose)
    }
}

extension ConsoleCompose {
    @Sendable func composePage(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let app = try await app(context, ConsoleAction.send, "send this app's notifications")
        return DashboardPages.compose(app: app, form: [:], csrf: csrf(request), preview: nil, error: nil)
    }

    @Sendable func compose(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let submitted = try await formWithFiles(of: request, "nothing was sent", limit: NotifiableRequestContext.maxRichContentBytes + FormBody.limit)
        var form = submitted.fields
        let app = try await app(context, ConsoleAction.send, "send this app's notifications")
        func refused(_ error: ValidationError) -> Response {
            DashboardPages.compose(app: app, form: form, csrf: csrf(request), preview: nil, error: (error.field.map { "\($0): " } ?? "") + error.message)
        }
        // Rich only with a file to attach: a rich notification waits for its content before any push goes.
        let content: ComposedContent?
        do {
            content = try ComposedContent(submitted.files["rich_content"])
        } catch let error as ValidationError {
            return refused(error)
        }
        form["rich"] = content == nil ? nil : "on"
        let (body, parsed): (JSONValue, NotificationRequest)
        switch ComposeForm.request(from: form) {
        case .success(let request): (body, parsed) = request
        case .failure(let error): return refused(error)
        }
        guard form["action"] == "send" else {
            let audience = try await sending.audienceSize(appID: app.id, targeting: parsed.targeting)
            let preview = ComposePreview(audience: audience, payloads: ComposePreview.payloads(parsed.applying(app.pushDefaults, now: Date())))
            return DashboardPages.compose(app: app, form: form, csrf: csrf(request), preview: preview, error: nil)
        }
        let notification: StoredNotification
        do {
            (notification, _) = try await sending.create(appID: app.id, request: parsed, digest: NotificationRequest.digest(of: digested(body, content)))
        } catch let reused as NotificationStore.IdempotencyKeyReused {
            // This form was sent before and then changed (the browser's back button keeps its key):
            // nothing is sent; the page comes back with a new key, so sending again is a new notification.
            var fresh = form
            fresh["idempotency_key"] = nil
            return DashboardPages.compose(
                app: app, form: fresh, csrf: csrf(request), preview: nil,
                error: "This form already made notification \(reused.notificationID) with other content; nothing was sent. Send again to make a new one.")
        }
        if let content {
            do {
                switch try await contents.attach(notificationID: notification.id, appID: app.id, mediaType: content.mediaType, data: content.data) {
                // Sent again with its key (and so with the same file): the content is there already.
                case .attached, .alreadyAttached: break
                case .noSuchNotification, .notRich:
                    throw ConsoleRefusal(status: .conflict, message: "Notification \(notification.id) could not take its content; it was cancelled.")
                }
            } catch {
                // A rich notification sends nothing until its content is there: cancelled, rather
                // than left waiting for content that is not coming.
                _ = try? await sending.cancel(id: notification.id, appID: app.id)
                throw error
            }
        }
        return Response(status: .seeOther, headers: [.location: "/dashboard/apps/\(app.id)/notifications/\(notification.id)"])
    }

    /// What a form's key stands for: its body, and the file it attaches (the body says only that
    /// there is one), so the same key with another file is a changed form, refused as such.
    private func digested(_ body: JSONValue, _ content: ComposedContent?) -> JSONValue {
        guard let content, case .object(var fields) = body else { return body }
        fields["rich_content_sha256"] = .string(NotificationContentStore.sha256(of: content.data))
        return .object(fields)
    }
}

/// The file chosen on the compose form as the notification's rich content, checked as the API's
/// upload (`PUT /api/v1/notifications/:id/content`) checks it.
struct ComposedContent {
    let mediaType: String
    let data: [UInt8]

    /// Nil when no file was chosen (a browser sends an empty part for an empty file field).
    init?(_ part: MultipartForm.Part?) throws {
        guard let part, !part.data.isEmpty else { return nil }
        guard let mediaType = try? RichContentController.mediaType(part.contentType ?? "application/octet-stream") else {
            throw ValidationError(code: "invalid_media_type", message: "The browser sent no usable media type for this file.", field: "rich_content")
        }
        guard part.data.count <= NotifiableRequestContext.maxRichContentBytes else {
            throw ValidationError(
                code: "content_too_large", message: "Rich content may be \(NotifiableRequestContext.maxRichContentBytes / 1024 / 1024) MiB at most.",
                field: "rich_content")
        }
        guard RichContentController.isReadable(part.data, as: mediaType) else {
            throw ValidationError(code: "invalid_json", message: "The file is sent as application/json but is not valid JSON.", field: "rich_content")
        }
        self.mediaType = mediaType
        self.data = part.data
    }
}

/// The compose form's fields as the API's notification body.
enum ComposeForm {
    /// The body and the request it makes, or why the API would refuse it.
    static func request(from form: [String: String]) -> Result<(JSONValue, NotificationRequest), ValidationError> {
        do {
            let body = try body(from: form)
            let request = try NotificationRequest.accepted(body, now: Date())
            return .success((body, request))
        } catch let error as ValidationError {
            return .failure(error)
        } catch {
            return .failure(ValidationError(code: "invalid", message: "\(error)"))
        }
    }

    static func body(from form: [String: String]) throws -> JSONValue {
        var body: [String: JSONValue] = [:]
        func text(_ name: String) -> String? { form[name].flatMap { $0.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? nil : $0 } }
        for name in ["title", "subtitle", "message"] { if let value = text(name) { body[name] = .string(value) } }
        if let localized = try json(text("localized"), field: "localized") { body["localized"] = localized }
        if let parameters = try json(text("parameters"), field: "parameters") { body["parameters"] = parameters }
        switch form["audience"] ?? "all" {
        case "users":
            body["user_aliases"] = .array(list(text("users")).map { .string($0) })
        case "devices":
            let items = list(text("devices"))
            let ids = items.compactMap { Int64($0) }
            guard ids.count == items.count else {
                throw ValidationError(code: "invalid_device_ids", message: "Device ids are numbers separated by commas.", field: "devices")
            }
            body["device_ids"] = .array(ids.map { .integer($0) })
        case "tags":
            body["tag_expression"] = text("tags").map { .string($0) } ?? .null
        case "filters":
            body["filters"] = try json(text("filters"), field: "filters") ?? .null
        case "near":
            var near: [String: JSONValue] = [:]
            for name in ["latitude", "longitude", "radius_m"] {
                guard let value = text(name).flatMap({ Double($0) }) else {
                    throw ValidationError(code: "invalid_number", message: "\(name) must be a number.", field: name)
                }
                near[name] = .number(value)
            }
            body["near"] = .object(near)
        default:
            body["all"] = .bool(true)
        }
        if let sendAt = text("send_at") {
            // A datetime-local field: minutes, no zone. Local time is the devices' own; otherwise UTC.
            let seconds = sendAt.count == 16 ? sendAt + ":00" : sendAt
            let local = form["local_time"] == "on"
            body["send_at"] = .string(local ? seconds : seconds + "Z")
            if local { body["local_time"] = .bool(true) }
        }
        if let ttl = text("ttl_seconds") {
            guard let seconds = Int64(ttl) else {
                throw ValidationError(code: "invalid_number", message: "The time to live is a number of seconds.", field: "ttl_seconds")
            }
            body["ttl_seconds"] = .integer(seconds)
        }
        try presentation(from: form, into: &body)
        if form["stateful"] == "on" { body["stateful"] = .bool(true) }
        if form["rich"] == "on" { body["rich"] = .bool(true) }
        if let key = text("idempotency_key") { body["idempotency_key"] = .string(key) }
        return .object(body)
    }

    /// The presentation fields, named as the API names them; the API's own rules judge them. A
    /// critical level without a sound of its own gets the default critical sound.
    private static func presentation(from form: [String: String], into body: inout [String: JSONValue]) throws {
        func text(_ name: String) -> String? { form[name].flatMap { $0.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? nil : $0 } }
        if let level = text("interruption_level") {
            body["interruption_level"] = .string(level)
            if level == "critical" { body["critical_sound"] = .object([:]) }
        }
        if let score = text("relevance_score") {
            guard let value = Double(score) else {
                throw ValidationError(code: "invalid_number", message: "The relevance score is a number from 0 to 1.", field: "relevance_score")
            }
            body["relevance_score"] = .number(value)
        }
        for name in ["image_url", "title_loc_key", "loc_key"] { if let value = text(name) { body[name] = .string(value) } }
        for name in ["title_loc_args", "loc_args"] { if let value = try json(text(name), field: name) { body[name] = value } }
        var android: [String: JSONValue] = [:]
        for name in ["channel_id", "icon", "color"] { if let value = text("android_\(name)") { android[name] = .string(value) } }
        if !android.isEmpty { body["android"] = .object(android) }
        for name in ["apns", "fcm"] { if let value = try json(text("\(name)_overrides"), field: name) { body[name] = value } }
    }

    private static func list(_ text: String?) -> [String] {
        (text ?? "").split(whereSeparator: { $0 == "," || $0.isNewline }).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    private static func json(_ text: String?, field: String) throws -> JSONValue? {
        guard let text else { return nil }
        do {
            return try JSONValue.decode(Array(text.utf8))
        } catch {
            throw ValidationError(code: "invalid_json", message: "This is not valid JSON.", field: field)
        }
    }
}

/// What the preview shows: the audience, and the payload each platform gets in each locale.
struct ComposePreview {
    let audience: AudienceSize
    /// (locale, APNs body, FCM body for Android, FCM body for an iPhone on Firebase).
    let payloads: [(locale: String, apns: String, fcm: String, fcmIOS: String)]

    /// The payloads as the senders build them, for the default text and each localized one.
    /// `n_id` shows 0: the notification has no id until it is sent.
    static func payloads(_ request: NotificationRequest) -> [(locale: String, apns: String, fcm: String, fcmIOS: String)] {
        let content = request.content
        return content.localeVariants.prefix(5).map { key, language, country in
            let label = key ?? "default"
            let apns = (try? APNsPayload.encode(content: content, language: language, country: country, notificationID: 0)).map { pretty($0) }
            func fcm(_ platform: DevicePlatform) -> String {
                let bytes = try? FCMMessage.encode(
                    token: "DEVICE_TOKEN", content: content, language: language, country: country, notificationID: 0, now: Date(), platform: platform
                )
                return bytes.map { pretty($0) } ?? "(too large for FCM: 4 KB at most)"
            }
            return (label, apns ?? "(too large for APNs: 4 KB at most)", fcm(.android), fcm(.ios))
        }
    }

    private static func pretty(_ bytes: [UInt8]) -> String {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)),
            let data = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        else { return String(decoding: bytes, as: UTF8.self) }
        return String(decoding: data, as: UTF8.self)
    }
}

extension DashboardPages {
    static func compose(app: App, form: [String: String], csrf: String, preview: ComposePreview?, error: String?) -> Response {
        func value(_ name: String) -> String { HTML.escape(form[name] ?? "") }
        let audience = form["audience"] ?? "all"
        func choice(_ name: String, _ label: String) -> String {
            "<label><input type=\"radio\" name=\"audience\" value=\"\(name)\"\(audience == name ? " checked" : "")> \(label)</label>"
        }
        func checkbox(_ name: String, _ label: String) -> String {
            "<label><input type=\"checkbox\" name=\"\(name)\"\(form[name] == "on" ? " checked" : "")> \(label)</label>"
        }
        // One key per form shown: sending it twice (a double click, a reload) makes one notification.
        let key = form["idempotency_key"] ?? "console-\(UUID().uuidString.lowercased())"
        var previewHTML = ""
        if let preview {
            let rows = preview.payloads.map { locale, apns, fcm, fcmIOS in
                [HTML.escape(locale), "<pre>\(HTML.escape(apns))</pre>", "<pre>\(HTML.escape(fcm))</pre>", "<pre>\(HTML.escape(fcmIOS))</pre>"]
            }
            previewHTML = """
                <h2>Preview</h2>
                <div class="cards" id="audience"><div class="card">Devices<b>\(preview.audience.total)</b></div>
                \(Provider.allCases.map { "<div class=\"card\">\($0.reaches) (\($0.displayName))<b>\(preview.audience[$0])</b></div>" }.joined())</div>
                <p class="muted">Counted now among registered, reachable devices; the send counts again as it fans out. \
                <code>n_id</code> becomes the notification's id.</p>
                \(HTML.table(["Locale", "APNs payload", "FCM message (Android)", "FCM message (iPhone on Firebase)"], rows))
                """
        }
        return HTML.page(
            "\(app.name): compose",
            """
            <p>\(HTML.link("/dashboard/apps/\(app.id)", "← \(app.name)"))\(app.deliveryMode == .sandbox ? " · <span class=\"warn\">sandbox: pushes go to the built-in fake gateways</span>" : "")</p>
            \(error.map { "<p class=\"bad\" id=\"error\">\(HTML.escape($0))</p>" } ?? "")
            <form id="compose" method="post" enctype="multipart/form-data" action="/dashboard/apps/\(app.id)/compose">
            <input type="hidden" name="csrf" value="\(HTML.escape(csrf))"><input type="hidden" name="idempotency_key" value="\(HTML.escape(key))">
            <div class="grid2"><div class="panel"><h2>Text</h2>
            <label>Title <input type="text" name="title" value="\(value("title"))" maxlength="512"></label>
            <label>Subtitle (iOS) <input type="text" name="subtitle" value="\(value("subtitle"))"></label>
            <label>Message <textarea name="message" rows="3">\(value("message"))</textarea></label>
            <label>Per-locale text (JSON: {"fr": {"title": "…", "message": "…"}}) <textarea name="localized" rows="3">\(value("localized"))</textarea></label>
            <label>Parameters (JSON object, sent beside the text) <textarea name="parameters" rows="3">\(value("parameters"))</textarea></label>
            </div><div class="panel"><h2>Audience</h2>
            \(choice("all", "Every device"))
            \(choice("users", "Users")) <input type="text" name="users" value="\(value("users"))" placeholder="alice, bob" aria-label="User aliases">
            \(choice("devices", "Devices")) <input type="text" name="devices" value="\(value("devices"))" placeholder="12, 13" aria-label="Device ids">
            \(choice("tags", "Tag expression")) <input type="text" name="tags" value="\(value("tags"))" placeholder="beta &amp;&amp; !lang:fr" aria-label="Tag expression">
            \(choice("filters", "Filters")) <textarea name="filters" rows="2" aria-label="Filters" placeholder='[{"property": "country", "operator": "equals", "value": "gb"}]'>\(value("filters"))</textarea>
            \(choice("near", "Near")) <input type="text" name="latitude" size="8" value="\(value("latitude"))" placeholder="latitude" aria-label="Latitude">
            <input type="text" name="longitude" size="8" value="\(value("longitude"))" placeholder="longitude" aria-label="Longitude">
            <input type="text" name="radius_m" size="6" value="\(value("radius_m"))" placeholder="metres" aria-label="Radius in metres">
            <h2>When and how</h2>
            <label>Send at (UTC, empty: now) <input type="datetime-local" name="send_at" value="\(value("send_at"))"></label>
            \(checkbox("local_time", "at that time in each device's own time zone"))
            <label>Time to live (seconds, empty: the app's default) <input type="text" name="ttl_seconds" value="\(value("ttl_seconds"))"></label>
            \(checkbox("stateful", "stateful: each user keeps a copy with read and dismissed states across devices"))
            <label>Rich content (optional: an image, a JSON document…, up to \(NotifiableRequestContext.maxRichContentBytes / 1024 / 1024) MiB; \
            the push carries <code>"rich": true</code> and the app fetches it) <input type="file" name="rich_content"></label>
            \(form["rich"] == "on" && preview != nil ? "<p class=\"warn\">Choose the file again before sending: a browser keeps no chosen file across pages.</p>" : "")
            </div></div>
            <div class="panel" id="presentation"><h2>Presentation (optional)</h2>
            <label>Interruption level (iOS; time-sensitive and critical are urgent on Android too) <select name="interruption_level">\(
                ["", "passive", "active", "time-sensitive", "critical"].map { level in
                    "<option value=\"\(level)\"\(form["interruption_level", default: ""] == level ? " selected" : "")>\(level.isEmpty ? "as the app sends" : level)</option>"
                }.joined())</select></label>
            <label>Relevance score (iOS, 0 to 1) <input type="text" name="relevance_score" value="\(value("relevance_score"))"></label>
            <label>Image (https URL) <input type="url" name="image_url" value="\(value("image_url"))"></label>
            <label>Android channel <input type="text" name="android_channel_id" value="\(value("android_channel_id"))" placeholder="\(HTML.escape(app.pushDefaults.androidChannelID ?? "the app's default"))"></label>
            <label>Android icon <input type="text" name="android_icon" value="\(value("android_icon"))"></label>
            <label>Android colour (#rrggbb) <input type="text" name="android_color" value="\(value("android_color"))" placeholder="#ff6600"></label>
            <label>Title localization key <input type="text" name="title_loc_key" value="\(value("title_loc_key"))"></label>
            <label>Its arguments (JSON array) <input type="text" name="title_loc_args" value="\(value("title_loc_args"))" placeholder='["#42"]'></label>
            <label>Message localization key <input type="text" name="loc_key" value="\(value("loc_key"))"></label>
            <label>Its arguments (JSON array) <input type="text" name="loc_args" value="\(value("loc_args"))"></label>
            <label>APNs overrides (JSON: {"headers": {…}, "payload": {…}}) <textarea name="apns_overrides" rows="2">\(value("apns_overrides"))</textarea></label>
            <label>FCM overrides (JSON: {"android": {…}, "apns": {…}, "data": {…}}) <textarea name="fcm_overrides" rows="2">\(value("fcm_overrides"))</textarea></label>
            </div>
            <p><button name="action" value="preview">Count the audience and preview</button>
            <button name="action" value="send" id="send">Send</button></p>
            </form>
            \(previewHTML)
            """, status: error == nil ? .ok : .unprocessableContent)
    }
}
