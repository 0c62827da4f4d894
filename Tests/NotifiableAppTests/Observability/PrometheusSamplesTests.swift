import NotifiableTesting
import Testing

@Suite struct PrometheusSamplesTests {
    @Test func readsLabelsWithBracesQuotesAndEscapes() throws {
        let samples = try PrometheusSamples(
            text: """
                # TYPE notifiable_http_requests_total counter
                notifiable_http_requests_total{route="/api/v1/device_tokens/{id}",method="PATCH",status="200"} 3
                odd{v="a \\"quoted\\" \\\\ value",w="x,y"} 1.5
                plain 7
                histogram_bucket{le="+Inf"} 2

                """)
        #expect(samples.value("notifiable_http_requests_total", ["route": "/api/v1/device_tokens/{id}", "method": "PATCH", "status": "200"]) == 3)
        #expect(samples.value("odd", ["v": #"a "quoted" \ value"#, "w": "x,y"]) == 1.5)
        #expect(samples.value("plain") == 7)
        #expect(samples.value("histogram_bucket", ["le": "+Inf"]) == 2)
        #expect(samples.value("plain", ["x": "y"]) == nil)
        #expect(throws: PrometheusSamples.Malformed.self) { try PrometheusSamples(text: "broken{a=\"1\" 2") }
    }
}
