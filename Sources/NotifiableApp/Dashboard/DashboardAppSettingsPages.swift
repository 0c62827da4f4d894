import Foundation
import Hummingbird
import NotifiableCore
import NotifiableStore

extension DashboardPages {
    static func newApp(csrf: String) -> Response {
        HTML.page(
            "Create an app",
            """
            <form class="panel" method="post" action="/dashboard/apps"><input type="hidden" name="csrf" value="\(HTML.escape(csrf))">
            <label>Name <input type="text" name="name" required maxlength="\(App.maxNameLength)"></label>
            <label><input type="radio" name="mode" value="live" checked> live: pushes go to Apple and Google</label>
            <label><input type="radio" name="mode" value="sandbox"> sandbox: pushes go to the built-in fake gateways and are recorded</label>
            <button>Create</button></form>
            """)
    }

    /// Credentials just made: the only time their secrets are shown.
    static func secrets(app: App, title: String, _ credentials: [Credential]) -> Response {
        let rows = credentials.map {
            [$0.role.rawValue, "<code>\(HTML.escape($0.accessID))</code>", "<code class=\"secret\">\(HTML.escape($0.secretKey))</code>"]
        }
        return HTML.page(
            title,
            """
            <p class="warn">Copy the secret keys now: they are shown only once and stored only encrypted.</p>
            \(HTML.table(["Role", "Access id", "Secret key"], rows))
            <p>\(HTML.link("/dashboard/apps/\(app.id)/settings", "On to \(app.name)'s settings"))</p>
            """)
    }

