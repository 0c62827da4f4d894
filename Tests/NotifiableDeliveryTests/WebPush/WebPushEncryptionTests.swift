import Crypto
import Foundation
import NotifiableCore
import Testing

@testable import NotifiableDelivery

/// RFC 8291 §5's worked example, byte for byte: given the same sender key and salt, the message
/// the service builds is the RFC's, and it opens to the RFC's plaintext.
struct WebPushEncryptionTests {
    static func bytes(_ text: String) -> Data { Base64URL.decode(Substring(text))! }

    static let authSecret = bytes("BTBZMqHH6r4Tts7J_aSIgg")
    static let browserPublic = bytes("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4")
    static let senderPrivate = bytes("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw")
    static let body = bytes(
        "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
    )

    @Test func theRFCsExampleIsReproducedExactly() throws {
        let serverKey = try P256.KeyAgreement.PrivateKey(rawRepresentation: Self.senderPrivate)
        let encrypted = try WebPushEncryption.encrypt(
            Array("When I grow up, I want to be a watermelon".utf8), browserKey: Self.browserPublic, authSecret: Self.authSecret,
            serverKey: serverKey, salt: Self.body.prefix(16))
        #expect(Data(encrypted) == Self.body)
        // 16 salt + 4 record size + 1 key length + 65 key + 41 plaintext + 1 delimiter + 16 tag.
        #expect(encrypted.count == 144)
    }

    @Test func aFreshMessageUsesAFreshKeyAndSalt() throws {
        let plaintext = Array("same".utf8)
        let first = try WebPushEncryption.encrypt(plaintext, browserKey: Self.browserPublic, authSecret: Self.authSecret)
        let second = try WebPushEncryption.encrypt(plaintext, browserKey: Self.browserPublic, authSecret: Self.authSecret)
        #expect(first.prefix(16) != second.prefix(16))
        #expect(first[21..<86] != second[21..<86])
    }

    @Test func plaintextBeyondOneRecordIsRefusedAndBadKeysAreNamed() {
        #expect(throws: WebPushEncryption.Failure.tooLarge(size: 3994)) {
            try WebPushEncryption.encrypt([UInt8](repeating: 1, count: 3994), browserKey: Self.browserPublic, authSecret: Self.authSecret)
        }
        #expect(throws: Never.self) {
            let body = try WebPushEncryption.encrypt([UInt8](repeating: 1, count: 3993), browserKey: Self.browserPublic, authSecret: Self.authSecret)
            #expect(body.count == 4096)
        }
        #expect(throws: WebPushEncryption.Failure.invalidKeys) {
            try WebPushEncryption.encrypt([1], browserKey: Data([4] + [UInt8](repeating: 0, count: 64)), authSecret: Self.authSecret)
        }
    }
}

struct WebPushMessageTests {
    @Test func topicsAreShortURLSafeAndStablePerCollapseID() {
        #expect(WebPushMessage.topic(for: "score-update") == "score-update")
        let long = WebPushMessage.topic(for: "flight/BA 117 boarding")
        #expect(long.count == 32)
        #expect(long == WebPushMessage.topic(for: "flight/BA 117 boarding"))
        #expect(long != WebPushMessage.topic(for: "flight/BA 118 boarding"))
        #expect(long.utf8.allSatisfy { $0 == 45 || $0 == 95 || (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) })
        #expect(WebPushMessage.topic(for: String(repeating: "a", count: 33)).count == 32)
    }

    @Test func urgencyIsHighOnlyForWhatMustWakeTheDevice() {
        var content = NotificationContent(text: LocalizedText(title: "Hi", message: "There"))
        #expect(WebPushMessage.urgency(of: content) == "normal", "the default priority, an ordinary message")
        content.priority = .normal
        #expect(WebPushMessage.urgency(of: content) == "low")
        content.interruptionLevel = .timeSensitive
        #expect(WebPushMessage.urgency(of: content) == "high")
    }

    @Test func theAudienceIsTheEndpointsOrigin() {
        #expect(WebPushVAPID.audience(of: URL(string: "https://fcm.googleapis.com/fcm/send/abc:def")!) == "https://fcm.googleapis.com")
        #expect(WebPushVAPID.audience(of: URL(string: "https://127.0.0.1:8443/push/1")!) == "https://127.0.0.1:8443")
        #expect(WebPushVAPID.audience(of: URL(string: "https://web.push.apple.com:443/Q")!) == "https://web.push.apple.com")
    }

    @Test func answersAreClassifiedAsPushServicesMeanThem() {
        let retry = Duration.seconds(7)
        #expect(WebPushResponseClassifier.classify(status: 201, body: "", location: "https://x/m/1", retryAfter: nil) == .sent(gatewayID: "https://x/m/1"))
        for status in [404, 410] {
            guard case .tokenDead = WebPushResponseClassifier.classify(status: status, body: "", retryAfter: nil) else {
                Issue.record("\(status) must invalidate the subscription")
                continue
            }
        }
        guard case .failed(let reason) = WebPushResponseClassifier.classify(status: 413, body: "", retryAfter: nil) else {
            Issue.record("413 fails the push")
            return
        }
        #expect(reason.hasPrefix("payload_too_large"))
        for status in [401, 403] {
            guard case .misconfigured = WebPushResponseClassifier.classify(status: status, body: "", retryAfter: nil) else {
                Issue.record("\(status) is a VAPID refusal")
                continue
            }
        }
        // A bad request is this message's problem, not the key's.
        #expect(WebPushResponseClassifier.classify(status: 400, body: "bad Topic", retryAfter: nil) == .failed(reason: "push_service_400: bad Topic"))
        for status in [429, 500, 503] {
            #expect(
                WebPushResponseClassifier.classify(status: status, body: "", retryAfter: retry) == .retry(reason: "push_service_\(status)", retryAfter: retry))
        }
    }
}

struct WebPushHostsTests {
    @Test func onlyTheBrowsersPushServicesAreAllowedByDefault() {
        let hosts = WebPushHosts.browsers
        for host in ["fcm.googleapis.com", "updates.push.services.mozilla.com", "web.push.apple.com", "wns2-db5p.notify.windows.com", "FCM.googleapis.com"] {
            #expect(hosts.allows(host: host), "\(host)")
        }
        for host in ["push.apple.com.evil.com", "evilpush.apple.com", "notify.windows.com", "googleapis.com", "127.0.0.1", "android.googleapis.com"] {
            #expect(!hosts.allows(host: host), "\(host)")
        }
    }

    @Test func theListIsReadFromTheEnvironmentsForm() {
        #expect(WebPushHosts(list: "push.example.com, *.push.example.org")?.patterns == ["push.example.com", "*.push.example.org"])
        #expect(WebPushHosts(list: "https://push.example.com") == nil)
        #expect(WebPushHosts(list: "push.example.com:8443") == nil, "hosts are matched without a port")
        #expect(WebPushHosts(list: " , ") == nil)
    }
}
