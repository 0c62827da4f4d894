import Foundation
import HummingbirdTesting
import NotifiableCore
import NotifiableSandbox
import NotifiableTesting
import Testing

/// `/metrics` as Prometheus's own tools judge it: `promtool check metrics` finds nothing to
/// complain of (help text on every family, counter names, units), and the alert rules and
/// Grafana dashboard in deploy/ pass `promtool check rules` and name only metrics the service
/// exposes.
@Suite struct PrometheusConventionsTests {
    static let deploy = TestDatabase.migrationsDirectory.deletingLastPathComponent().appendingPathComponent("deploy")

    static func promtool(_ script: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await runProgram(URL(fileURLWithPath: "/bin/sh"), ["-c", script] + arguments)
    }

    @Test func theExpositionPassesPromtoolAndTheShippedRulesAndDashboardUseItsMetrics() async throws {
        let exposition = try await withFakeAPNs { gateway in
            try await withTestService(workers: true) { client, service in
                let app = try await service.createApp()
                try await service.connectAPNs(appID: app.app.id, to: gateway)
                let device = try await Pipeline.register(client, app.deviceCredential, token: Pipeline.token(0x9E))
                let id = try await Pipeline.send(client, app.serverCredential, #"{"message": "m", "device_ids": [\#(device)]}"#)
                #expect(try await Pipeline.settled(service, id))
                _ = try await client.execute(uri: "/no/such/route", method: .get)
                return String(buffer: try await client.execute(uri: "/metrics", method: .get).body)
            }
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("metrics-\(UUID().uuidString).txt")
        try Data(exposition.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }

        let checked = try await Self.promtool(#"promtool check metrics < "$0""#, [file.path])
        #expect(checked.status == 0, "promtool check metrics:\n\(checked.output)")
        #expect(checked.output.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "\(checked.output)")
        #expect(exposition.contains(#"notifiable_build_info{version="#))
        for name in ["process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds", "process_max_fds", "process_start_time_seconds"] {
            #expect(exposition.contains("\n\(name) "), "\(name)")
        }

        let rules = Self.deploy.appendingPathComponent("prometheus/notifiable-alerts.yml")
        let ruleCheck = try await Self.promtool(#"promtool check rules "$0""#, [rules.path])
        #expect(ruleCheck.status == 0, "\(ruleCheck.output)")

        // Every metric the rules and the dashboard query is one the service exposes.
        var families = Set<String>()
        for line in exposition.split(separator: "\n") where line.hasPrefix("# TYPE ") {
            families.insert(String(line.dropFirst(7).prefix { $0 != " " }))
        }
        let dashboard = try String(contentsOf: Self.deploy.appendingPathComponent("grafana/notifiable-dashboard.json"), encoding: .utf8)
        #expect((try? JSONValue.decode(Array(dashboard.utf8)))?["panels"]?.arrayValue?.isEmpty == false, "the dashboard is JSON with panels")
        let queried = try String(contentsOf: rules, encoding: .utf8) + dashboard
        let pattern = try NSRegularExpression(pattern: #"\b(notifiable|process)_[a-z_]+"#)
        let names = pattern.matches(in: queried, range: NSRange(queried.startIndex..., in: queried)).compactMap { match in
            Range(match.range, in: queried).map { String(queried[$0]) }
        }
        #expect(!names.isEmpty)
        for name in Set(names) {
            let family = ["_bucket", "_sum", "_count"].reduce(name) { name, suffix in
                name.hasSuffix(suffix) && families.contains(String(name.dropLast(suffix.count))) ? String(name.dropLast(suffix.count)) : name
            }
            #expect(families.contains(family), "deploy/ queries \(name), which /metrics does not expose")
        }
        // Every process reports the same queue gauges (they read the shared database): summed, N
        // processes would show N times the queue. Rules and panels take their max.
        let gauges = try NSRegularExpression(
            pattern: #"(\w+)(?: by \([a-z_, ]*\))? ?\((notifiable_queue_(?![a-z_]*_total\b)[a-z_]+|notifiable_apps_misconfigured)"#)
        let aggregations = gauges.matches(in: queried, range: NSRange(queried.startIndex..., in: queried)).compactMap { match in
            Range(match.range(at: 1), in: queried).map { (String(queried[$0]), Range(match.range(at: 2), in: queried).map { String(queried[$0]) } ?? "") }
        }
        #expect(!aggregations.isEmpty)
        for (aggregation, gauge) in aggregations {
            #expect(aggregation == "max", "deploy/ aggregates \(gauge) with \(aggregation), not max")
        }
    }
}