    static func settings(
        _ app: App, credentials: [AppStore.CredentialSummary], gateways: GatewaySummaries, webhooks: [Webhook], dead: Int,
        serviceRetentionDays: Int, rateLimits: RateLimits, audit: [AuditEntry], csrf: String, notice: String?
    ) -> Response {
        let csrfField = "<input type=\"hidden\" name=\"csrf\" value=\"\(HTML.escape(csrf))\">"
        let base = "/dashboard/apps/\(app.id)"
        func radio(_ mode: DeliveryMode, _ label: String) -> String {
            "<label><input type=\"radio\" name=\"mode\" value=\"\(mode.rawValue)\"\(app.deliveryMode == mode ? " checked" : "")> \(label)</label>"
        }
        let credentialRows = credentials.map { credential -> [String] in
            [
                credential.role.rawValue, "<code>\(HTML.escape(credential.accessID))</code>", HTML.time(credential.createdAt),
                credential.expiresAt.map { "until \(HTML.time($0))" } ?? "<span class=\"ok\">current</span>",
                """
                <form class="inline" method="post" action="\(base)/credentials/revoke">\(csrfField)<input type="hidden" name="access_id" \
                value="\(HTML.escape(credential.accessID))"><button>Revoke now</button></form>
                """,
            ]
        }
        func gatewayState(_ reason: String?, updatedAt: Date) -> String {
            (reason.map { "<span class=\"bad\">misconfigured: \(HTML.escape($0))</span>" } ?? "<span class=\"ok\">ok</span>") + ", set \(HTML.time(updatedAt))"
        }
        let apnsState =
            gateways.apns.map {
                "Key <code>\(HTML.escape($0.keyID))</code> of team <code>\(HTML.escape($0.teamID))</code> for <code>\(HTML.escape($0.bundleID))</code> "
                    + "(\(HTML.escape($0.environment))): \(gatewayState($0.misconfigurationReason, updatedAt: $0.updatedAt))"
            } ?? "<span class=\"muted\">not set</span>"
        let fcmState =
            gateways.fcm.map {
                "Project <code>\(HTML.escape($0.projectID))</code> as <code>\(HTML.escape($0.clientEmail))</code>: "
                    + gatewayState($0.misconfigurationReason, updatedAt: $0.updatedAt)
            } ?? "<span class=\"muted\">not set</span>"
        let webPushState =
            gateways.webpush.map {
                "Contact <code>\(HTML.escape($0.subject))</code>, public key <code class=\"wrap\">\(HTML.escape($0.publicKey))</code>: "
                    + gatewayState($0.misconfigurationReason, updatedAt: $0.updatedAt)
            } ?? "<span class=\"muted\">not set</span>"
        func heading(_ provider: Provider) -> String {
            "<h3>\(provider.displayName) (\(provider.reaches))</h3>"
        }
        func remove(_ provider: Provider) -> String {
            gateways.state(of: provider).configured
                ? "<form class=\"inline\" method=\"post\" action=\"\(base)/gateways/\(provider.rawValue)\">\(csrfField)<input type=\"hidden\" name=\"remove\" value=\"1\"><button>Remove</button></form>"
                : ""
        }
        let webhookRows = webhooks.map { webhook -> [String] in
            func action(_ name: String, _ label: String) -> String {
                "<form class=\"inline\" method=\"post\" action=\"\(base)/webhooks\">\(csrfField)<input type=\"hidden\" name=\"webhook\" value=\"\(webhook.id)\">"
                    + "<input type=\"hidden\" name=\"do\" value=\"\(name)\"><button>\(label)</button></form>"
            }
            return [
                HTML.link("\(base)/webhooks/\(webhook.id)", "#\(webhook.id)"), "<code>\(HTML.escape(webhook.url))</code>",
                HTML.escape(webhook.events.map(\.rawValue).joined(separator: ", ")),
                webhook.state == .active
                    ? "<span class=\"ok\">active</span>" : "<span class=\"warn\">paused: \(HTML.escape(webhook.pausedReason ?? ""))</span>",
                "\(webhook.pendingEvents)",
                (webhook.state == .active ? action("pause", "Pause") : action("resume", "Resume")) + " " + action("remove", "Remove"),
            ]
        }
        let limits = RateLimitedAction.allCases.map { action -> [String] in
            [
                action.rawValue, rateLimits.perCredential[action].map { "\($0.count) per \($0.periodSeconds) s" } ?? "none",
                rateLimits.perApp[action].map { "\($0.count) per \($0.periodSeconds) s" } ?? "none",
            ]
        }
        let events = WebhookEventType.allCases.map {
            "<label><input type=\"checkbox\" name=\"events\" value=\"\($0.rawValue)\" checked> \($0.rawValue)</label>"
        }.joined()
        let auditRows = audit.map { [HTML.time($0.at), HTML.escape($0.actor), "<code>\(HTML.escape($0.action))</code>", "\($0.status)"] }
        return HTML.page(
            "\(app.name): settings",
            """
            \(notice.map { "<p class=\"ok\">\(HTML.escape($0))</p>" } ?? "")
            <p>\(HTML.link(base, "← \(app.name)"))</p>
            <h2>App</h2>
            <form class="panel" method="post" action="\(base)/settings">\(csrfField)
            <label>Name <input type="text" name="name" value="\(HTML.escape(app.name))" required maxlength="\(App.maxNameLength)"></label>
            \(radio(.live, "live: pushes go to Apple and Google")) \(radio(.sandbox, "sandbox: pushes go to the built-in fake gateways"))
            <label>Keep deliveries for (days, 1 to \(serviceRetentionDays); empty: the service's \(serviceRetentionDays))
            <input type="number" name="retention_days" min="1" max="\(serviceRetentionDays)" value="\(app.retentionDays.map(String.init) ?? "")"></label>
            <button>Save</button></form>
            <h2>Credentials</h2>
            \(HTML.table(["Role", "Access id", "Created", "Works", ""], credentialRows))
            <form class="panel" method="post" action="\(base)/credentials/rotate">\(csrfField)
            <label>Rotate <select name="role"><option>device</option><option>server</option></select></label>
            <label>The old pair keeps working for (hours) <input type="number" name="grace_hours" min="0" max="\(366 * 24)" value="24"></label>
            <button>Rotate</button></form>
            <h2>Gateways</h2>
            <div class="grid2"><div class="panel">\(heading(.apns))<p>\(apnsState) \(remove(.apns))</p>
            <form method="post" enctype="multipart/form-data" action="\(base)/gateways/apns">\(csrfField)
            <label>Key id <input type="text" name="key_id" required></label><label>Team id <input type="text" name="team_id" required></label>
            <label>Bundle id <input type="text" name="bundle_id" required></label>
            <label>Environment <select name="environment"><option>production</option><option value="sandbox">sandbox (development)</option></select></label>
            <label>Key (.p8 file from Apple) <input type="file" name="private_key" accept=".p8" required></label>
            <button>Upload APNs key</button></form></div>
            <div class="panel">\(heading(.fcm))<p>\(fcmState) \(remove(.fcm))</p>
            <form method="post" enctype="multipart/form-data" action="\(base)/gateways/fcm">\(csrfField)
            <label>Service account (JSON file from the Firebase console) <input type="file" name="service_account" accept=".json" required></label>
            <button>Upload service account</button></form></div>
            <div class="panel">\(heading(.webpush))<p>\(webPushState) \(remove(.webpush))</p>
            <form method="post" enctype="multipart/form-data" action="\(base)/gateways/webpush">\(csrfField)
            <label>Contact for push services (mailto: or https:) <input type="text" name="subject" required \
            value="\(HTML.escape(gateways.webpush?.subject ?? ""))" placeholder="mailto:push@example.com"></label>
            <label>VAPID private key (PEM file; empty: keep the app's key, or make one) <input type="file" name="private_key" accept=".pem"></label>
            <label><input type="checkbox" name="rotate" value="1"> Make a new key (browsers must subscribe again)</label>
            <button>Save Web Push settings</button></form></div></div>
            <h2>Webhooks</h2>
            \(HTML.table(["Webhook", "URL", "Events", "State", "Waiting events", ""], webhookRows, empty: "No webhooks."))
            <form class="panel" method="post" action="\(base)/webhooks">\(csrfField)
            <label>URL <input type="text" name="url" required placeholder="https://example.com/notifiable-events"></label>\(events)
            <button>Add webhook</button></form>
            <h2>Dead deliveries</h2>
            <form method="post" action="/dashboard/queue/requeue">\(csrfField)<input type="hidden" name="app" value="\(app.id)">
            <button\(dead == 0 ? " disabled" : "")>Re-queue this app's dead deliveries</button></form>
            \(dead == 0 ? "<p class=\"muted\">None.</p>" : "")
            <h2>Rate limits</h2>
            <p class="muted">Set for every app by the service's NOTIFIABLE_RATE_LIMIT_* variables.</p>
            \(HTML.table(["Requests", "Per credential", "Per app"], limits))
            <h2>Recent changes</h2>
            \(HTML.table(["When", "Who", "What", "Answer"], auditRows, empty: "Nothing recorded yet."))
            """)
    }

    static func webhookBatches(app: App, webhookID: Int64, _ batches: [WebhookBatch], nextCursor: Int64?) -> Response {
        let rows = batches.map { batch -> [String] in
            [
                "#\(batch.id)", HTML.escape(batch.state), "\(batch.eventCount)", "\(batch.attempts)", batch.lastStatus.map(String.init) ?? "–",
                HTML.escape(batch.lastError ?? ""), HTML.time(batch.createdAt), HTML.time(batch.deliveredAt),
            ]
        }
        return HTML.page(
            "Webhook #\(webhookID): batches",
            """
            <p>\(HTML.link("/dashboard/apps/\(app.id)/settings", "← \(app.name)'s settings"))</p>
            \(HTML.table(["Batch", "State", "Events", "Attempts", "Last answer", "Last error", "Made", "Delivered"], rows, empty: "No batches yet."))
            \(nextCursor.map { "<p class=\"pager\">" + HTML.link("/dashboard/apps/\(app.id)/webhooks/\(webhookID)?cursor=\($0)", "Older →") + "</p>" } ?? "")
            """)
    }
}
