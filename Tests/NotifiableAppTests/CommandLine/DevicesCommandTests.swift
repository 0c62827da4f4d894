import Crypto
import Foundation
import Logging
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import PostgresNIO
import Testing

/// `notifiable devices import|export`: bulk moves of devices under the API's registration rules.
@Suite struct DevicesCommandTests {
    @Test func importAppliesTheRegistrationRulesAndReportsEveryRow() async throws {
        try await CLIFixture.with { cli in
            let app = try await cli.createApp()
            let moving = Hex.token(1), leaving = Hex.token(2), staying = Hex.token(3)
            try await cli.register(app: app, token: moving, alias: "old")
            try await cli.register(app: app, token: leaving, alias: "dave")
            try await cli.register(app: app, token: staying, alias: "jo")
            let mixed = Hex.token(4)
            let file = try cli.write(
                "devices.csv",
                """
                token,provider,user_alias,language,country,custom_properties
                \(mixed.uppercased()),apns,alice,EN,GB,"{""vip"":true, ""tier"": ""gold""}"
                \(mixed),APNS,bob,en,gb,
                \(moving),apns,carol,,,
                \(leaving),apns,,,,
                fcm:Token-1,gcm,erin,fr,,
                zz,apns,frank,,,
                \(Hex.token(5)),pigeon,gina,,,
                \(Hex.token(6)),apns,hank,english,,
                \(Hex.token(7)),apns,ivan,,,"{not json"
                \(Hex.token(8)),apns
                \(staying.uppercased()),apns,jo,,,
                \(Hex.token(9)),apns,kim,,,"{""k"":""a\\u0000""}"

                """)
            let result = try await cli.run("devices", "import", "--app", "\(app)", file.path)
            #expect(result.status == 0, "\(result.output)")
            for line in [
                "Read 12 rows", "imported (new):     2", "updated:            1", "reassigned:         1",
                "anonymised:         1", "superseded:         1", "rejected:           6",
                "invalid_token: 1 (lines 7)", "invalid_provider: 1 (lines 8)", "invalid_language: 1 (lines 9)",
                "invalid_custom_properties: 1 (lines 10)", "wrong_field_count: 1 (lines 11)",
                // A NUL that only string-form properties' escapes reveal: the row is skipped, the rest imported.
                "invalid_character: 1 (lines 13)",
            ] {
                #expect(result.output.contains(line), "missing \(line) in \(result.output)")
            }
            let devices = try await cli.devices(app: app)
            #expect(devices.count == 5)
            #expect(devices[mixed] == .init(alias: "bob", language: "en", country: "gb", custom: "{}"))
            #expect(devices[moving]?.alias == "carol")
            #expect(devices[leaving]?.alias == nil)
            #expect(devices[staying]?.alias == "jo")
            #expect(devices["fcm:Token-1"] == .init(alias: "erin", language: "fr", country: nil, custom: "{}", provider: "fcm"))
            #expect(!FileManager.default.fileExists(atPath: file.path + ".import-state"))
        }
    }

    @Test func tagsComeInSpaceSeparatedFromCSVAndAsArraysFromJSONLinesAndARowWithoutThemKeepsThem() async throws {
        try await CLIFixture.with { cli in
            let app = try await cli.createApp()
            let csv = try cli.write(
                "tags.csv",
                """
                token,provider,user_alias,tags
                \(Hex.token(41)),apns,ann,vip lang:fr vip
                \(Hex.token(42)),apns,ben,ok not;ok
                \(Hex.token(43)),apns,cal,

                """)
            let first = try await cli.run("devices", "import", "--app", "\(app)", csv.path)
            #expect(first.status == 0 && first.output.contains("invalid_tag: 1 (lines 3)"), "\(first.output)")
            let jsonl = try cli.write(
                "tags.jsonl",
                [
                    #"{"token": "\#(Hex.token(41))", "provider": "apns", "user_alias": "ann"}"#,
                    #"{"token": "\#(Hex.token(43))", "provider": "apns", "user_alias": "cal", "tags": ["group:beta"]}"#,
                ].joined(separator: "\n") + "\n")
            let second = try await cli.run("devices", "import", "--app", "\(app)", jsonl.path)
            #expect(second.status == 0, "\(second.output)")
            let devices = try await cli.devices(app: app)
            #expect(devices[Hex.token(41)]?.tags == ["lang:fr", "vip"])
            #expect(devices[Hex.token(42)] == nil)
            #expect(devices[Hex.token(43)]?.tags == ["group:beta"])
        }
    }

