import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableStore
import Testing

/// The steps of a push that end-to-end tests take again and again, as a client would: register a
/// device, send a notification, read its counters, wait until nothing is left in flight.
public enum Pipeline {
    /// Fans out every accepted notification by hand, for tests that drive the queue without workers.
    public static func fanOut(_ service: TestService) async throws {
        let fanOut = FanOutStore(client: service.postgres, logger: TestDatabase.logger)
        while var job = try await fanOut.claim(lease: .seconds(5)) {
            while try await fanOut.advance(&job, batchSize: 100, lease: .seconds(5)) != nil {}
        }
    }

    /// A 64-hex-digit APNs token made from `n`.
    public static func token(_ n: Int) -> String { String(format: "%064x", n) }

    /// `POST /api/v1/device_tokens` as the SDKs send it, the fields under `device_token`; answers the
    /// response. `extra` is further members, each after a comma: `, "tags": ["beta"]`.
    public static func registration(
        _ client: some TestClientProtocol, _ credential: Credential, provider: String = "apns", token: String, alias: String? = nil,
        language: String? = nil, country: String? = nil, extra: String = ""
    ) async throws -> TestResponse {
        var fields = [#""provider": "\#(provider)""#, #""token": "\#(token)""#]
        if let alias { fields.append(#""user_alias": "\#(alias)""#) }
        if let language { fields.append(#""language": "\#(language)""#) }
        if let country { fields.append(#""country": "\#(country)""#) }
        let body = "{\"device_token\": {\(fields.joined(separator: ", "))\(extra)}}"
        return try await client.signed(.post, "/api/v1/device_tokens", body: body, as: credential)
    }

    /// Registers a device (an APNs one unless `provider` says otherwise), as `registration` does,
    /// and expects it registered; answers its id.
    public static func register(
        _ client: some TestClientProtocol, _ credential: Credential, provider: String = "apns", token: String, alias: String? = nil,
        language: String? = nil, country: String? = nil, extra: String = ""
    ) async throws -> Int64 {
        let response = try await registration(
            client, credential, provider: provider, token: token, alias: alias, language: language, country: country, extra: extra
        )
        return try registered(response)
    }

    /// Registers a device with `body` sent as written (fields at the top level, as plain REST
    /// clients send them); answers its id.
    public static func register(_ client: some TestClientProtocol, _ credential: Credential, body: String) async throws -> Int64 {
        try registered(try await client.signed(.post, "/api/v1/device_tokens", body: body, as: credential))
    }

    private static func registered(_ response: TestResponse) throws -> Int64 {
        #expect(response.status == .ok, "\(String(buffer: response.body))")
        return try #require(response.json["id"]?.intValue, "\(String(buffer: response.body))")
    }

    /// Registers one APNs device, sends it a notification with `message` and fans it out by hand:
    /// one delivery ready to claim. Answers the device's and the notification's ids.
    public static func queuedPush(
        _ client: some TestClientProtocol, _ service: TestService, _ app: AppStore.CreatedApp, token: String, message: String = "x"
    ) async throws -> (device: Int64, notification: Int64) {
        let device = try await register(client, app.deviceCredential, token: token)
        let id = try await send(client, app.serverCredential, #"{"message": "\#(message)", "device_ids": [\#(device)]}"#)
        try await fanOut(service)
        return (device, id)
    }

    /// Sends a notification (expects 202); answers its id.
    public static func send(_ client: some TestClientProtocol, _ credential: Credential, _ body: String) async throws -> Int64 {
        let response = try await client.signed(.post, "/api/v1/notifications", body: body, as: credential)
        #expect(response.status == .accepted, "\(String(buffer: response.body))")
        return try #require(response.json["id"]?.intValue, "\(String(buffer: response.body))")
    }

    /// `GET /api/v1/notifications/:id`'s answer.
    public static func counters(_ client: some TestClientProtocol, _ credential: Credential, _ id: Int64) async throws -> JSONValue {
        try await client.signed(.get, "/api/v1/notifications/\(id)", as: credential).json
    }

    /// Waits until the notification has nothing left in flight. One statement, so both counts
    /// come from one snapshot (a fan-out committing between two queries would fool it).
    public static func settled(_ service: TestService, _ id: Int64) async throws -> Bool {
        try await service.eventually {
            try await service.integer(
                """
                SELECT (SELECT count(*) FROM deliveries
                        WHERE notification_id = \(id) AND state IN ('available', 'running', 'retrying'))
                     + (SELECT count(*) FROM notifications WHERE id = \(id) AND state = 'fanning_out')
                """
            ) == 0
        }
    }
}
