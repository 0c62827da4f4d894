import Foundation

/// One request as a fake gateway saw it: when it arrived, for which token, under which signing key, and what it got.
public struct SandboxGatewayRequestRecord: Sendable, Hashable {
    public var arrivedAt: Date
    /// The device or registration token (APNs tokens lower-cased); empty when the request named none.
    public var token: String
    /// APNs: `TEAM_ID:KEY_ID` of the provider token (read whether or not its signature holds); FCM: the service
    /// account's `client_email` behind the access token; empty when there was none.
    public var key: String
    /// `accepted`, a fault's name (``SandboxGatewayFault/description``), or the gateway's reason for a refusal
    /// (`InvalidProviderToken`, `UNAUTHENTICATED`, …).
    public var outcome: String
    /// The HTTP status answered; nil when none was (reset, dropped, never answered).
    public var status: Int?
    public var retryAfterSeconds: Int?
    /// The TCP connection the request came on, the same number for all its requests while it is open (a later
    /// connection may get it again); 0 when unknown. A dropped connection loses answers written on it just
    /// before: with this, a check can tell an answer the client never got from one it ignored.
    public var connection: Int

    public init(
        arrivedAt: Date, token: String, key: String, outcome: String, status: Int?, retryAfterSeconds: Int?, connection: Int = 0
    ) {
        self.arrivedAt = arrivedAt
        self.token = token
        self.key = key
        self.outcome = outcome
        self.status = status
        self.retryAfterSeconds = retryAfterSeconds
        self.connection = connection
    }

    /// The columns of ``tsvLine``, tab-separated.
    public static let tsvHeader = "arrived_at\ttoken\tkey\toutcome\tstatus\tretry_after\tconnection"

    /// Seconds since 1970 (microseconds), token, key, outcome, status (empty for none), retry-after (empty for none),
    /// connection.
    public var tsvLine: String {
        let micros = Int64((arrivedAt.timeIntervalSince1970 * 1_000_000).rounded())
        let seconds = micros / 1_000_000, fraction = micros % 1_000_000
        let fractionText = String(fraction)
        let time = "\(seconds)." + String(repeating: "0", count: 6 - fractionText.count) + fractionText
        return [time, token, key, outcome, status.map(String.init) ?? "", retryAfterSeconds.map(String.init) ?? "", String(connection)]
            .joined(separator: "\t")
    }
}

/// What a fake gateway has seen so far, for a scenario to check against the database.
public struct SandboxGatewayStats: Sendable, Hashable, Codable {
    /// Requests to the send path, refused, faulted and dropped ones included.
    public var requests = 0
    /// Requests accepted (answered 200, or decided so when the answer was lost to a fault of another request).
    public var accepted = 0
    /// Requests per outcome (see ``SandboxGatewayRequestRecord/outcome``).
    public var outcomes: [String: Int] = [:]
    /// Requests per signing key, then per outcome.
    public var keys: [String: [String: Int]] = [:]
    /// Distinct tokens that got any request.
    public var tokensSeen = 0
    /// Distinct tokens accepted at least once.
    public var tokensAccepted = 0
    /// Tokens accepted more than once, with how many times: the duplicates a device would have received.
    public var acceptedMoreThanOnce: [String: Int] = [:]
    /// Accepts beyond the first, over all tokens.
    public var duplicateAccepts = 0
    /// When the snapshot was taken, in seconds since 1970.
    public var takenAt = 0.0

    public init() {}

    enum CodingKeys: String, CodingKey {
        case requests, accepted, outcomes, keys
        case tokensSeen = "tokens_seen"
        case tokensAccepted = "tokens_accepted"
        case acceptedMoreThanOnce = "accepted_more_than_once"
        case duplicateAccepts = "duplicate_accepts"
        case takenAt = "taken_at"
    }
}

/// Counts kept under a gateway's lock. Per-token counts exist only while something needs them (statistics are
/// observed, or a fault mix draws by a token's request number), so that a long benchmark keeps memory flat.
struct SandboxGatewayTally {
    struct TokenCounts {
        var requests: Int32 = 0
        var accepted: Int32 = 0
    }

    /// Per-key and per-token statistics are kept.
    var observing = false
    /// Every request is kept for ``drainLog()`` (observing or not).
    var logging = false
    var requests = 0
    var accepted = 0
    var outcomes: [String: Int] = [:]
    var keys: [String: [String: Int]] = [:]
    var tokens: [String: TokenCounts] = [:]
    var log: [SandboxGatewayRequestRecord] = []

    /// Requests to `token` counted before this one.
    func earlierRequests(to token: String) -> Int {
        Int(tokens[token]?.requests ?? 0)
    }

    mutating func note(_ record: SandboxGatewayRequestRecord, countingTokens: Bool) {
        requests += 1
        let isAccepted = record.outcome == Self.acceptedOutcome
        if isAccepted { accepted += 1 }
        outcomes[record.outcome, default: 0] += 1
        if observing || countingTokens {
            tokens[record.token, default: TokenCounts()].requests += 1
            if isAccepted { tokens[record.token, default: TokenCounts()].accepted += 1 }
        }
        if observing { keys[record.key, default: [:]][record.outcome, default: 0] += 1 }
        if logging { log.append(record) }
    }

    mutating func drainLog() -> [SandboxGatewayRequestRecord] {
        defer { log.removeAll(keepingCapacity: true) }
        return log
    }

    func stats(now: Date = Date()) -> SandboxGatewayStats {
        var stats = SandboxGatewayStats()
        stats.requests = requests
        stats.accepted = accepted
        stats.outcomes = outcomes
        stats.keys = keys
        stats.tokensSeen = tokens.count
        for (token, counts) in tokens where counts.accepted > 0 {
            stats.tokensAccepted += 1
            if counts.accepted > 1 {
                stats.acceptedMoreThanOnce[token] = Int(counts.accepted)
                stats.duplicateAccepts += Int(counts.accepted) - 1
            }
        }
        stats.takenAt = now.timeIntervalSince1970
        return stats
    }

    /// Forgets what was seen; keeps whether to observe and log.
    mutating func reset() {
        self = SandboxGatewayTally(observing: observing, logging: logging)
    }

    static let acceptedOutcome = "accepted"
}
