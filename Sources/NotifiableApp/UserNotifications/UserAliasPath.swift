import Foundation
import Hummingbird
import NotifiableCore

extension NotifiableRequestContext {
    /// The user alias in the path, percent-decoded, as `UserAlias` allows it.
    func pathUserAlias(_ name: String = "alias") throws -> String {
        let raw = parameters.get(name) ?? ""
        let alias = raw.removingPercentEncoding ?? raw
        if let problem = UserAlias.problem(alias) {
            throw APIError(
                status: .unprocessableContent, code: "invalid_user_alias",
                message: "The user alias in the path \(problem); send 1 to \(UserAlias.maxLength) characters, percent-encoded.", field: "alias"
            )
        }
        return alias
    }
}
