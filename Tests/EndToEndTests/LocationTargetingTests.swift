import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import Testing

/// `"near"`: devices inside a radius of a point, from the coordinates the SDKs send.
@Suite struct LocationTargetingTests {
    @Test func devicesInsideTheRadiusAreReachedAndNoOthers() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            func register(_ n: Int, _ position: String) async throws -> Int64 {
                try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0x10C0 + n), extra: position)
            }
            let trafalgar = try await register(1, #", "latitude": 51.5080, "longitude": -0.1281"#)
            let greenwich = try await register(2, #", "latitude": "51.4769", "longitude": "-0.0005""#)  // as strings, ~9.4 km away
            let paris = try await register(3, #", "latitude": 48.8566, "longitude": 2.3522"#)
            let custom = try await register(4, #", "custom_properties": {"latitude": 51.5081, "longitude": -0.1280}"#)
            _ = try await register(5, #", "latitude": "north", "longitude": -0.1281"#)
            _ = try await register(6, #", "latitude": 95, "longitude": -0.1281"#)
            _ = try await register(7, "")
            // A Unicode space around the number (which PostgreSQL's float parser would refuse) is no location, not a failure.
            _ = try await register(8, #", "latitude": "\u200351.5081", "longitude": "-0.1280\u3000""#)

            func reached(_ near: String) async throws -> Set<Int64> {
                let sent = try await client.signed(.post, "/api/v1/notifications", body: #"{"title": "x", "near": \#(near)}"#, as: app.serverCredential)
                #expect(sent.status == .accepted, "\(String(buffer: sent.body))")
                let id = try #require(sent.json["id"]?.intValue)
                try await Pipeline.fanOut(service)
                let rows = try await service.postgres.query("SELECT device_id FROM deliveries WHERE notification_id = \(id)", logger: TestDatabase.logger)
                var devices = Set<Int64>()
                for try await device in rows.decode(Int64.self) { devices.insert(device) }
                return devices
            }
            #expect(try await reached(#"{"latitude": 51.5080, "longitude": -0.1281, "radius_m": 1000}"#) == [trafalgar, custom])
            #expect(try await reached(#"{"latitude": 51.5080, "longitude": -0.1281, "radius_m": 12000}"#) == [trafalgar, custom, greenwich])
            #expect(try await reached(#"{"latitude": 51.5080, "longitude": -0.1281, "radius_m": 400000}"#) == [trafalgar, custom, greenwich, paris])
            #expect(try await reached(#"{"latitude": -33.86, "longitude": 151.2, "radius_m": 50000}"#).isEmpty)

            // Bad circles are refused, naming the field.
            for (near, field) in [
                (#"{"latitude": 91, "longitude": 0, "radius_m": 10}"#, "near.latitude"),
                (#"{"latitude": 0, "longitude": "east", "radius_m": 10}"#, "near.longitude"),
                (#"{"latitude": 0, "longitude": 0, "radius_m": 0}"#, "near.radius_m"),
                (#"{"latitude": 0, "longitude": 0}"#, "near.radius_m"),
                (#"{"latitude": 0, "longitude": 0, "radius_m": 5, "unit": "km"}"#, "near.unit"),
                (#"[51.5, -0.12]"#, "near"),
            ] {
                let refused = try await client.signed(.post, "/api/v1/notifications", body: #"{"title": "x", "near": \#(near)}"#, as: app.serverCredential)
                #expect(refused.status == .unprocessableContent, "\(near)")
                #expect(refused.errorField == field, "\(near): \(String(buffer: refused.body))")
            }
        }
    }
}
