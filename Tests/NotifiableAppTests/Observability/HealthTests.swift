import HummingbirdTesting
import NotifiableTesting
import Testing

@Suite struct HealthTests {
    @Test func liveAndReadyAnswerWithoutAuthentication() async throws {
        try await withTestService { client, _ in
            let live = try await client.execute(uri: "/health/live", method: .get, headers: [:], body: nil)
            #expect(live.status == .ok)
            let ready = try await client.execute(uri: "/health/ready", method: .get, headers: [:], body: nil)
            #expect(ready.status == .ok)
            #expect(ready.json["status"]?.stringValue == "ok")
        }
    }
}
