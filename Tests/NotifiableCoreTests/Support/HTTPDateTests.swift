import NotifiableCore
import Testing

@Suite struct HTTPDateTests {
    @Test func parsesKnownDate() {
        #expect(HTTPDate.parse("Sun, 22 Nov 2026 06:01:44 GMT") == 1_795_327_304)
    }

    @Test func formatsKnownDate() {
        #expect(HTTPDate.format(1_795_327_304) == "Sun, 22 Nov 2026 06:01:44 GMT")
    }

    @Test func formatsEpoch() {
        #expect(HTTPDate.format(0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.parse("Thu, 01 Jan 1970 00:00:00 GMT") == 0)
    }

    @Test(arguments: [
        "Sun, 22 Nov 2026 06:01:44 GMT",
        "Thu, 01 Jan 1970 00:00:00 GMT",
        "Thu, 29 Feb 2024 12:00:00 GMT",
        "Fri, 31 Dec 1999 23:59:59 GMT",
        "Sat, 01 Jan 2000 00:00:00 GMT",
        "Mon, 01 Mar 2100 00:00:00 GMT",
    ])
    func roundTrips(_ text: String) throws {
        let seconds = try #require(HTTPDate.parse(text))
        #expect(HTTPDate.format(seconds) == text)
    }

    @Test func daysTheMonthDoesNotHaveAreRefused() {
        #expect(HTTPDate.parse("Tue, 31 Feb 2026 06:01:44 GMT") == nil)
        #expect(HTTPDate.parse("Sat, 29 Feb 2025 06:01:44 GMT") == nil)
        #expect(HTTPDate.parse("Mon, 31 Nov 2026 06:01:44 GMT") == nil)
        #expect(HTTPDate.parse("Thu, 29 Feb 2024 06:01:44 GMT") != nil)
    }

    @Test func leapDay() {
        #expect(HTTPDate.parse("Thu, 29 Feb 2024 12:00:00 GMT") == 1_709_208_000)
        #expect(HTTPDate.format(1_709_208_000) == "Thu, 29 Feb 2024 12:00:00 GMT")
    }

    @Test func formatParseRoundTripsOverManySeconds() {
        for seconds in stride(from: Int64(0), through: 4_102_444_800, by: 7_777_777) {
            #expect(HTTPDate.parse(HTTPDate.format(seconds)) == seconds)
        }
    }

    @Test(arguments: [
        "2026-11-22T06:01:44Z",
        "Sun, 22 Nov 2026 06:01:44",
        "Sun, 22 Nov 2026 06:01:44 PST",
        "Sun, 22 Foo 2026 06:01:44 GMT",
        "Sun, 22 nov 2026 06:01:44 GMT",
        "Sun, 22 Nov 2026 25:01:44 GMT",
        "Sun, 22 Nov 2026 06:60:44 GMT",
        "Sun, 22 Nov 2026 06:01 GMT",
        "Sun, 32 Nov 2026 06:01:44 GMT",
        "Sun, 00 Nov 2026 06:01:44 GMT",
        "Sun 22 Nov 2026 06:01:44 GMT",
        "Sun, 22 Nov 1969 06:01:44 GMT",
        "",
    ])
    func rejectsMalformed(_ text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }
}
