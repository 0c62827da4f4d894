/// What the fake FCM gateway does with a send that passed authentication and validation.
public enum SandboxFCMOutcome: Sendable, Hashable {
    /// Answer 200 `{"name": "projects/{project}/messages/{id}"}` and record the message.
    case accept
    /// Answer `httpStatus` with Google's error body `{"error": {"code", "message", "status", "details"}}`.
    /// `errorCode` adds an FcmError detail (`type.googleapis.com/google.firebase.fcm.v1.FcmError`), which is what FCM
    /// clients branch on; `retryAfterSeconds` adds a `retry-after` header. A 400 whose `message` names a field as Google
    /// words it (`Invalid value at 'message.data[0].value' …`, or the registration token) also carries a
    /// `google.rpc.BadRequest` field violation on that field. The message is not recorded.
    case reject(httpStatus: Int, status: String, errorCode: String?, message: String, retryAfterSeconds: Int? = nil)
    /// Wait, then accept (the message is recorded when the decision is made, before the wait).
    case delay(Duration)
    /// Close the whole TCP connection without answering, as a failing Google front end would.
    case dropConnection
    /// Reset the request's HTTP/2 stream without answering (on HTTP/1.1, close the connection); the message is
    /// not recorded.
    case resetStream
    /// Never answer: the stream stays open until the client gives up on it.
    case noAnswer

    /// 404 `NOT_FOUND` / `UNREGISTERED`: the app was uninstalled or the token expired; the token will never work again.
    public static let unregistered = SandboxFCMOutcome.reject(
        httpStatus: 404, status: "NOT_FOUND", errorCode: "UNREGISTERED", message: "Requested entity was not found."
    )

    /// 403 `PERMISSION_DENIED` / `SENDER_ID_MISMATCH`: the token belongs to another Firebase project.
    public static let senderIDMismatch = SandboxFCMOutcome.reject(
        httpStatus: 403, status: "PERMISSION_DENIED", errorCode: "SENDER_ID_MISMATCH", message: "SenderId mismatch"
    )

    /// 400 `INVALID_ARGUMENT` / `INVALID_ARGUMENT` about the registration token (with a field violation on
    /// `message.token`): the token is malformed and will never work.
    public static let invalidToken = SandboxFCMOutcome.reject(
        httpStatus: 400, status: "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT",
        message: "The registration token is not a valid FCM registration token"
    )

    /// 400 `INVALID_ARGUMENT` / `INVALID_ARGUMENT` about the payload (a data value, not the token): the message is wrong,
    /// the device is fine.
    public static let invalidPayload = SandboxFCMOutcome.reject(
        httpStatus: 400, status: "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT",
        message: "Invalid value at 'message.data[0].value' (TYPE_STRING), 12"
    )

    /// 429 `RESOURCE_EXHAUSTED` / `QUOTA_EXCEEDED`, optionally with `retry-after`.
    public static func quotaExceeded(retryAfterSeconds: Int? = nil) -> SandboxFCMOutcome {
        .reject(
            httpStatus: 429, status: "RESOURCE_EXHAUSTED", errorCode: "QUOTA_EXCEEDED",
            message: "Quota exceeded for quota metric 'Send requests' and limit 'Send requests per minute' "
                + "of service 'fcm.googleapis.com'.",
            retryAfterSeconds: retryAfterSeconds
        )
    }

    /// 503 `UNAVAILABLE` / `UNAVAILABLE`, optionally with `retry-after`.
    public static func unavailable(retryAfterSeconds: Int? = nil) -> SandboxFCMOutcome {
        .reject(
            httpStatus: 503, status: "UNAVAILABLE", errorCode: "UNAVAILABLE",
            message: "The service is currently unavailable.", retryAfterSeconds: retryAfterSeconds
        )
    }

    /// 500 `INTERNAL` / `INTERNAL`.
    public static let internalError = SandboxFCMOutcome.reject(
        httpStatus: 500, status: "INTERNAL", errorCode: "INTERNAL", message: "Internal error encountered."
    )

    /// 401 `UNAUTHENTICATED` / `THIRD_PARTY_AUTH_ERROR`: APNs or Web Push refused the project's credentials.
    /// Unlike a bad access token, this carries an FcmError detail.
    public static let thirdPartyAuthError = SandboxFCMOutcome.reject(
        httpStatus: 401, status: "UNAUTHENTICATED", errorCode: "THIRD_PARTY_AUTH_ERROR",
        message: "Auth error from APNS or Web Push Service"
    )

    /// How FCM shows `fault`.
    static func injecting(_ fault: SandboxGatewayFault) -> SandboxFCMOutcome {
        switch fault {
        case .unavailable(let retryAfterSeconds): .unavailable(retryAfterSeconds: retryAfterSeconds)
        case .resetStream: .resetStream
        case .dropConnection: .dropConnection
        case .unregistered: .unregistered
        case .timeout: .noAnswer
        }
    }
}
