import Testing

@testable import NotifiableApp

/// The console's multipart parser reads bodies anyone can send (the sign-in form accepts the
/// content type before anyone is signed in), so no body may crash it: each is read or refused.
@Suite struct MultipartFormTests {
    static func parse(_ text: String, boundary: String = "b") -> [String: MultipartForm.Part]? {
        MultipartForm.parse(Array(text.utf8), boundary: boundary)
    }

    @Test func aBrowsersFormIsReadWithItsFilesMediaType() throws {
        let body =
            "--b\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nHello\r\n"
            + "--b\r\nContent-Disposition: form-data; name=\"rich_content\"; filename=\"a.json\"\r\nContent-Type: application/json\r\n\r\n{\"a\":1}\r\n"
            + "--b--\r\n"
        let parts = try #require(Self.parse(body))
        #expect(parts["title"]?.text == "Hello")
        #expect(parts["title"]?.filename == nil)
        #expect(parts["rich_content"]?.text == "{\"a\":1}")
        #expect(parts["rich_content"]?.filename == "a.json")
        #expect(parts["rich_content"]?.contentType == "application/json")
    }

    @Test func aFileNameMayHoldSemicolonsAndQuotes() throws {
        let body =
            "--b\r\nContent-Disposition: form-data; name=\"rich_content\"; filename=\"offer; \\\"final\\\".png\"\r\nContent-Type: image/png\r\n\r\nPNG\r\n"
            + "--b\r\nContent-Disposition: form-data; name=plain; filename=a.txt\r\n\r\nx\r\n--b--\r\n"
        let parts = try #require(Self.parse(body))
        #expect(parts["rich_content"]?.filename == "offer; \"final\".png")
        #expect(parts["rich_content"]?.text == "PNG")
        #expect(parts["plain"]?.filename == "a.txt")
    }

    @Test(arguments: [
        "--b\r\n\r\nx\r\n--b--",  // a part with no headers: its blank line right after the delimiter
        "--b\r\n\r\n\r\n--b--",
        "--b\r\n\r\n",
        "--b\r\n",
        "--b",
        "--bx",
        "--b\r\nContent-Disposition: form-data\r\n\r\nx\r\n--b--",  // no name
        "--b\r\nContent-Disposition: form-data; name=\"a\"\r\nx",  // no blank line
        "--b\r\nContent-Disposition: form-data; name=\"a\r\n\r\nx\r\n--b--",  // an unclosed quote
        "--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx",  // no closing delimiter
        "no delimiter at all",
        "",
    ])
    func aMalformedBodyIsRefused(_ body: String) {
        #expect(Self.parse(body) == nil)
    }

    /// A well-formed body cut, shortened and stuffed with the pieces multipart is made of, at
    /// random places: each result parses or is refused, and none traps.
    @Test func noBodyCrashesIt() {
        let valid = Array(
            ("--b\r\nContent-Disposition: form-data; name=\"n\"\r\n\r\nx\r\n"
                + "--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"f\"\r\nContent-Type: text/plain\r\n\r\nyz\r\n--b--\r\n").utf8)
        let pieces = ["--b", "--b--", "\r\n", "\r\n\r\n", "\r", "\n", "-", "\"", ";", "name=\"n\""].map { Array($0.utf8) }
        var generator = SplitMix64(seed: 20)
        func below(_ bound: Int) -> Int { Int(generator.next() % UInt64(max(1, bound))) }
        var parsed = 0
        for _ in 0..<20_000 {
            var body = valid
            for _ in 0..<(1 + below(3)) {
                switch below(3) {
                case 0: body = Array(body.prefix(below(body.count + 1)))
                case 1:
                    let start = below(body.count + 1)
                    body.removeSubrange(start..<min(body.count, start + below(8)))
                default: body.insert(contentsOf: pieces[below(pieces.count)], at: below(body.count + 1))
                }
            }
            if MultipartForm.parse(body, boundary: "b") != nil { parsed += 1 }
        }
        #expect(parsed > 100, "some mutations leave a well-formed body, which is read")
    }
}

/// A small seeded generator, so a failing body can be found again.
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
