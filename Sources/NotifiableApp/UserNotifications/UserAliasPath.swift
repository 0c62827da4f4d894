import Foundation
import Hummingbird
import NotifiableCore

extension NotifiableRequestContext {
    /// The user alias in the path, percent-decoded: 1 to 255 characters, no NUL.
    func pathUserAlias(_ name: String = "alias") throws -> String {
        let raw = parameters.get(name) ?? ""
        let alias = raw.removingPercentEncoding ?? raw
        guard !alias.isEmpty, alias.unicodeScalars.count <= NotificationRequest.maxShortTextLength, !alias.unicodeScalars.contains("\0") else {
            throw APIError(
                status: .unprocessableContent, code: "invalid_user_alias",
                message: "The user alias in the path must be 1 to \(NotificationRequest.maxShortTextLength) characters.", field: "alias"
            )
        }
        return alias
    }
}
