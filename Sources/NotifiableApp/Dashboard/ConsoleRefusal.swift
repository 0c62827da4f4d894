import Hummingbird
import NotifiableCore

/// A console request that cannot be done, answered as a page that says why and what to do.
struct ConsoleRefusal: Error, HTTPResponseError {
    let status: HTTPResponse.Status
    let message: String

    static func notFound(_ message: String) -> ConsoleRefusal { ConsoleRefusal(status: .notFound, message: message) }

    /// A role that may not take the action: says which role may.
    static func forbidden(_ viewer: ConsoleOperator, _ what: String, needs: String) -> ConsoleRefusal {
        ConsoleRefusal(
            status: .forbidden,
            message: "You are signed in as \(viewer.name) (\(viewer.role.rawValue)), which may not \(what). \(needs)")
    }

    static func staleForm(_ consequence: String) -> ConsoleRefusal {
        ConsoleRefusal(status: .forbidden, message: "The form was stale or not sent from this dashboard; \(consequence). Reload the page and try again.")
    }

    static func invalid(_ message: String) -> ConsoleRefusal { ConsoleRefusal(status: .unprocessableContent, message: message) }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        HTML.page(
            status == .notFound ? "Not found" : "Refused",
            "<p class=\"bad\">\(HTML.escape(message))</p><p>\(HTML.link("/dashboard", "Back to the apps"))</p>", status: status)
    }
}
