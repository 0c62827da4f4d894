import Crypto
import Foundation
import NotifiableCore
import Synchronization

/// The fake push service's subscriptions and a push service's rules (RFC 8030, 8291, 8292), shared
/// by every connection, with the fault injection and observation the other fake gateways have.
final class SandboxWebPushRules: SandboxHTTPRules, FaultInjectingRules {
    let gatewayName = "fake push service"

    struct Subscription {
        let privateKey: P256.KeyAgreement.PrivateKey
        let authSecret: Data
        /// The VAPID public key the browser subscribed with (`applicationServerKey`); nil takes any.
        let applicationServerKey: Data?
    }

    struct State: FaultInjectionState {
        /// The gateway's origin: what VAPID tokens must name as `aud`.
        var origin = ""
        var subscriptions: [String: Subscription] = [:]
        /// Outcomes still to use per subscription, last one first.
        var scripts: [String: [SandboxWebPushOutcome]] = [:]
        var accepted: [AcceptedWebPushMessage] = []
        var acceptedCount = 0
        var recording = true
        var requestCount = 0
        var nextMessage = 1
        var faults: SandboxGatewayFaultMix?
        var tally = SandboxGatewayTally()
        var latency: Duration = .zero
    }

    let state = Mutex(State())

    func withState<Result: Sendable>(_ body: (inout State) -> Result) -> Result {
        state.withLock { body(&$0) }
    }

    func decide(_ request: SandboxHTTPRequest) -> SandboxHTTPDecision {
        decide(request, now: Date())
    }

    func decide(_ request: SandboxHTTPRequest, now: Date) -> SandboxHTTPDecision {
        let parts = request.path.split(separator: "/")
        let id = parts.count == 2 ? String(parts[1]) : ""
        let (subscription, origin, latency) = state.withLock { state in
            state.requestCount += 1
            return (state.subscriptions[id], state.origin, state.latency)
        }
        var key = ""
        func record(_ outcome: String, status: Int?, retryAfter: Int? = nil, into state: inout State) {
            let record = SandboxGatewayRequestRecord(
                arrivedAt: now, token: id, key: key, outcome: outcome, status: status, retryAfterSeconds: retryAfter,
                connection: request.connection)
            state.tally.note(record, countingTokens: state.faults != nil)
        }
        /// A refusal, counted under `outcome`.
        func refuse(_ status: Int, _ text: String, outcome: String) -> SandboxHTTPDecision {
            state.withLock { record(outcome, status: status, into: &$0) }
            return .answer(reply(status, text), after: latency)
        }
        guard request.method == "POST", parts.count == 2, parts[0] == "push" else {
            return refuse(404, "no such push resource", outcome: "not-found")
        }
        // RFC 8292 §4.2: 401 without a VAPID token, 403 for one that does not verify or fit.
        guard let authorization = request.header("authorization") else {
            return refuse(401, "VAPID authorization required", outcome: "vapid-missing")
        }
        switch SandboxVAPIDCheck.verify(authorization, origin: origin, now: now) {
        case .failure(let problem): return refuse(403, problem.description, outcome: "vapid-refused")
        case .success(let publicKey):
            key = Base64URL.encode(publicKey)
            if let expected = subscription?.applicationServerKey, expected != publicKey {
                return refuse(403, "the VAPID key is not the one the subscription was made with", outcome: "vapid-mismatch")
            }
        }
        guard request.header("content-encoding")?.lowercased() == "aes128gcm" else {
            return refuse(415, "Content-Encoding must be aes128gcm (RFC 8291)", outcome: "bad-encoding")
        }
        guard let ttl = request.header("ttl"), UInt64(ttl) != nil else {
            return refuse(400, "TTL header missing or not a number (RFC 8030 §5.2)", outcome: "bad-ttl")
        }
        if let urgency = request.header("urgency"), !["very-low", "low", "normal", "high"].contains(urgency) {
            return refuse(400, "Urgency must be very-low, low, normal or high (RFC 8030 §5.3)", outcome: "bad-urgency")
        }
        if let topic = request.header("topic"), !Self.isTopic(topic) {
            return refuse(400, "Topic must be at most 32 characters of the URL-safe base64 alphabet (RFC 8030 §5.4)", outcome: "bad-topic")
        }
        let body = request.body.map { Array($0.readableBytesView) } ?? []
        guard body.count <= 4096 else { return refuse(413, "payload too large", outcome: "too-large") }
        var plaintext: String?
        if let subscription {
            guard let opened = SandboxWebPushDecryption.decrypt(body, privateKey: subscription.privateKey, authSecret: subscription.authSecret)
            else { return refuse(400, "the message does not decrypt with the subscription's keys", outcome: "undecryptable") }
            plaintext = String(decoding: opened, as: UTF8.self)
        }
        let headers = Dictionary(request.headers.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last })
        return state.withLock { state -> SandboxHTTPDecision in
            if var script = state.scripts[id], let next = script.popLast() {
                state.scripts[id] = script.isEmpty ? nil : script
                if case .reject(let status, let text, let retryAfter) = next {
                    record("scripted-\(status)", status: status, retryAfter: retryAfter, into: &state)
                    var refusal = reply(status, text)
                    if let retryAfter { refusal.headers["retry-after"] = String(retryAfter) }
                    return .answer(refusal, after: latency)
                }
            } else if let faults = state.faults, let fault = faults.fault(token: id, earlierRequests: state.tally.earlierRequests(to: id)) {
                switch fault {
                case .unavailable(let seconds):
                    record(fault.description, status: 503, retryAfter: seconds, into: &state)
                    var refusal = reply(503, "service unavailable")
                    if let seconds { refusal.headers["retry-after"] = String(seconds) }
                    return .answer(refusal, after: latency)
                case .unregistered:
                    record(fault.description, status: 410, into: &state)
                    return .answer(reply(410, "push subscription has unsubscribed or expired"), after: latency)
                case .resetStream:
                    record(fault.description, status: nil, into: &state)
                    return .resetStream
                case .dropConnection:
                    record(fault.description, status: nil, into: &state)
                    return .dropConnection
                case .timeout:
                    record(fault.description, status: nil, into: &state)
                    return .noAnswer
                }
            }
            record(SandboxGatewayTally.acceptedOutcome, status: 201, into: &state)
            let location = "\(state.origin)/message/\(state.nextMessage)"
            state.nextMessage += 1
            state.acceptedCount += 1
            if state.recording {
                state.accepted.append(
                    AcceptedWebPushMessage(
                        subscription: id, location: location, headers: headers, body: body, plaintext: plaintext))
            }
            return .answer(SandboxHTTPReply(status: 201, body: "", headers: ["location": location, "content-type": "text/plain"]), after: latency)
        }
    }

    private func reply(_ status: Int, _ text: String) -> SandboxHTTPReply {
        SandboxHTTPReply(status: status, body: text, headers: ["content-type": "text/plain"])
    }

    static func isTopic(_ text: String) -> Bool {
        (1...32).contains(text.utf8.count)
            && text.utf8.allSatisfy { (65...90).contains($0) || (97...122).contains($0) || (48...57).contains($0) || $0 == 45 || $0 == 95 }
    }
}

