import NotifiableCore
import Testing

@Suite struct ByteRangeTests {
    @Test func rangesAgainstTenBytes() {
        let cases: [(String?, ByteRange)] = [
            (nil, .none), ("bytes=0-0", .range(0...0)), ("bytes=2-5", .range(2...5)), ("bytes=8-", .range(8...9)),
            ("bytes=5-100", .range(5...9)), ("bytes=-3", .range(7...9)), ("bytes=-30", .range(0...9)),
            ("bytes=10-", .unsatisfiable), ("bytes=-0", .unsatisfiable), ("bytes=5-2", .none), ("bytes=0-1,4-5", .none),
            ("items=0-1", .none), ("bytes=a-b", .none), ("bytes=-", .none), ("bytes=99999999999999999999-", .none),
        ]
        for (header, expected) in cases {
            #expect(ByteRange.parse(header, size: 10) == expected, "\(header ?? "nil")")
        }
        #expect(ByteRange.parse("bytes=0-", size: 0) == .unsatisfiable)
    }
}
