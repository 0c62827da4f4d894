import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import Testing

/// The `devices_history` triggers record what happened to a device, whichever path changed it.
@Suite struct DeviceHistoryTests {
    static let tokenA = String(repeating: "a7", count: 32)
    static let tokenB = String(repeating: "b7", count: 32)

    static func register(_ client: some TestClientProtocol, _ credential: Credential, _ token: String, alias: String?) async throws -> Int64 {
        let aliasField = alias.map { #", "user_alias": "\#($0)""# } ?? ""
        let answer = try await client.signed(.post, "/api/v1/device_tokens", body: #"{"provider": "apns", "token": "\#(token)"\#(aliasField)}"#, as: credential)
        return try #require(answer.json["id"]?.intValue, "\(answer.json)")
    }

    @Test func everyChangeToADeviceIsRecordedInOrder() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let device = app.deviceCredential
            let id = try await Self.register(client, device, Self.tokenA, alias: "alice")
            _ = try await Self.register(client, device, Self.tokenA, alias: "bob")
            _ = try await Self.register(client, device, Self.tokenA, alias: nil)
            // Another device moves onto this token: this row is merged into it.
            let other = try await Self.register(client, device, Self.tokenB, alias: "carol")
            let patched = try await client.signed(.patch, "/api/v1/device_tokens/\(other)", body: #"{"token": "\#(Self.tokenA)"}"#, as: device)
            #expect(patched.status == .ok)
            // The survivor is unregistered, registered again, then reported dead by a gateway.
            #expect(try await client.signed(.delete, "/api/v1/device_tokens/\(other)", as: device).status == .noContent)
            _ = try await Self.register(client, device, Self.tokenA, alias: "carol")
            let invalidated = try await DeliveryQueueStore(client: service.postgres, logger: TestDatabase.logger)
                .invalidateDevice(id: other, token: Self.tokenA, reason: "Unregistered", at: Date())
            #expect(invalidated)

            let queries = DashboardStore(client: service.postgres, logger: TestDatabase.logger)
            let merged = try await queries.history(deviceID: id, appID: app.app.id).map { [$0.event, $0.detail ?? ""] }
            #expect(
                merged == [
                    // The row is anonymous now: its history names none of the users it had.
                    ["registered", "a previous user"], ["user_changed", "a previous user → a previous user"],
                    ["anonymised", "a previous user → anonymous"],
                    ["merged", "into device \(other)"],
                ])
            let survivor = try await queries.history(deviceID: other, appID: app.app.id).map { [$0.event, $0.detail ?? ""] }
            #expect(
                survivor == [
                    ["registered", "user carol"], ["token_changed", "b7b7b7b7… → a7a7a7a7…"], ["unregistered", ""],
                    ["registered_again", ""], ["invalidated", "Unregistered"],
                ])
            // Moved to another user, the device's history names only the one it has now.
            _ = try await Self.register(client, device, Self.tokenA, alias: "dave")
            let moved = try await queries.history(deviceID: other, appID: app.app.id).map { [$0.event, $0.detail ?? ""] }
            #expect(moved.first == ["registered", "a previous user"])
            #expect(moved.contains(["user_changed", "a previous user → dave"]))
            #expect(!moved.joined().joined().contains("carol"))
            // Another app's view of the device has no history.
            #expect(try await queries.history(deviceID: other, appID: app.app.id + 1_000_000).isEmpty)
        }
    }
}