/// RFC 8292 §3: `vapid t=<JWT>, k=<key>`, the JWT ES256-signed by `k`, `aud` the push service's
/// origin, `exp` in the future and within 24 hours, `sub` a `mailto:` or `https:` contact (which
/// Apple's service insists on).
enum SandboxVAPIDCheck {
    struct Problem: Error, CustomStringConvertible {
        let description: String
    }

    static func verify(_ header: String, origin: String, now: Date) -> Result<Data, Problem> {
        guard header.hasPrefix("vapid ") else { return .failure(Problem(description: "the Authorization scheme must be vapid")) }
        var parameters: [String: String] = [:]
        for part in header.dropFirst(6).split(separator: ",") {
            let pair = part.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            if pair.count == 2 { parameters[String(pair[0])] = String(pair[1]) }
        }
        guard let token = parameters["t"], let keyText = parameters["k"], let key = Base64URL.decode(Substring(keyText)),
            let publicKey = try? P256.Signing.PublicKey(x963Representation: key)
        else { return .failure(Problem(description: "t= and k= (an uncompressed P-256 key, base64url) are required")) }
        let pieces = token.split(separator: ".", omittingEmptySubsequences: false)
        guard pieces.count == 3, let signature = Base64URL.decode(pieces[2]),
            let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
            publicKey.isValidSignature(ecdsa, for: Data("\(pieces[0]).\(pieces[1])".utf8))
        else { return .failure(Problem(description: "the VAPID token's signature does not verify with k")) }
        guard let claimBytes = Base64URL.decode(pieces[1]),
            let object = try? JSONSerialization.jsonObject(with: claimBytes) as? [String: Any]
        else { return .failure(Problem(description: "the VAPID token's claims are not a JSON object")) }
        guard object["aud"] as? String == origin else { return .failure(Problem(description: "aud must be \(origin)")) }
        guard let exp = object["exp"] as? Double ?? (object["exp"] as? Int).map(Double.init),
            exp > now.timeIntervalSince1970, exp <= now.timeIntervalSince1970 + 24 * 3600
        else { return .failure(Problem(description: "exp must be in the future and within 24 hours")) }
        guard let sub = object["sub"] as? String, sub.hasPrefix("mailto:") || sub.hasPrefix("https:") else {
            return .failure(Problem(description: "sub must be a mailto: or https: contact"))
        }
        return .success(key)
    }
}
