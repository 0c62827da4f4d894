import NotifiableCore

/// The error bodies of Google's APIs, written as Google writes them.
enum GoogleErrorBody {
    static let fcmErrorType = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
    static let badRequestType = "type.googleapis.com/google.rpc.BadRequest"
    static let errorInfoType = "type.googleapis.com/google.rpc.ErrorInfo"

    /// One entry of `error.details`.
    enum Detail: Sendable, Equatable {
        /// FCM's own code (`UNREGISTERED`, `QUOTA_EXCEEDED`, …), what FCM clients branch on.
        case fcmError(errorCode: String)
        /// Which request field was wrong (`message.token`, `message.data[0].value`, …).
        case fieldViolation(field: String, description: String)
        /// Why a Google front end refused the call (`IAM_PERMISSION_DENIED`, …).
        case errorInfo(reason: String, domain: String)

        var json: String {
            switch self {
            case .fcmError(let errorCode):
                return JSONText.object([
                    ("@type", JSONText.quoted(GoogleErrorBody.fcmErrorType)), ("errorCode", JSONText.quoted(errorCode)),
                ])
            case .fieldViolation(let field, let description):
                // Google leaves `field` out when the body as a whole is wrong (not JSON).
                var violation = [("description", JSONText.quoted(description))]
                if !field.isEmpty { violation.insert(("field", JSONText.quoted(field)), at: 0) }
                return JSONText.object([
                    ("@type", JSONText.quoted(GoogleErrorBody.badRequestType)),
                    ("fieldViolations", "[" + JSONText.object(violation) + "]"),
                ])
            case .errorInfo(let reason, let domain):
                return JSONText.object([
                    ("@type", JSONText.quoted(GoogleErrorBody.errorInfoType)), ("reason", JSONText.quoted(reason)),
                    ("domain", JSONText.quoted(domain)),
                ])
            }
        }
    }

    /// `{"error": {"code": 404, "message": "…", "status": "NOT_FOUND", "details": […]}}`, the shape of every
    /// error of the FCM HTTP v1 API; `status` nil leaves it out, an empty `details` too.
    static func apiError(code: Int, message: String, status: String?, details: [Detail] = []) -> String {
        var members = [("code", String(code)), ("message", JSONText.quoted(message))]
        if let status { members.append(("status", JSONText.quoted(status))) }
        if !details.isEmpty { members.append(("details", "[" + details.map(\.json).joined(separator: ",") + "]")) }
        return JSONText.object([("error", JSONText.object(members))])
    }

    /// `{"error": "invalid_grant", "error_description": "…"}`, the OAuth 2 token endpoint's errors (RFC 6749 §5.2).
    static func oauthError(_ error: String, description: String) -> String {
        JSONText.object([("error", JSONText.quoted(error)), ("error_description", JSONText.quoted(description))])
    }

    /// The field a 400's message names, as Google words it: `Invalid value at 'FIELD' …`, or the registration token.
    static func field(namedIn message: String) -> String? {
        let prefix = "Invalid value at '"
        if message.hasPrefix(prefix) {
            let rest = message.dropFirst(prefix.count)
            if let end = rest.firstIndex(of: "'"), end != rest.startIndex { return String(rest[..<end]) }
        }
        return message.lowercased().contains("registration token") ? "message.token" : nil
    }
}
