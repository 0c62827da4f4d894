import Crypto
import Foundation
import Testing

@testable import NotifiableSandbox

/// The rules without sockets, where time can be chosen.
@Suite("Fake APNs rules")
struct SandboxAPNsRulesTests {
    func request(jwt: String, token: String = deviceToken()) -> SandboxAPNsRequest {
        SandboxAPNsRequest(
            method: "POST", path: "/3/device/\(token)",
            headers: [("authorization", "bearer \(jwt)"), ("apns-topic", topic)],
            body: Array(alertPayload.utf8)
        )
    }

    func reason(_ decision: SandboxAPNsDecision) -> String? {
        guard case .answer(let reply, _) = decision else { return nil }
        return reply.reason
    }

    @Test("A provider token verified once still expires an hour after its iat")
    func cachedTokenExpires() throws {
        let rules = SandboxAPNsRules()
        let key = ProviderKey()
        rules.trust(teamID: key.teamID, keyID: key.keyID, publicKey: key.privateKey.publicKey)
        let issuedAt = Date(timeIntervalSince1970: 1_700_000_000)
        let jwt = try key.token(issuedAt: issuedAt)

        let first = rules.decide(request(jwt: jwt), now: issuedAt.addingTimeInterval(10))
        #expect(reason(first) == nil)
        #expect(rules.state.withLock { $0.verifiedTokens[jwt] } == 1_700_000_000)
        #expect(reason(rules.decide(request(jwt: jwt), now: issuedAt.addingTimeInterval(3600))) == nil)
        #expect(reason(rules.decide(request(jwt: jwt), now: issuedAt.addingTimeInterval(3601))) == "ExpiredProviderToken")
        #expect(rules.state.withLock { $0.requestCount } == 3)
        #expect(rules.state.withLock { $0.acceptedCount } == 2)
    }

    @Test("Trusting again forgets verified tokens, and distrusting refuses them")
    func distrustForgetsCache() throws {
        let rules = SandboxAPNsRules()
        let key = ProviderKey()
        rules.trust(teamID: key.teamID, keyID: key.keyID, publicKey: key.privateKey.publicKey)
        let jwt = try key.token()
        #expect(reason(rules.decide(request(jwt: jwt))) == nil)
        rules.distrustAll()
        #expect(reason(rules.decide(request(jwt: jwt))) == "InvalidProviderToken")
    }

    @Test("Error bodies are APNs's JSON; the timestamp is in milliseconds")
    func replyBodies() {
        #expect(SandboxAPNsReply(status: 400, apnsID: "x", reason: "BadPriority").body == #"{"reason":"BadPriority"}"#)
        let gone = SandboxAPNsReply(
            status: 410, apnsID: "x", reason: "Unregistered", timestamp: Date(timeIntervalSince1970: 1.5)
        )
        #expect(gone.body == #"{"reason":"Unregistered","timestamp":1500}"#)
        #expect(SandboxAPNsReply(status: 200, apnsID: "x").body == nil)
    }

    @Test("Bearer tokens and base64url")
    func parsing() {
        #expect(SandboxAPNsRules.bearerToken("bearer abc") == "abc")
        #expect(SandboxAPNsRules.bearerToken("Bearer abc") == "abc")
        #expect(SandboxAPNsRules.bearerToken("bearer ") == nil)
        #expect(SandboxAPNsRules.bearerToken("BEARER  abc ") == "abc")
        #expect(SandboxAPNsRules.bearerToken("bearerabc") == nil)
        #expect(SandboxAPNsRules.bearerToken("bear") == nil)
        #expect(SandboxAPNsRules.bearerToken("Basic abc") == nil)
        #expect(SandboxAPNsRules.bearerToken(nil) == nil)
        #expect(SandboxAPNsRules.base64URLDecode("_-8") == Data([0xFF, 0xEF]))
        #expect(SandboxAPNsRules.base64URLDecode("YQ==") == nil)
        #expect(SandboxAPNsRules.base64URLDecode("Y") == nil)
    }

    @Test("SplitMix64 gives the reference sequence")
    func splitMix() {
        var generator = SplitMix64(seed: 0)
        #expect(generator.next() == 0xE220_A839_7B1D_CDAF)
        #expect(generator.next() == 0x6E78_9E6A_A1B9_65F4)
        var unit = SplitMix64(seed: 99)
        for _ in 0..<1000 {
            let value = unit.nextUnit()
            #expect(value >= 0 && value < 1)
        }
    }
}

