import Foundation
import Hummingbird

/// Reading path and query values with the service's errors.
extension NotifiableRequestContext {
    /// A positive numeric id from the path; anything else names nothing (404).
    func pathID(_ name: String, what: String) throws -> Int64 {
        var text = parameters.get(name) ?? ""
        if text.hasSuffix(".json") { text.removeLast(5) }
        guard let id = Int64(text), id > 0 else { throw APIError.notFound("There is no \(what) \(text).") }
        return id
    }

    /// The caller, who must hold server credentials.
    func requireServerCaller() throws -> Caller {
        let caller = try requireCaller()
        guard caller.role == .server else {
            throw APIError(
                status: .forbidden, code: "server_credentials_required",
                message: "This endpoint needs the app's server credentials; device credentials may only manage devices."
            )
        }
        return caller
    }
}

extension Request {
    /// The first query value under any of `names`, comparing keys percent-decoded
    /// (`user%5Balias%5D` is `user[alias]`).
    func queryValue(named names: String...) -> String? {
        for (key, value) in uri.queryParameters {
            let decoded = String(key).removingPercentEncoding ?? String(key)
            if names.contains(decoded) { return String(value) }
        }
        return nil
    }

    /// `?cursor=` as an id, or nil; a malformed cursor is a 422.
    func cursor() throws -> Int64? {
        guard let text = uri.queryParameters["cursor"].map(String.init), !text.isEmpty else { return nil }
        guard let value = Int64(text), value >= 0 else {
            throw APIError(
                status: .unprocessableContent, code: "invalid_cursor", message: "cursor must be a next_cursor value from an earlier page.", field: "cursor")
        }
        return value
    }

    /// `?limit=` between 1 and `maximum`, default `fallback`.
    func limit(default fallback: Int = 100, maximum: Int = 1000) throws -> Int {
        guard let text = uri.queryParameters["limit"].map(String.init), !text.isEmpty else { return fallback }
        guard let value = Int(text), (1...maximum).contains(value) else {
            throw APIError(status: .unprocessableContent, code: "invalid_limit", message: "limit must be 1 to \(maximum).", field: "limit")
        }
        return value
    }
}
