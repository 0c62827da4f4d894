import Foundation

/// A `multipart/form-data` body (RFC 7578), as a browser sends a form with a file field: each
/// part's name and its bytes, the file name where it is a file. Only what the console's upload
/// forms need: no nested multiparts, no transfer encodings.
enum MultipartForm {
    struct Part: Equatable {
        let filename: String?
        /// The part's own `Content-Type` (a file's media type, as the browser guessed it).
        var contentType: String? = nil
        let data: [UInt8]
        var text: String { String(decoding: data, as: UTF8.self) }
    }

    /// The boundary a `Content-Type: multipart/form-data; boundary=…` names.
    static func boundary(of contentType: String?) -> String? {
        guard let contentType, contentType.lowercased().hasPrefix("multipart/form-data") else { return nil }
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if pair.count == 2, pair[0].lowercased() == "boundary" {
                let value = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                return (1...70).contains(value.count) ? value : nil
            }
        }
        return nil
    }

    /// The parts by name; nil when the body is not a well-formed multipart body.
    static func parse(_ body: [UInt8], boundary: String) -> [String: Part]? {
        let delimiter = Array("--\(boundary)".utf8)
        var parts: [String: Part] = [:]
        var sections = split(body, by: delimiter)
        guard sections.count >= 2 else { return nil }
        sections.removeFirst()  // the preamble
        for section in sections {
            if section.starts(with: Array("--".utf8)) { return parts }  // the closing delimiter
            // A slice keeps the body's indices: the headers start two bytes into it, not at index 2.
            // A part with no headers at all (its blank line right after the delimiter) has no name: refused.
            let headerStart = section.startIndex + 2
            guard section.starts(with: [13, 10]), let headerEnd = firstIndex(of: [13, 10, 13, 10], in: section), headerEnd >= headerStart else {
                return nil
            }
            let headers = String(decoding: section[headerStart..<headerEnd], as: UTF8.self)
            let data = Array(section[(headerEnd + 4)...])
            guard let disposition = headers.split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("content-disposition:") }),
                let name = parameter("name", in: String(disposition))
            else { return nil }
            let contentType = headers.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-type:") }
                .map { $0.dropFirst("content-type:".count).trimmingCharacters(in: .whitespaces) }
            parts[name] = Part(filename: parameter("filename", in: String(disposition)), contentType: contentType, data: data)
        }
        return nil
    }

    /// A header's parameter (`name="title"`, `filename="a; b.png"` or `filename=a.png`), its quotes
    /// and their escapes undone; a `;` inside quotes is part of the value.
    private static func parameter(_ name: String, in header: String) -> String? {
        for item in outsideQuotes(header, splitBy: ";").dropFirst() {
            let pair = item.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2, pair[0].lowercased() == name else { continue }
            let value = pair[1]
            guard value.hasPrefix("\"") else { return value.isEmpty ? nil : value }
            guard value.count >= 2, value.hasSuffix("\"") else { return nil }
            var unquoted = ""
            var escaped = false
            for character in value.dropFirst().dropLast() {
                if !escaped, character == "\\" {
                    escaped = true
                } else {
                    unquoted.append(character)
                    escaped = false
                }
            }
            return unquoted
        }
        return nil
    }

    private static func outsideQuotes(_ text: String, splitBy separator: Character) -> [Substring] {
        var items: [Substring] = []
        var start = text.startIndex
        var quoted = false
        var escaped = false
        for index in text.indices {
            let character = text[index]
            if escaped {
                escaped = false
            } else if quoted, character == "\\" {
                escaped = true
            } else if character == "\"" {
                quoted.toggle()
            } else if character == separator, !quoted {
                items.append(text[start..<index])
                start = text.index(after: index)
            }
        }
        items.append(text[start...])
        return items
    }

    private static func split(_ bytes: [UInt8], by delimiter: [UInt8]) -> [ArraySlice<UInt8>] {
        var sections: [ArraySlice<UInt8>] = []
        var start = 0
        var index = 0
        while index + delimiter.count <= bytes.count {
            if bytes[index] == delimiter[0], bytes[index..<(index + delimiter.count)].elementsEqual(delimiter) {
                // A delimiter follows a CRLF, which belongs to it, except at the very start.
                let end = index >= 2 && bytes[index - 2] == 13 && bytes[index - 1] == 10 ? index - 2 : index
                sections.append(bytes[start..<max(start, end)])
                index += delimiter.count
                start = index
            } else {
                index += 1
            }
        }
        sections.append(bytes[start...])
        return sections
    }

    private static func firstIndex(of pattern: [UInt8], in bytes: ArraySlice<UInt8>) -> Int? {
        guard bytes.count >= pattern.count else { return nil }
        var index = bytes.startIndex
        while index + pattern.count <= bytes.endIndex {
            if bytes[index..<(index + pattern.count)].elementsEqual(pattern) { return index }
            index += 1
        }
        return nil
    }
}
