import Crypto
import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableSandbox
import NotifiableStore
import PostgresNIO

/// Runs `body` with a fake APNs gateway on a loopback port, stopped afterwards.
public func withFakeAPNs<T: Sendable>(_ body: @Sendable (SandboxAPNsGateway) async throws -> T) async throws -> T {
    try await withGateway(try await SandboxAPNsGateway.start(), stop: { try await $0.stop() }, body)
}

/// Runs `body` with a fake FCM gateway on a loopback port, stopped afterwards.
public func withFakeFCM<T: Sendable>(_ body: @Sendable (SandboxFCMGateway) async throws -> T) async throws -> T {
    try await withGateway(try await SandboxFCMGateway.start(), stop: { try await $0.stop() }, body)
}

private func withGateway<Gateway: Sendable, T: Sendable>(
    _ gateway: Gateway, stop: @Sendable (Gateway) async throws -> Void, _ body: @Sendable (Gateway) async throws -> T
) async throws -> T {
    do {
        let result = try await body(gateway)
        try await stop(gateway)
        return result
    } catch {
        try? await stop(gateway)
        throw error
    }
}

extension TestService {
    /// Points the app at `gateway` with a new signing key that the gateway trusts: its production
    /// host, and its sandbox host too unless `sandbox` names another gateway (both hosts are
    /// always on this machine).
    public func connectAPNs(
        appID: Int64, to gateway: SandboxAPNsGateway, bundleID: String = "com.example.app", sandbox: SandboxAPNsGateway? = nil
    ) async throws {
        let key = P256.Signing.PrivateKey()
        let keyID = "KEY\(appID)"
        let teamID = "TEAM\(appID)"
        gateway.trust(teamID: teamID, keyID: keyID, publicKey: key.publicKey)
        sandbox?.trust(teamID: teamID, keyID: keyID, publicKey: key.publicKey)
        // One CA for both: each fake gateway has its own self-signed certificate, so a second one
        // is trusted through its certificate appended to the first's.
        let ca = [gateway.certificatePEM, sandbox?.certificatePEM].compactMap { $0 }.joined(separator: "\n")
        let settings = APNsSettings(
            keyID: keyID, teamID: teamID, bundleID: bundleID, privateKeyPEM: key.pemRepresentation,
            environment: .production, endpoint: gateway.baseURL, trustedCAPEM: ca, sandboxEndpoint: (sandbox ?? gateway).baseURL
        )
        let saved = try await APNsSettingsStore(client: postgres, keys: configuration.keys, logger: TestDatabase.logger)
            .save(settings, appID: appID)
        precondition(saved, "no app \(appID)")
    }

    /// Registers `count` APNs devices straight in the database (for audiences too large to
    /// register one request at a time); tokens are the hex of `tokenPrefix` and a counter.
    public func insertDevices(appID: Int64, count: Int, tokenSeed: Int64, userAlias: String? = nil, provider: Provider = .apns) async throws {
        try await postgres.query(
            """
            INSERT INTO devices (app_id, provider, token, user_alias)
            SELECT \(appID), \(provider.rawValue), lpad(to_hex(\(tokenSeed)::int8), 32, '0') || lpad(to_hex(n), 32, '0'), \(userAlias)
            FROM generate_series(1, \(count)) AS n
            """,
            logger: TestDatabase.logger
        )
    }

    /// Polls `condition` until it holds or `timeout` passes; returns whether it held.
    public func eventually(
        timeout: Duration = .seconds(60), every interval: Duration = .milliseconds(50),
        _ condition: @Sendable () async throws -> Bool
    ) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: interval)
        }
        return try await condition()
    }

    /// Each delivery of a notification as "state attempts reason", for failure messages.
    public func describeDeliveries(of notificationID: Int64) async throws -> String {
        var lines: [String] = []
        let rows = try await postgres.query(
            """
            SELECT state, attempts, coalesce(reason, '') || ' created ' || created_at::time || ' claimed ' || coalesce(claimed_at::time::text, '-')
                   || ' updated ' || updated_at::time || ' locked ' || coalesce(locked_until::time::text, '-') || ' now ' || clock_timestamp()::time
            FROM deliveries WHERE notification_id = \(notificationID) ORDER BY id
            """,
            logger: TestDatabase.logger
        )
        for try await (state, attempts, reason) in rows.decode((String, Int32, String).self) {
            lines.append("\(state) \(attempts) \(reason)")
        }
        let notification = try await postgres.query(
            "SELECT state FROM notifications WHERE id = \(notificationID)", logger: TestDatabase.logger
        )
        for try await state in notification.decode(String.self) { lines.append("notification: \(state)") }
        return lines.joined(separator: "; ")
    }

    /// Count of a notification's deliveries in `state`.
    public func deliveries(of notificationID: Int64, in state: String) async throws -> Int64 {
        try await integer("SELECT count(*) FROM deliveries WHERE notification_id = \(notificationID) AND state = \(state)") ?? 0
    }
}

extension TestService {
    /// Points the app at `gateway` with a new service account that the gateway trusts (its
    /// `token_uri` is the gateway's token endpoint).
    public func connectFCM(appID: Int64, to gateway: SandboxFCMGateway, projectID: String = "demo-project") async throws {
        let json = try gateway.makeServiceAccount(projectID: projectID, clientEmail: "app\(appID)@\(projectID).iam.gserviceaccount.com")
        let settings = FCMSettings(
            serviceAccountJSON: json, projectID: projectID, clientEmail: "app\(appID)@\(projectID).iam.gserviceaccount.com",
            endpoint: gateway.baseURL, trustedCAPEM: gateway.certificatePEM
        )
        let saved = try await FCMSettingsStore(client: postgres, keys: configuration.keys, logger: TestDatabase.logger).save(settings, appID: appID)
        precondition(saved, "no app \(appID)")
    }
}
