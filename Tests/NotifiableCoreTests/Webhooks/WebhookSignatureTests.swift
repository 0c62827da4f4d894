import NotifiableCore
import Testing

@Suite struct WebhookSignatureTests {
    static let body = Array(#"{"events":[]}"#.utf8)

    /// The expected value comes from Python's hmac module, not from this code.
    @Test func signsTheTimestampAndBodyAsReceiversComputeIt() {
        #expect(
            WebhookSignature.header(secret: "whsec_test", timestamp: 1_795_334_400, body: Self.body)
                == "t=1795334400,sha256=47db51ac02fbae7ec81391cac21b60f956f88e3846d95ddaee0bae8d3398f514")
    }

    @Test func verifiesOnlyTheSameSecretBodyAndARecentTime() {
        let header = WebhookSignature.header(secret: "whsec_test", timestamp: 1_000_000, body: Self.body)
        #expect(WebhookSignature.verify(header: header, secret: "whsec_test", body: Self.body, now: 1_000_100))
        #expect(!WebhookSignature.verify(header: header, secret: "whsec_other", body: Self.body, now: 1_000_100))
        #expect(!WebhookSignature.verify(header: header, secret: "whsec_test", body: Array(#"{"events":[1]}"#.utf8), now: 1_000_100))
        // A replay long after: refused.
        #expect(!WebhookSignature.verify(header: header, secret: "whsec_test", body: Self.body, now: 1_000_301))
        // The timestamp is signed: moving it breaks the signature.
        let moved = header.replacingOccurrences(of: "t=1000000", with: "t=1000200")
        #expect(!WebhookSignature.verify(header: moved, secret: "whsec_test", body: Self.body, now: 1_000_200))
        #expect(!WebhookSignature.verify(header: "garbage", secret: "whsec_test", body: Self.body, now: 1_000_000))
    }

    @Test func secretsAreNewEachTime() {
        let secret = WebhookSignature.generateSecret()
        #expect(secret.hasPrefix("whsec_") && secret.count == 6 + 64)
        #expect(secret != WebhookSignature.generateSecret())
    }

    @Test(arguments: [
        ("https://example.com/hooks", true), ("http://127.0.0.1:8080/h?x=1", true), ("HTTPS://EXAMPLE.COM", true),
        ("ftp://example.com/h", false), ("https://user:pw@example.com/h", false), ("https://user@example.com/h", false),
        ("/relative", false), ("https://", false), ("https://example.com/h#frag", false), ("javascript:alert(1)", false),
    ])
    func acceptsOnlyHTTPURLsWithoutCredentials(url: String, accepted: Bool) {
        #expect(((try? WebhookSubscription(url: url, eventNames: nil)) != nil) == accepted, "\(url)")
    }

    @Test func namesTheEventThatIsUnknown() {
        #expect(
            throws: ValidationError(
                code: "invalid_event", message: #""bounced" is not an event type; expected one of sent, failed, invalidated, delivered, opened, dead."#,
                field: "events[1]")
        ) {
            try WebhookSubscription(url: "https://example.com", eventNames: ["sent", "bounced"])
        }
        #expect((try? WebhookSubscription(url: "https://example.com", eventNames: nil))?.events == WebhookEventType.allCases)
    }
}
