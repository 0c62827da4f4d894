import Foundation
import NotifiableCore

/// `POST /v1/projects/{project}/messages:send`: checks the access token, the project and the message as FCM does,
/// then answers with the scripted or random outcome, or accepts and records.
extension SandboxFCMRules {
    static let unauthenticatedMessage =
        "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid "
        + "authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."

    func decideSend(_ request: SandboxHTTPRequest, projectID: String, now: Date) -> SandboxHTTPDecision {
        let bearer = BearerAuthorization.token(request.header("authorization"))
        let (accessToken, latency, recording) = state.withLock { state in
            state.sendRequestCount += 1
            return (bearer.flatMap { state.accessTokens[$0] }, state.latency, state.recording)
        }

        let key = accessToken?.clientEmail ?? ""
        func record(_ outcome: String, token: String, status: Int?, retryAfter: Int? = nil, into state: inout State) {
            let record = SandboxGatewayRequestRecord(
                arrivedAt: now, token: token, key: key, outcome: outcome, status: status, retryAfterSeconds: retryAfter,
                connection: request.connection
            )
            state.tally.note(record, countingTokens: state.faults != nil)
        }

        /// `outcome` is what the statistics count the answer under.
        func answer(
            _ status: Int, _ body: String, headers: [String: String] = [:], outcome: String, token: String = ""
        ) -> SandboxHTTPDecision {
            state.withLock { record(outcome, token: token, status: status, into: &$0) }
            return .answer(SandboxHTTPReply(status: status, body: body, headers: headers), after: latency)
        }

        guard request.method == "POST" else {
            let message = "The method \(request.method) is not allowed on \(request.path); sends are POST."
            return answer(
                405, GoogleErrorBody.apiError(code: 405, message: message, status: nil), headers: ["allow": "POST"],
                outcome: "METHOD_NOT_ALLOWED"
            )
        }
        guard !request.isBodyTooLarge else {
            let message = "Request payload size exceeds the limit: \(SandboxHTTPRequest.maxBodyBytes) bytes."
            return answer(
                400, GoogleErrorBody.apiError(code: 400, message: message, status: "INVALID_ARGUMENT"), outcome: "INVALID_ARGUMENT"
            )
        }
        // A missing, unknown, expired or withdrawn token: Google's 401, without an FcmError detail.
        guard let accessToken, accessToken.expiresAt > now else {
            return answer(
                401,
                GoogleErrorBody.apiError(code: 401, message: Self.unauthenticatedMessage, status: "UNAUTHENTICATED"),
                headers: ["www-authenticate": #"Bearer realm="https://accounts.google.com/", error="invalid_token""#],
                outcome: "UNAUTHENTICATED"
            )
        }
        guard accessToken.projectID == projectID else {
            let message =
                "Permission 'cloudmessaging.messages.create' denied on resource "
                + "'//cloudresourcemanager.googleapis.com/projects/\(projectID)' (or it may not exist)."
            let body = GoogleErrorBody.apiError(
                code: 403, message: message, status: "PERMISSION_DENIED",
                details: [.errorInfo(reason: "IAM_PERMISSION_DENIED", domain: "cloudresourcemanager.googleapis.com")]
            )
            return answer(403, body, outcome: "PERMISSION_DENIED")
        }

        let body = request.bodyBytes
        let valid: FCMMessageValidator.Valid
        switch FCMMessageValidator.validate(body) {
        case .failure(let violation):
            var details: [GoogleErrorBody.Detail] = []
            if violation.isFCMCheck { details.append(.fcmError(errorCode: "INVALID_ARGUMENT")) }
            details.append(.fieldViolation(field: violation.field, description: violation.message))
            return answer(
                400,
                GoogleErrorBody.apiError(code: 400, message: violation.message, status: "INVALID_ARGUMENT", details: details),
                outcome: "INVALID_ARGUMENT"
            )
        case .success(let success):
            valid = success
        }
        guard !valid.validateOnly else {
            // Google checks such a message and answers with a placeholder name, sending nothing.
            return answer(200, Self.nameBody("projects/\(projectID)/messages/fake_message_id"), outcome: "validate-only", token: valid.token)
        }

        let name = "projects/\(projectID)/messages/\(Self.newMessageID(now: now))"
        let headers = recording ? request.headerDictionary : [:]
        return state.withLock { state -> SandboxHTTPDecision in
            var outcome = SandboxFCMOutcome.accept
            var faultName: String?
            if !state.scripts.isEmpty, let next = state.scripts[valid.token]?.popLast() {
                outcome = next
                if state.scripts[valid.token]?.isEmpty == true { state.scripts[valid.token] = nil }
            } else if let faults = state.faults,
                let fault = faults.fault(token: valid.token, earlierRequests: state.tally.earlierRequests(to: valid.token))
            {
                outcome = .injecting(fault)
                faultName = fault.description
            } else if var failures = state.randomFailures {
                if failures.generator.nextUnit() < failures.rate { outcome = failures.outcome }
                state.randomFailures = failures
            }
            var delay = Duration.zero
            switch outcome {
            case .dropConnection:
                record(faultName ?? "drop-connection", token: valid.token, status: nil, into: &state)
                return .dropConnection
            case .resetStream:
                record(faultName ?? "reset-stream", token: valid.token, status: nil, into: &state)
                return .resetStream
            case .noAnswer:
                record(faultName ?? "timeout", token: valid.token, status: nil, into: &state)
                return .noAnswer
            case .reject(let httpStatus, let status, let errorCode, _, let retryAfterSeconds):
                record(
                    faultName ?? errorCode ?? status, token: valid.token, status: httpStatus, retryAfter: retryAfterSeconds,
                    into: &state
                )
                return .answer(Self.reply(rejecting: outcome), after: latency)
            case .delay(let duration):
                delay = max(duration, .zero)
            case .accept:
                break
            }
            record(SandboxGatewayTally.acceptedOutcome, token: valid.token, status: 200, into: &state)
            state.acceptedCount += 1
            if state.recording {
                state.accepted.append(
                    AcceptedFCMMessage(
                        projectID: projectID, name: name, token: valid.token, body: body, headers: headers, receivedAt: now
                    )
                )
            }
            return .answer(.ok(Self.nameBody(name)), after: latency + delay)
        }
    }

    /// The answer to a `.reject` outcome, in Google's error shape.
    static func reply(rejecting outcome: SandboxFCMOutcome) -> SandboxHTTPReply {
        guard case .reject(let httpStatus, let status, let errorCode, let message, let retryAfterSeconds) = outcome else {
            return .ok(nameBody(""))
        }
        var details: [GoogleErrorBody.Detail] = []
        if let errorCode { details.append(.fcmError(errorCode: errorCode)) }
        if httpStatus == 400, let field = GoogleErrorBody.field(namedIn: message) {
            details.append(.fieldViolation(field: field, description: message))
        }
        let body = GoogleErrorBody.apiError(code: httpStatus, message: message, status: status, details: details)
        var reply = SandboxHTTPReply(status: httpStatus, body: body)
        if let retryAfterSeconds { reply.headers["retry-after"] = String(retryAfterSeconds) }
        return reply
    }

    static func nameBody(_ name: String) -> String {
        JSONText.object([("name", JSONText.quoted(name))])
    }

    /// A message id shaped like FCM's (`0:1700000000000000%0123456789abcdef`): microseconds, then 64 random bits.
    static func newMessageID(now: Date) -> String {
        let microseconds = Int64(now.timeIntervalSince1970 * 1_000_000)
        let random = String(UInt64.random(in: .min ... .max), radix: 16)
        return "0:\(microseconds)%" + String(repeating: "0", count: 16 - random.count) + random
    }
}
