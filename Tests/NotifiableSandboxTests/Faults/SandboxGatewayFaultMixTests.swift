import Foundation
import NotifiableSandbox
import Testing

@Suite("Fake gateways: fault mixes")
struct SandboxGatewayFaultMixTests {
    @Test(
        "Fault names read back as written",
        arguments: [
            "unavailable", "unavailable:0", "unavailable:7", "reset-stream", "drop-connection", "unregistered", "timeout",
        ])
    func names(_ name: String) throws {
        let fault = try #require(SandboxGatewayFault(name: name))
        #expect(fault.description == name)
    }

    @Test(
        "Unknown names, bad shares and shares over 1 are refused with a message",
        arguments: [
            ["crash=0.1"], ["unavailable"], ["unavailable=abc"], ["unavailable:-1=0.1"], ["timeout=-0.1"], ["timeout=1.5"],
            ["unavailable=0.6", "reset-stream=0.5"],
        ])
    func refusals(_ entries: [String]) {
        #expect(throws: SandboxGatewayError.self) { try SandboxGatewayFaultMix.parse(entries, seed: 1) }
    }

    @Test("Each fault takes its share of requests, the rest pass, within a point over 40,000 draws")
    func shares() throws {
        let mix = try SandboxGatewayFaultMix.parse(
            ["unavailable=0.1", "unavailable:1=0.1", "reset-stream=0.05", "unregistered=0.02", "timeout=0.01"], seed: 7
        )
        var counts: [String: Int] = [:]
        let draws = 40_000
        for index in 0..<draws {
            let fault = mix.fault(token: "token-\(index % 10_000)", earlierRequests: index / 10_000)
            counts[fault?.description ?? "pass", default: 0] += 1
        }
        let expected = ["unavailable": 0.1, "unavailable:1": 0.1, "reset-stream": 0.05, "unregistered": 0.02, "timeout": 0.01, "pass": 0.72]
        for (name, share) in expected {
            let measured = Double(counts[name, default: 0]) / Double(draws)
            #expect(abs(measured - share) < 0.01, "\(name): \(measured) for \(share)")
        }
        #expect(Set(counts.keys) == Set(expected.keys))
    }

    @Test("A token's n-th request gets the same draw for the same seed, whatever else happened; another seed differs")
    func determinism() throws {
        let entries = ["unavailable=0.3", "timeout=0.2"]
        let first = try SandboxGatewayFaultMix.parse(entries, seed: 42)
        let again = try SandboxGatewayFaultMix.parse(entries, seed: 42)
        let other = try SandboxGatewayFaultMix.parse(entries, seed: 43)
        let tokens = (0..<500).map { "tok\($0)" }
        let draws = tokens.flatMap { token in (0..<4).map { first.fault(token: token, earlierRequests: $0) } }
        // Drawn by another instance, in reverse order: neither the instance nor the order of arrival matters.
        let reversed = tokens.reversed().flatMap { token in (0..<4).reversed().map { again.fault(token: token, earlierRequests: $0) } }
        #expect(Array(reversed.reversed()) == draws)
        let otherDraws = tokens.flatMap { token in (0..<4).map { other.fault(token: token, earlierRequests: $0) } }
        #expect(otherDraws != draws)
        // A token's successive requests are drawn independently: a failed attempt is not doomed to fail again.
        let retriedAfterFailure = tokens.filter { first.fault(token: $0, earlierRequests: 0) != nil }
        #expect(retriedAfterFailure.contains { first.fault(token: $0, earlierRequests: 1) == nil })
    }

    @Test("A mix with no shares, or shares of 0, fails nothing; a share of 1 fails everything")
    func extremes() throws {
        let none = try SandboxGatewayFaultMix([], seed: 1)
        let zero = try SandboxGatewayFaultMix.parse(["timeout=0"], seed: 1)
        let all = try SandboxGatewayFaultMix.parse(["unregistered=1"], seed: 1)
        for index in 0..<1000 {
            #expect(none.fault(token: "t\(index)", earlierRequests: 0) == nil)
            #expect(zero.fault(token: "t\(index)", earlierRequests: 0) == nil)
            #expect(all.fault(token: "t\(index)", earlierRequests: index) == .unregistered)
        }
    }
}