    /// A browser's subscription imports with its keys, as registration stores them; one off the
    /// allowed push services is refused as registration refuses it.
    @Test func aBrowsersSubscriptionImportsWithItsKeys() async throws {
        try await CLIFixture.with { cli in
            let app = try await cli.createApp()
            let point = Base64URL.encode(P256.KeyAgreement.PrivateKey().publicKey.x963Representation)
            let jsonl = try cli.write(
                "browsers.jsonl",
                [
                    #"{"token": "https://fcm.googleapis.com/fcm/send/imported", "provider": "webpush", "keys": {"p256dh": "\#(point)", "auth": "AAECAwQFBgcICQoLDA0ODw"}}"#,
                    #"{"token": "https://evil.example.com/push/1", "provider": "webpush", "keys": {"p256dh": "\#(point)", "auth": "AAECAwQFBgcICQoLDA0ODw"}}"#,
                ].joined(separator: "\n") + "\n")
            let imported = try await cli.run("devices", "import", "--app", "\(app)", jsonl.path)
            #expect(imported.status == 0 && imported.output.contains("push_service_not_allowed: 1 (lines 2)"), "\(imported.output)")
            let keys = try await cli.withPostgres { postgres in
                let rows = try await postgres.query(
                    "SELECT push_keys ->> 'p256dh' FROM devices WHERE token = 'https://fcm.googleapis.com/fcm/send/imported'",
                    logger: TestDatabase.logger)
                var found: [String?] = []
                for try await key in rows.decode(String?.self) { found.append(key) }
                return found
            }
            #expect(keys == [point])

            // Exported as JSON lines, the browser comes back with its keys.
            let copy = try await cli.createApp()
            let exported = cli.folder.appendingPathComponent("browsers-export.jsonl")
            #expect(try await cli.run("devices", "export", "--app", "\(app)", "--output", exported.path).status == 0)
            let again = try await cli.run("devices", "import", "--app", "\(copy)", exported.path)
            #expect(again.status == 0 && again.output.contains("imported (new):     1"), "\(again.output)")
            let copied = try await cli.withPostgres { postgres in
                let rows = try await postgres.query(
                    "SELECT push_keys ->> 'p256dh' FROM devices WHERE app_id = \(copy)", logger: TestDatabase.logger)
                var found: [String?] = []
                for try await key in rows.decode(String?.self) { found.append(key) }
                return found
            }
            #expect(copied == [point])
        }
    }

