import Foundation
import HTTPTypes
import Hummingbird
import NotifiableCore
import NotifiableStore

/// A rich notification's content: uploaded once by the app's backend, fetched by the devices
/// the notification was sent to, with ETag, caching and byte ranges.
struct RichContentController {
    let contents: NotificationContentStore
    let devices: DeviceStore
    let verifiedAliases: VerifiedAliasGate

    /// An upload counts as a send: it is the second half of sending a rich notification.
    func addRoutes(to group: RouterGroup<NotifiableRequestContext>, limiter: RateLimiter? = nil) {
        group.limited(.sends, by: limiter).put("notifications/:id/content", use: upload)
        group.get("notifications/:id/content", use: fetch)
    }

    struct SummaryJSON: Encodable, Sendable {
        let notificationID: Int64
        let mediaType: String
        let size: Int
        let etag: String

        enum CodingKeys: String, CodingKey {
            case size, etag
            case notificationID = "notification_id"
            case mediaType = "media_type"
        }
    }

    /// The body is the content itself, its media type the Content-Type.
    @Sendable func upload(_ request: Request, context: NotifiableRequestContext) async throws -> JSONResponse<SummaryJSON> {
        let caller = try context.requireServerCaller()
        let id = try context.pathID("id", what: "notification")
        let mediaType = try Self.mediaType(request.headers[.contentType])
        var request = request
        let body = try await request.collectBody(upTo: NotifiableRequestContext.maxRichContentBytes)
        let data = Array(body.readableBytesView)
        guard !data.isEmpty else {
            throw APIError(status: .unprocessableContent, code: "empty_content", message: "Send the content as the request body; it is empty.")
        }
        guard Self.isReadable(data, as: mediaType) else {
            throw APIError(status: .unprocessableContent, code: "invalid_json", message: "The content is sent as application/json but is not valid JSON.")
        }
        switch try await contents.attach(notificationID: id, appID: caller.appID, mediaType: mediaType, data: data) {
        case .attached(let summary):
            return JSONResponse(SummaryJSON(notificationID: id, mediaType: summary.mediaType, size: summary.size, etag: Self.etag(summary)), status: .created)
        case .noSuchNotification:
            throw APIError.notFound("This app has no notification \(id).")
        case .notRich:
            throw APIError(
                status: .conflict, code: "not_rich",
                message: "Notification \(id) was not sent with \"rich\": true, so its devices do not expect content; send a new one with it."
            )
        case .alreadyAttached:
            throw APIError(
                status: .conflict, code: "content_already_set",
                message: "Notification \(id) has its content already; content is stored once, so devices may cache it by its ETag."
            )
        }
    }

    /// `?device_token_id=12`: a device gets the content only of a notification sent to it.
    @Sendable func fetch(_ request: Request, context: NotifiableRequestContext) async throws -> Response {
        let caller = try context.requireCaller()
        let id = try context.pathID("id", what: "notification")
        let text = request.queryValue(named: "device_token_id")
        let deviceID = text.flatMap { Int64($0) }
        if caller.role == .device, deviceID == nil {
            throw APIError(
                status: .unprocessableContent, code: "missing_field",
                message: "Name the device: ?device_token_id=<the id the SDK got when it registered>.", field: "device_token_id"
            )
        }
        if text != nil, deviceID == nil {
            throw APIError(
                status: .unprocessableContent, code: "invalid_device_token_id", message: "device_token_id must be a device id.", field: "device_token_id")
        }
        guard let content = try await contents.content(notificationID: id, appID: caller.appID, deviceID: deviceID) else {
            throw APIError.notFound("Notification \(id) has no content for this device.")
        }
        // Where the app requires verified aliases, a device with a user reads that user's content
        // only with the user's token, as its opened report does: device credentials and a guessed
        // device id are not enough.
        if caller.role == .device, caller.requiresVerifiedAlias, let deviceID,
            let alias = try await devices.device(id: deviceID, appID: caller.appID)?.userAlias
        {
            try await verifiedAliases.admit(caller, actingFor: alias, token: VerifiedAliasGate.presentedToken(request))
        }
        let etag = Self.etag(content.summary)
        var headers: HTTPFields = [
            .contentType: content.summary.mediaType, .eTag: etag, .cacheControl: "private, max-age=86400, immutable",
            .acceptRanges: "bytes",
        ]
        // Weak comparison, as RFC 9110 asks for If-None-Match: W/"x" matches "x".
        let matches =
            request.headers[.ifNoneMatch]?.split(separator: ",").contains { candidate in
                var tag = candidate.trimmingCharacters(in: .whitespaces)
                if tag.hasPrefix("W/") { tag.removeFirst(2) }
                return tag == etag || tag == "*"
            } ?? false
        if matches {
            headers[.contentType] = nil
            return Response(status: .notModified, headers: headers)
        }
        let size = content.data.count
        switch ByteRange.parse(request.headers[.range], size: size) {
        case .none:
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: content.data)))
        case .range(let range):
            headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound)/\(size)"
            return Response(status: .partialContent, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: content.data[range])))
        case .unsatisfiable:
            var error = APIError(
                status: .rangeNotSatisfiable, code: "range_not_satisfiable",
                message: "The content is \(size) bytes; ask for a range within it, such as bytes=0-\(max(0, size - 1))."
            )
            error.headers = [.contentRange: "bytes */\(size)"]
            throw error
        }
    }

    /// Whether content of `mediaType` is what it says it is, as far as the service checks: JSON must parse.
    static func isReadable(_ data: [UInt8], as mediaType: String) -> Bool {
        mediaType != "application/json" || (try? JSONValue.decode(data)) != nil
    }

    static func etag(_ summary: RichContentSummary) -> String { "\"\(summary.sha256)\"" }

    /// `type/subtype` from the Content-Type, lower-cased; a charset or other parameters are dropped.
    static func mediaType(_ header: String?) throws -> String {
        let type = (header ?? "").split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        let parts = type.split(separator: "/", omittingEmptySubsequences: false)
        let token = { (part: Substring) in !part.isEmpty && part.utf8.allSatisfy { (0x21...0x7E).contains($0) && !"()<>@,;:\\\"/[]?={}".utf8.contains($0) } }
        guard parts.count == 2, token(parts[0]), token(parts[1]), type.utf8.count <= 255 else {
            throw APIError(
                status: .unprocessableContent, code: "invalid_media_type",
                message: "Send the content's media type as Content-Type, such as image/png or application/json.", field: "Content-Type"
            )
        }
        return type
    }
}

extension HTTPField.Name {
    static let ifNoneMatch = Self("If-None-Match")!
    static let contentRange = Self("Content-Range")!
    static let range = Self("Range")!
}
