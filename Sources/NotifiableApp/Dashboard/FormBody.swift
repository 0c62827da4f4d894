import Foundation
import Hummingbird

/// A form as the dashboard's forms send it: `application/x-www-form-urlencoded`, or
/// `multipart/form-data` where a form uploads a file (a `.p8`, a service account, rich content),
/// whose text then stands under the file field's name too. A field sent several times (a
/// multiple select) keeps its values joined by commas.
struct FormBody {
    static let limit = 64 * 1024

    var fields: [String: String]
    /// The files uploaded, by field name: their bytes and media type.
    var files: [String: MultipartForm.Part] = [:]

    static func read(_ request: inout Request, limit: Int = Self.limit) async throws -> FormBody {
        let buffer = try await request.collectBody(upTo: limit)
        if let boundary = MultipartForm.boundary(of: request.headers[.contentType]) {
            guard let parts = MultipartForm.parse(Array(buffer.readableBytesView), boundary: boundary) else {
                throw ConsoleRefusal.invalid("The form's upload could not be read; send it again from the page.")
            }
            return FormBody(fields: parts.mapValues(\.text), files: parts.filter { $0.value.filename != nil })
        }
        var fields: [String: String] = [:]
        for pair in String(buffer: buffer).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? "" }
            guard let name = parts.first, !name.isEmpty else { continue }
            let value = parts.count > 1 ? parts[1] : ""
            fields[name] = fields[name].map { "\($0),\(value)" } ?? value
        }
        return FormBody(fields: fields)
    }
}
