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

    @Test func everyChangeToADeviceIsRecordedInOrder() async throws {
        try await withTestService { client, service in
            let app = try await service.createApp()
            let device = app.deviceCredential
            let id = try await Pipeline.register(client, device, token: Self.tokenA, alias: "alice")
            _ = try await Pipeline.register(client, device, token: Self.tokenA, alias: "bob")
            _ = try await Pipeline.register(client, device, token: Self.tokenA)
            // Another device moves onto this token: this row is merged into it.
            let other = try await Pipeline.register(client, device, token: Self.tokenB, alias: "carol")
            let patched = try await client.signed(.patch, "/api/v1/device_tokens/\(other)", body: #"{"token": "\#(Self.tokenA)"}"#, as: device)
            #expect(patched.status == .ok)
            // The survivor is unregistered, registered again, then reported dead by a gateway.
            #expect(try await client.signed(.delete, "/api/v1/device_tokens/\(other)", as: device).status == .noContent)
            _ = try await Pipeline.register(client, device, token: Self.tokenA, alias: "carol")
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
            _ = try await Pipeline.register(client, device, token: Self.tokenA, alias: "dave")
            let moved = try await queries.history(deviceID: other, appID: app.app.id).map { [$0.event, $0.detail ?? ""] }
            #expect(moved.first == ["registered", "a previous user"])
            #expect(moved.contains(["user_changed", "a previous user → dave"]))
            #expect(!moved.joined().joined().contains("carol"))
            // The SDK's unassign, `"user_alias": ""` in an update, anonymises it the same way.
            let unassigned = try await client.signed(.patch, "/api/v1/device_tokens/\(other)", body: #"{"user_alias": ""}"#, as: device)
            #expect(unassigned.status == .ok)
            let anonymous = try await queries.history(deviceID: other, appID: app.app.id).map { [$0.event, $0.detail ?? ""] }
            #expect(anonymous.last == ["anonymised", "a previous user → anonymous"], "\(anonymous)")
            #expect(!anonymous.joined().joined().contains("dave"))
            // Another app's view of the device has no history.
            #expect(try await queries.history(deviceID: other, appID: app.app.id + 1_000_000).isEmpty)
        }
    }
}