    @Test func anInterruptedImportResumesWithoutLosingOrCountingRowsTwice() async throws {
        try await CLIFixture.with { cli in
            let app = try await cli.createApp()
            let lines = (1...50).map { index in
                #"{"token": "\#(Hex.token(index).uppercased())", "provider": "apns", "user_alias": "user-\#(index % 7)", "custom_properties": {"n": \#(index)}}"#
            }
            let file = try cli.write("devices.jsonl", lines.joined(separator: "\n") + "\n")
            let state = file.path + ".import-state"

            let stopped = try await cli.run("devices", "import", "--app", "\(app)", file.path, "--batch-size", "10", "--stop-after-batches", "2")
            #expect(stopped.status == 75, "\(stopped.output)")
            #expect(try await cli.devices(app: app).count == 20)
            #expect(FileManager.default.fileExists(atPath: state))

            // Dies after committing its batch and before saving that it did.
            let crashed = try await cli.run(
                "devices", "import", "--app", "\(app)", file.path, "--batch-size", "10", "--stop-after-batches", "3", "--crash-before-checkpoint"
            )
            #expect(crashed.status == 75, "\(crashed.output)")
            #expect(try await cli.devices(app: app).count == 30)
            let saved = try JSONValue.decode(Array(try Data(contentsOf: URL(fileURLWithPath: state))))
            #expect(saved["inFlight"] != nil && saved["inFlight"] != .null)

            let resumed = try await cli.run("devices", "import", "--app", "\(app)", file.path, "--batch-size", "10")
            #expect(resumed.status == 0, "\(resumed.output)")
            #expect(resumed.output.contains("Resuming after 30 rows"), "\(resumed.output)")
            #expect(resumed.output.contains("Read 50 rows"), "\(resumed.output)")
            #expect(resumed.output.contains("imported (new):     50"), "\(resumed.output)")
            #expect(resumed.output.contains("updated:            0"), "\(resumed.output)")
            let devices = try await cli.devices(app: app)
            #expect(devices.count == 50)
            #expect(devices[Hex.token(50)] == .init(alias: "user-1", language: nil, country: nil, custom: #"{"n": 50}"#))
            #expect(!FileManager.default.fileExists(atPath: state))

            // A crash before the commit: the batch was not written, so it is read again.
            let restarted = try await cli.run(
                "devices", "import", "--app", "\(app)", file.path, "--batch-size", "10", "--restart", "--stop-after-batches", "1", "--crash-before-checkpoint"
            )
            #expect(restarted.status == 75)
            try await cli.sql("UPDATE devices SET updated_at = updated_at - interval '1 hour' WHERE app_id = \(app)")
            let again = try await cli.run("devices", "import", "--app", "\(app)", file.path, "--batch-size", "10")
            #expect(again.output.contains("updated:            50"), "\(again.output)")
        }
    }

    @Test func importsANotifiableRailsDatabase() async throws {
        try await CLIFixture.with { cli in
            let app = try await cli.createApp()
            // The table as notifiable-rails' migrations leave it (2013 create, name, 2017 is_valid
            // removal and app/token index, 2018 language and country).
            try await cli.sql(
                """
                CREATE TABLE notifiable_device_tokens (
                    id serial PRIMARY KEY, token varchar, provider varchar, locale varchar, user_alias varchar,
                    app_id integer, created_at timestamp, updated_at timestamp, name varchar, language varchar, country varchar
                )
                """)
            try await cli.sql("CREATE UNIQUE INDEX ON notifiable_device_tokens (app_id, token)")
            try await cli.sql(
                """
                INSERT INTO notifiable_device_tokens (token, provider, locale, user_alias, app_id, name, language, country) VALUES
                  ('\(Hex.token(11).uppercased())', 'apns', 'en_GB', 'alice', 1, 'iPhone', NULL, NULL),
                  ('fcm-token-b', 'gcm', NULL, 'bob', 1, NULL, 'FR', 'fr'),
                  ('win-token', 'mpns', 'en', 'carl', 1, NULL, NULL, NULL),
                  ('\(Hex.token(12))', 'apns', 'de', NULL, 1, NULL, NULL, NULL),
                  ('\(Hex.token(13))', 'apns', 'es', 'dan', 2, NULL, NULL, NULL),
                  ('nothex', 'apns', NULL, 'eve', 1, NULL, NULL, NULL)
                """)
            let result = try await cli.run(
                "devices", "import", "--app", "\(app)", "--from-notifiable-rails", cli.url, "--rails-app-id", "1", "--batch-size", "2",
                "--state-file", cli.folder.appendingPathComponent("rails.import-state").path
            )
            #expect(result.status == 0, "\(result.output)")
            #expect(result.output.contains("Read 5 rows"), "\(result.output)")
            #expect(result.output.contains("imported (new):     3"), "\(result.output)")
            #expect(result.output.contains("invalid_provider: 1 (ids 3)"), "\(result.output)")
            #expect(result.output.contains("invalid_token: 1 (ids 6)"), "\(result.output)")
            let devices = try await cli.devices(app: app)
            #expect(devices.count == 3)
            #expect(devices[Hex.token(11)] == .init(alias: "alice", language: "en", country: "gb", custom: "{}", name: "iPhone"))
            #expect(devices["fcm-token-b"] == .init(alias: "bob", language: "fr", country: "fr", custom: "{}", provider: "fcm"))
            #expect(devices[Hex.token(12)] == .init(alias: nil, language: "de", country: nil, custom: "{}"))
        }
    }