@Suite("apns-id values")
struct APNsIDTests {
    @Test("New ids are distinct version-4 UUIDs that Foundation parses")
    func randomIDs() {
        let ids = (0..<500).map { _ in APNsID.random() }
        #expect(Set(ids).count == ids.count)
        for id in ids {
            #expect(UUID(uuidString: id)?.uuidString == id)
            #expect(APNsID.isValid(id))
            #expect(Array(id.utf8)[14] == UInt8(ascii: "4"))
        }
    }

    @Test("Only the canonical text form is valid")
    func validation() {
        #expect(APNsID.isValid("123e4567-e89b-12d3-a456-426614174000"))
        #expect(APNsID.isValid("123E4567-E89B-12D3-A456-426614174000"))
        #expect(!APNsID.isValid("123e4567e89b12d3a456426614174000"))
        #expect(!APNsID.isValid("123e4567-e89b-12d3-a456-42661417400g"))
        #expect(!APNsID.isValid("{123e4567-e89b-12d3-a456-426614174000}"))
        #expect(!APNsID.isValid(""))
    }
}

/// The fake APNs takes a Live Activity push as APNs documents it (docs/compatibility.md §12): the
/// `liveactivity` push type with the `.push-type.liveactivity` topic, `aps.timestamp` and `aps.event`.
@Suite("Fake APNs rules: Live Activities")
struct SandboxAPNsLiveActivityRulesTests {
    func decide(pushType: String, topic: String, payload: String) throws -> String? {
        let rules = SandboxAPNsRules()
        let key = ProviderKey()
        rules.trust(teamID: key.teamID, keyID: key.keyID, publicKey: key.privateKey.publicKey)
        rules.allowTopics([NotifiableSandboxTests.topic])
        let request = SandboxAPNsRequest(
            method: "POST", path: "/3/device/\(deviceToken())",
            headers: [("authorization", "bearer \(try key.token())"), ("apns-topic", topic), ("apns-push-type", pushType)],
            body: Array(payload.utf8)
        )
        guard case .answer(let reply, _) = rules.decide(request) else { return "no answer" }
        return reply.reason
    }

    static let update = #"{"aps":{"event":"update","timestamp":1795132800,"content-state":{"score":"2-1"}},"n_id":1}"#

    @Test("An update with its timestamp and event to the suffixed topic is taken")
    func takesAnUpdate() throws {
        #expect(try decide(pushType: "liveactivity", topic: NotifiableSandboxTests.topic + ".push-type.liveactivity", payload: Self.update) == nil)
    }

    @Test("The bundle id alone, or the suffix on another push type, is not the activity's topic")
    func topicAndPushTypeGoTogether() throws {
        #expect(try decide(pushType: "liveactivity", topic: NotifiableSandboxTests.topic, payload: Self.update) == "DeviceTokenNotForTopic")
        #expect(
            try decide(pushType: "alert", topic: NotifiableSandboxTests.topic + ".push-type.liveactivity", payload: Self.update)
                == "DeviceTokenNotForTopic")
        #expect(try decide(pushType: "liveactivity", topic: "com.other.push-type.liveactivity", payload: Self.update) == "TopicDisallowed")
    }

    @Test("A push without timestamp or event, or a start without attributes and alert, is refused")
    func payloadShapes() throws {
        let topic = NotifiableSandboxTests.topic + ".push-type.liveactivity"
        for payload in [
            #"{"aps":{"event":"update","content-state":{}}}"#,
            #"{"aps":{"event":"update","timestamp":"1795132800","content-state":{}}}"#,
            #"{"aps":{"timestamp":1795132800,"content-state":{}}}"#,
            #"{"aps":{"event":"pause","timestamp":1795132800}}"#,
            #"{"aps":{"event":"update","timestamp":1795132800,"content-state":[1]}}"#,
            #"{"aps":{"event":"start","timestamp":1795132800,"content-state":{},"attributes-type":"Match"}}"#,
            #"{"n_id":1}"#,
        ] {
            #expect(try decide(pushType: "liveactivity", topic: topic, payload: payload) == "BadPayload", "\(payload)")
        }
        let start =
            #"{"aps":{"event":"start","timestamp":1795132800,"content-state":{},"attributes-type":"Match","attributes":{"home":"A"},"alert":{"title":"t"}}}"#
        #expect(try decide(pushType: "liveactivity", topic: topic, payload: start) == nil)
    }
}
