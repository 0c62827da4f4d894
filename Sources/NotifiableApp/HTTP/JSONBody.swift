import Foundation
import Hummingbird
import NotifiableCore

extension Request {
    /// The body as JSON. An empty body reads as `{}`; anything that is not JSON is a 400.
    mutating func jsonBody(context: NotifiableRequestContext, limit: Int = NotifiableRequestContext.maxBodyBytes) async throws -> JSONValue {
        let buffer = try await collectBody(upTo: limit)
        guard buffer.readableBytes > 0 else { return .object([:]) }
        do {
            return try JSONValue.decode(buffer.readableBytesView)
        } catch {
            throw APIError(
                status: .badRequest, code: "malformed_json",
                message: "The request body is not valid JSON\(Self.position(of: error)). Send a JSON object."
            )
        }
    }

    private static func position(of error: any Error) -> String {
        guard let syntax = error as? JSONSyntaxError else { return "" }
        return " (\(syntax))"
    }
}

/// Encodes any Encodable as a JSON response with the given status.
struct JSONResponse<Body: Encodable & Sendable>: ResponseGenerator {
    let status: HTTPResponse.Status
    let body: Body

    init(_ body: Body, status: HTTPResponse.Status = .ok) {
        self.body = body
        self.status = status
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(body)
        return Response(
            status: status,
            headers: [.contentType: "application/json; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: data))
        )
    }
}
