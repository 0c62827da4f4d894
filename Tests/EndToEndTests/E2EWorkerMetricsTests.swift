import Foundation
import NotifiableCore
import NotifiableSandbox
import NotifiableStore
import NotifiableTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A `notifiable work` process serves its own counters on `NOTIFIABLE_METRICS_PORT`, and
/// `LOG_FORMAT=json` makes every line it logs a JSON object. In the worker processes' suite, so
/// its process never runs beside the timing-sensitive crash test.
extension E2EWorkerProcessTests {
    static func get(_ url: URL) async -> String? {
        guard let (data, response) = try? await URLSession.shared.data(from: url),
            (response as? HTTPURLResponse)?.statusCode == 200
        else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    @Test func aWorkerProcessServesItsMetricsAndLogsJSONLines() async throws {
        let devices = 4
        let port = Int.random(in: 20_000...29_999)
        let logFile = FileManager.default.temporaryDirectory.appendingPathComponent("worker-\(port).log")
        FileManager.default.createFile(atPath: logFile.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: logFile) }
        try await withFakeAPNs { gateway in
            try await Self.withDatabase { url, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                try await service.insertDevices(appID: app.app.id, count: devices, tokenSeed: 0x3E7)
                let (notification, _) = try await NotificationStore(client: service.postgres, logger: TestDatabase.logger).create(
                    appID: app.app.id,
                    request: NotificationRequest(content: NotificationContent(text: LocalizedText(message: "m")), targeting: Targeting(all: true))
                )
                let worker = try NotifiableProcess(
                    ["work"],
                    environment: Self.workerEnvironment(
                        url,
                        [
                            "NOTIFIABLE_METRICS_PORT": "\(port)", "LOG_FORMAT": "json", "LOG_LEVEL": "info",
                        ]),
                    output: try FileHandle(forWritingTo: logFile)
                )
                do {
                    try await Self.checkMetrics(of: notification.id, devices: devices, port: port, service: service)
                } catch {
                    await worker.terminate()
                    throw error
                }
                await worker.terminate()
            }
        }
        let lines = try String(contentsOf: logFile, encoding: .utf8).split(separator: "\n")
        #expect(!lines.isEmpty)
        for line in lines {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object?["level"] is String && object?["message"] is String && object?["metadata"] is [String: Any], "\(line)")
        }
    }

    /// Waits until the worker has sent them all, then reads what its /metrics says.
    static func checkMetrics(of notification: Int64, devices: Int, port: Int, service: TestService) async throws {
        let sent = try await service.eventually(timeout: .seconds(60)) {
            try await service.deliveries(of: notification, in: "sent") == Int64(devices)
        }
        #expect(sent)
        let metricsURL = try #require(URL(string: "http://127.0.0.1:\(port)/metrics"))
        var text: String?
        for _ in 0..<100 where text == nil {
            text = await Self.get(metricsURL)
            if text == nil { try await Task.sleep(for: .milliseconds(100)) }
        }
        let samples = try PrometheusSamples(text: try #require(text))
        #expect(samples.all("notifiable_deliveries_total", matching: ["provider": "apns", "outcome": "sent"]).total == Double(devices))
        #expect(samples.value("notifiable_queue_deliveries", ["state": "available"]) == 0)
    }
}

/// Deliveries that go dead leave one warning per notification, not one per device and not none.
@Suite struct LostDeliveryLogTests {
    @Test func aNotificationWhoseDeliveriesGoDeadIsLoggedOnceWithTheReason() async throws {
        let capture = LogCapture()
        try await withTestService(workers: true, logger: capture.logger(level: .info)) { client, service in
            // No FCM settings: every Android delivery goes dead at once.
            let app = try await service.createApp()
            try await service.insertDevices(appID: app.app.id, count: 30, tokenSeed: 0x1057, userAlias: "nobody-reaches", provider: .fcm)
            let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "lost", "user_aliases": ["nobody-reaches"]}"#)
            #expect(try await Pipeline.settled(service, id))
            #expect(try await service.deliveries(of: id, in: "dead") == 30)
        }
        let warnings = capture.text.split(separator: "\n").filter { $0.contains("deliveries of a notification went dead") }
        #expect(warnings.count == 1, "\(warnings)")
        #expect(warnings.first?.hasPrefix("warning") == true)
        #expect(warnings.first?.contains("reason=") == true && warnings.first?.contains("FCM") == true, "\(warnings)")
    }
}