    @Test func exportWritesWhatImportReadsBack() async throws {
        try await CLIFixture.with { cli in
            let source = try await cli.createApp(), copy = try await cli.createApp(), jsonCopy = try await cli.createApp()
            let file = try cli.write(
                "devices.csv",
                #"""
                token,provider,user_alias,language,country,custom_properties,name,tags
                \#(Hex.token(21)),apns,alice,en,gb,"{""tags"":[""a,b"",""c\""d""]}","Alice's ""phone""
                second line",lang:en group:beta group:beta
                fcm-1,fcm,,fr,,,,
                \#(Hex.token(22)),apns,bob,,,"{""n"":1}",,

                """#)
            #expect(try await cli.run("devices", "import", "--app", "\(source)", file.path).status == 0)
            try await cli.sql("UPDATE devices SET unregistered_at = now() WHERE token = 'fcm-1'")

            let exported = cli.folder.appendingPathComponent("export.csv"), jsonl = cli.folder.appendingPathComponent("export.jsonl")
            let csvRun = try await cli.run("devices", "export", "--app", "\(source)", "--output", exported.path, "--page-size", "1")
            #expect(csvRun.status == 0 && csvRun.output.contains("Exported 2 devices"), "\(csvRun.output)")
            #expect(try await cli.run("devices", "export", "--app", "\(source)", "--output", jsonl.path).status == 0)
            #expect(try await cli.run("devices", "import", "--app", "\(copy)", exported.path).status == 0)
            #expect(try await cli.run("devices", "import", "--app", "\(jsonCopy)", jsonl.path).status == 0)

            let original = try await cli.devices(app: source).filter { $0.key != "fcm-1" }
            #expect(original.count == 2)
            #expect(original[Hex.token(21)]?.name == "Alice's \"phone\"\nsecond line")
            #expect(original[Hex.token(21)]?.tags == ["group:beta", "lang:en"])
            #expect(original[Hex.token(22)]?.tags == [])
            #expect(try await cli.devices(app: copy) == original)
            #expect(try await cli.devices(app: jsonCopy) == original)
            let again = cli.folder.appendingPathComponent("again.csv")
            #expect(try await cli.run("devices", "export", "--app", "\(copy)", "--output", again.path).status == 0)
            #expect(try String(contentsOf: again, encoding: .utf8) == String(contentsOf: exported, encoding: .utf8))
        }
    }

    /// With a read pool (NOTIFIABLE_READ_DATABASE_URL), an export reads its devices there: here a
    /// second database holding the same app with other devices stands for a standby.
    @Test func exportReadsFromTheReadPoolWhenThereIsOne() async throws {
        try await CLIFixture.with { primary in
            let app = try await primary.createApp()
            try await primary.register(app: app, token: Hex.token(41), alias: "on-the-primary")
            try await CLIFixture.with { standby in
                #expect(try await standby.createApp() == app)
                try await standby.register(app: app, token: Hex.token(42), alias: "on-the-standby")
                let output = primary.folder.appendingPathComponent("read-pool.csv")
                let result = try await primary.run(
                    ["devices", "export", "--app", "\(app)", "--output", output.path], environment: ["NOTIFIABLE_READ_DATABASE_URL": standby.url])
                #expect(result.status == 0, "\(result.output)")
                let text = try String(contentsOf: output, encoding: .utf8)
                #expect(text.contains("on-the-standby") && !text.contains("on-the-primary"), "\(text)")
            }
        }
    }
}

/// `notifiable notifications send` and `notifiable queue`.
@Suite struct NotificationsAndQueueCommandTests {
    @Test func sendStoresANotificationThatFansOutAndTheQueueCommandsSeeIt() async throws {
        try await CLIFixture.with { cli in
            let app = try await cli.createApp()
            try await cli.register(app: app, token: Hex.token(31), alias: "alice")
            try await cli.register(app: app, token: Hex.token(32), alias: "alice")
            try await cli.register(app: app, token: Hex.token(33), alias: "bob")

            let refused = try await cli.run("notifications", "send", "--app", "\(app)", "--title", "Hi")
            #expect(refused.status != 0 && refused.output.contains("user_aliases"), "\(refused.output)")

            let sent = try await cli.run("notifications", "send", "--app", "\(app)", "--title", "Hi", "--message", "Shipped", "--user", "alice")
            #expect(sent.status == 0, "\(sent.output)")
            let notification = try JSONValue.decode(Array(sent.output.utf8))
            let id = try #require(notification["id"]?.intValue)
            #expect(notification["state"]?.stringValue != nil)

            let badTags = try await cli.run("notifications", "send", "--app", "\(app)", "--title", "T", "--tag-expression", "beta &&")
            #expect(badTags.status != 0 && badTags.output.contains("position"), "\(badTags.output)")
            let kept = try await cli.run("notifications", "send", "--app", "\(app)", "--title", "Kept", "--user", "bob", "--stateful")
            #expect(kept.status == 0, "\(kept.output)")
            #expect(try JSONValue.decode(Array(kept.output.utf8))["user_states"]?["targeted"]?.intValue == 1)

            let body = try cli.write("n.json", #"{"notification": {"title": "All"}, "all": true, "idempotency_key": "k1"}"#)
            let fromFile = try await cli.run("notifications", "send", "--app", "\(app)", "--file", body.path)
            #expect(fromFile.status == 0, "\(fromFile.output)")

            let reached = try await cli.fanOut()
            #expect(reached[id] == 2)
            #expect(reached.values.reduce(0, +) == 6)

            let status = try await cli.run("queue", "status")
            #expect(status.status == 0, "\(status.output)")
            let stats = try JSONValue.decode(Array(status.output.utf8))
            #expect(stats["deliveries"]?["available"]?.intValue == 6)
            #expect(stats["deliveries"]?["dead"]?.intValue == 0)
            #expect(stats["notifications_fanning_out"]?.intValue == 0)

            try await cli.sql("UPDATE deliveries SET state = 'dead', dead_at = now() WHERE notification_id = \(id)")
            let requeued = try await cli.run("queue", "requeue-dead", "--app", "\(app)")
            #expect(requeued.status == 0 && requeued.output.contains("Re-queued 2 dead deliveries"), "\(requeued.output)")
        }
    }
}

/// A fresh database, a scratch folder and the `notifiable` executable pointed at both.
struct CLIFixture: Sendable {
    let url: String
    let folder: URL

    struct Stored: Equatable {
        var alias: String?
        var language: String?
        var country: String?
        var custom: String
        var provider = "apns"
        var name: String?
        var tags: [String] = []
    }

    static func with(_ body: @Sendable (CLIFixture) async throws -> Void) async throws {
        try await TestDatabase.withFreshDatabase { url in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("devices-cli-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            try await body(CLIFixture(url: url, folder: folder))
        }
    }

    func run(_ arguments: String...) async throws -> (status: Int32, output: String) {
        try await run(arguments)
    }

    func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> (status: Int32, output: String) {
        try await NotifiableProcess.run(
            arguments,
            environment: [
                "DATABASE_URL": url, "NOTIFIABLE_MASTER_KEY": TestDatabase.masterKey.base64,
                "NOTIFIABLE_MIGRATIONS_DIR": TestDatabase.migrationsDirectory.path,
            ].merging(environment) { _, given in given })
    }

    func createApp() async throws -> Int64 {
        let created = try await run("apps", "create", "--name", "Shop", "--json")
        return try #require(try JSONValue.decode(Array(created.output.utf8))["id"]?.intValue, "\(created.output)")
    }

    func write(_ name: String, _ text: String) throws -> URL {
        let file = folder.appendingPathComponent(name)
        try Data(text.utf8).write(to: file)
        return file
    }

    func withPostgres<T: Sendable>(_ body: @Sendable (Database) async throws -> T) async throws -> T {
        try await withPostgresClient(try DatabaseURL.configuration(from: url), logger: TestDatabase.logger, body)
    }

    func sql(_ text: String) async throws {
        try await withPostgres { try await $0.query(PostgresQuery(unsafeSQL: text), logger: TestDatabase.logger) }
    }

    func register(app: Int64, token: String, alias: String?) async throws {
        var fields = DeviceFields()
        fields.provider = .apns
        fields.token = token
        fields.userAlias = .set(alias)
        let registration = fields
        _ = try await withPostgres { try await DeviceStore(client: $0, logger: TestDatabase.logger).register(appID: app, fields: registration) }
    }

    /// The app's devices that hold a token, by token.
    func devices(app: Int64) async throws -> [String: Stored] {
        try await withPostgres { client in
            var devices: [String: Stored] = [:]
            for try await (token, provider, alias, language, country, custom, name, tags) in try await client.query(
                "SELECT token, provider, user_alias, language, country, custom_properties::text, name, tags FROM devices WHERE app_id = \(app) AND merged_into IS NULL",
                logger: TestDatabase.logger
            ).decode((String, String, String?, String?, String?, String, String?, [String]).self) {
                devices[token] = Stored(alias: alias, language: language, country: country, custom: custom, provider: provider, name: name, tags: tags)
            }
            return devices
        }
    }

    /// Runs every pending fan-out to the end; deliveries created per notification.
    func fanOut() async throws -> [Int64: Int] {
        try await withPostgres { client in
            let fanOut = FanOutStore(client: client, logger: TestDatabase.logger)
            var created: [Int64: Int] = [:]
            while var job = try await fanOut.claim(lease: .seconds(30)) {
                while let count = try await fanOut.advance(&job, batchSize: 100, lease: .seconds(30)) {
                    created[job.notificationID, default: 0] += count
                }
            }
            return created
        }
    }
}

enum Hex {
    /// A distinct 64-character APNs token.
    static func token(_ seed: Int) -> String {
        String(repeating: String(format: "%08x", seed), count: 8)
    }
}

/// `notifiable retention`: what workers do every hour, on demand, with its report as JSON.
@Suite struct RetentionCommandTests {
    @Test func retentionRemovesWhatIsPastItsPeriodAndSaysWhat() async throws {
        try await CLIFixture.with { cli in
            let app = try await cli.createApp()
            try await cli.register(app: app, token: Hex.token(41), alias: "alice")
            let sent = try await cli.run("notifications", "send", "--app", "\(app)", "--title", "Old", "--user", "alice")
            let id = try #require(try JSONValue.decode(Array(sent.output.utf8))["id"]?.intValue)
            try await cli.sql("UPDATE notifications SET created_at = now() - interval '10 days' WHERE id = \(id)")
            #expect(try await cli.fanOut()[id] == 1)
            try await cli.sql("UPDATE deliveries SET state = 'sent', sent_at = now() WHERE notification_id = \(id)")

            let kept = try await cli.run("retention", "--days", "30")
            #expect(kept.status == 0, "\(kept.output)")
            #expect(try JSONValue.decode(Array(kept.output.utf8))["deleted_notifications"]?.intValue == 0, "\(kept.output)")

            // Ten days on, as the same period: the day and the notification go.
            let asOf = ISO8601DateFormatter().string(from: Date().addingTimeInterval(21 * 86_400))
            let report = try await cli.run("retention", "--days", "30", "--as-of", asOf)
            #expect(report.status == 0, "\(report.output)")
            let json = try JSONValue.decode(Array(report.output.utf8))
            #expect(json["deleted_notifications"]?.intValue == 1, "\(report.output)")
            #expect(json["dropped_partitions"]?.arrayValue?.count == 1, "\(report.output)")

            let refused = try await cli.run("retention", "--days", "0")
            #expect(refused.status == 64 && refused.output.contains("--days"), "\(refused.output)")
            let badTime = try await cli.run("retention", "--as-of", "tomorrow")
            #expect(badTime.status == 64 && badTime.output.contains("ISO 8601"), "\(badTime.output)")
        }
    }
}
