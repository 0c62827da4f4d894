import NotifiableCore
import Testing

@Suite struct RenderedPayloadsTests {
    struct RenderFailed: Error {}

    @Test func eachKeyIsRenderedOnce() throws {
        let rendered = RenderedPayloads()
        var renders = 0
        let french = RenderedPayloadKey(provider: .apns, language: "fr", country: nil)
        let english = RenderedPayloadKey(provider: .apns, language: "en", country: "gb")
        for key in [french, english, french, english, french] {
            let payload = rendered.payload(for: key) { () -> [UInt8] in
                renders += 1
                return Array((key.language ?? "").utf8)
            }
            #expect(payload == Array((key.language ?? "").utf8))
        }
        #expect(renders == 2)
        #expect(rendered.count == 2)
        // The same language for another gateway, or another time to live, is another payload.
        _ = rendered.payload(for: RenderedPayloadKey(provider: .fcm, language: "fr", country: nil)) { [1] }
        _ = rendered.payload(for: RenderedPayloadKey(provider: .fcm, language: "fr", country: nil, ttlSeconds: 60)) { [2] }
        #expect(rendered.count == 4)
    }

    @Test func aFailedRenderIsNotKept() throws {
        let rendered = RenderedPayloads()
        let key = RenderedPayloadKey(provider: .fcm, language: nil, country: nil)
        #expect(throws: RenderFailed.self) { try rendered.payload(for: key) { () throws(RenderFailed) -> [UInt8] in throw RenderFailed() } }
        #expect(rendered.count == 0)
        #expect(rendered.payload(for: key) { [7] } == [7])
    }
}
