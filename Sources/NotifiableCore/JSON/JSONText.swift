/// JSON string literals written by hand, where an encoder per value would cost too much or would
/// not keep the member order: JWT claims, log lines, the fake gateways' answers, and the rows of
/// a registration batch.
public enum JSONText {
    /// `text` as a JSON string literal, quotes included.
    public static func quoted(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count + 2)
        appendQuoted(text, to: &out)
        return out
    }

    /// Appends `text` as a JSON string literal. Control characters, DEL and the two separators
    /// JavaScript reads as line ends are escaped, so the text is safe in any JSON reader and on one
    /// log line; `/` is left alone, as Google writes URLs.
    public static func appendQuoted(_ text: String, to out: inout String) {
        out += "\""
        // Most text (tokens, titles, ids) needs no escape: copied whole rather than scalar by scalar.
        // 0xE2 leads U+2028 and U+2029 (and other characters, which the slow path copies as they are).
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x22 && $0 != 0x5C && $0 != 0x7F && $0 != 0xE2 }) {
            out += text
            out += "\""
            return
        }
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F || scalar.value == 0x2028 || scalar.value == 0x2029:
                let digits = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - digits.count) + digits
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}
