import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableTesting
import Testing

/// The client recipes in `clients/` (shell with curl and openssl, Python, Node and Ruby, each with
/// nothing but its standard library), run against the real server: device and server requests
/// signed with the body covered, and webhook signatures verified.
@Suite struct ClientRecipesTests {
    struct Recipe: Sendable, CustomTestStringConvertible {
        let name: String
        let program: String
        /// The arguments that run the recipe's `request` / `verify-webhook` command.
        let prefix: [String]
        var testDescription: String { name }
    }

    static let clients = TestDatabase.migrationsDirectory.deletingLastPathComponent().appendingPathComponent("clients").path

    static let recipes: [Recipe] = [
        Recipe(name: "Python", program: "/usr/bin/python3", prefix: ["\(clients)/notifiable.py"]),
        Recipe(name: "Node", program: "/usr/bin/node", prefix: ["\(clients)/notifiable.mjs"]),
        Recipe(name: "Ruby", program: "/usr/bin/ruby", prefix: ["\(clients)/notifiable.rb"]),
        Recipe(
            name: "shell (curl, openssl)", program: "/bin/bash",
            prefix: [
                "-c", #". "$0"; command=$1; shift; case $command in request) notifiable_request "$@";; verify-webhook) notifiable_verify_webhook "$@";; esac"#,
                "\(clients)/notifiable.sh",
            ]
        ),
    ]

    func run(_ recipe: Recipe, _ arguments: [String], as credential: Credential? = nil) async throws -> (status: Int32, output: String) {
        var environment = ProcessInfo.processInfo.environment
        if let credential {
            environment["NOTIFIABLE_ACCESS_ID"] = credential.accessID
            environment["NOTIFIABLE_SECRET_KEY"] = credential.secretKey
        }
        return try await runProgram(URL(fileURLWithPath: recipe.program), recipe.prefix + arguments, environment: environment)
    }

    @Test(arguments: recipes)
    func aRecipeRegistersSendsUpdatesAndReads(_ recipe: Recipe) async throws {
        try await withTestService(.live) { client, service in
            let app = try await service.createApp()
            let base = "http://127.0.0.1:\(try #require(client.port))"
            let token = String(repeating: "7e", count: 32)

            let registered = try await run(
                recipe,
                [
                    "request", "POST", base, "/api/v1/device_tokens",
                    #"{"device_token": {"provider": "apns", "token": "\#(token)", "user_alias": "alice"}}"#,
                ],
                as: app.deviceCredential)
            #expect(registered.status == 0, "\(registered.output)")
            let id = try #require(try await service.integer("SELECT id FROM devices WHERE app_id = \(app.app.id) AND token = \(token)"))

            // Server credentials: the body is covered, as the service requires.
            let sent = try await run(
                recipe, ["request", "POST", base, "/api/v1/notifications", #"{"message": "Hi", "user_aliases": ["alice"]}"#],
                as: app.serverCredential)
            #expect(sent.status == 0, "\(sent.output)")
            #expect(sent.output.contains("202"), "\(sent.output)")
            let notification = try #require(try await service.integer("SELECT max(id) FROM notifications WHERE app_id = \(app.app.id)"))

            let updated = try await run(
                recipe, ["request", "PATCH", base, "/api/v1/device_tokens/\(id)", #"{"name": "Alice's phone"}"#],
                as: app.serverCredential)
            #expect(updated.status == 0, "\(updated.output)")
            #expect(try await service.integer("SELECT count(*) FROM devices WHERE id = \(id) AND name = 'Alice''s phone'") == 1)

            let read = try await run(recipe, ["request", "GET", base, "/api/v1/notifications/\(notification)"], as: app.serverCredential)
            #expect(read.status == 0 && read.output.replacingOccurrences(of: " ", with: "").contains(#""id":\#(notification)"#), "\(read.output)")
            let listed = try await run(recipe, ["request", "GET", base, "/api/v1/device_tokens?user_alias=alice"], as: app.deviceCredential)
            #expect(listed.status == 0 && listed.output.contains(token), "\(listed.output)")

            // A wrong secret is refused, and the recipe says so in its exit status.
            let forged = Credential(role: .server, accessID: app.serverCredential.accessID, secretKey: "not-the-secret")
            let refused = try await run(recipe, ["request", "POST", base, "/api/v1/notifications", #"{"message": "x", "all": true}"#], as: forged)
            #expect(refused.status != 0 && refused.output.contains("invalid_signature"), "\(refused.output)")
        }
    }

    @Test(arguments: recipes)
    func aRecipeVerifiesWebhookSignatures(_ recipe: Recipe) async throws {
        let secret = WebhookSignature.generateSecret()
        let body = Array(#"{"events":[{"id":1,"type":"sent","notification_id":7}]}"#.utf8)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("webhook-\(UUID().uuidString).json")
        try Data(body).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let now = Int64(Date().timeIntervalSince1970)

        let good = WebhookSignature.header(secret: secret, timestamp: now, body: body)
        #expect(try await run(recipe, ["verify-webhook", secret, good, file.path]).status == 0, "\(recipe.name) refused a good signature")
        let otherSecret = WebhookSignature.header(secret: secret + "x", timestamp: now, body: body)
        #expect(try await run(recipe, ["verify-webhook", secret, otherSecret, file.path]).status != 0)
        let old = WebhookSignature.header(secret: secret, timestamp: now - 3600, body: body)
        #expect(try await run(recipe, ["verify-webhook", secret, old, file.path]).status != 0)
        let tampered = WebhookSignature.header(secret: secret, timestamp: now, body: body + Array(" ".utf8))
        #expect(try await run(recipe, ["verify-webhook", secret, tampered, file.path]).status != 0)
    }
}
