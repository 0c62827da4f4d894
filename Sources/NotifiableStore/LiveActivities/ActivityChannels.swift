import Foundation
import Logging
import NotifiableCore
import PostgresNIO

/// Where an activity's broadcast channel stands (`live_activities.channel_state`).
public enum ActivityChannelState: String, Sendable, Codable {
    /// Asked for; a worker makes it at Apple.
    case requested
    /// Made: `channelID` is what devices subscribe with, and every update or end is broadcast.
    case open
    /// The activity ended: a worker deletes the channel once its last broadcast settled.
    case closing
    /// Deleted at Apple (or never made there).
    case closed
    /// Apple refused to make it (`error` says why); asking again tries again.
    case failed
}

/// An activity's broadcast channel as the API shows it.
public struct ActivityChannel: Sendable, Equatable {
    public let state: ActivityChannelState
    public let channelID: String?
    public let messageStorage: Bool
    public let error: String?
}

/// One piece of work at Apple's channel management API, leased to a worker.
public struct ActivityChannelWork: Sendable, Equatable {
    public enum Action: Sendable, Equatable {
        case create(messageStorage: Bool)
        /// Delete `channelID`; nil when it was never made (the activity ended first).
        case delete(channelID: String?)
    }

    public let id: Int64
    public let appID: Int64
    public let activityID: String
    public let action: Action
    /// Attempts made before this one.
    public let attempts: Int
    /// Which lease this is (`channel_claims`): an answer is recorded under its own lease only.
    public let claim: Int
    /// The app sends to the built-in gateways.
    public let sandbox: Bool
}

/// The channel columns of `live_activities`: the API asks for a channel and an end closes it
/// (inside the event's transaction); the workers lease the work and record what Apple answered.
enum ActivityChannels {
    static let columns = "channel_state, channel_id, channel_message_storage, channel_error"

    /// Asks for a channel for the locked activity, unless it has one asked for or made.
    static func request(
        appID: Int64, activityID: String, messageStorage: Bool, on connection: PostgresConnection, logger: Logger
    ) async throws -> ActivityChannel {
        try await connection.query(
            """
            UPDATE live_activities SET channel_state = 'requested', channel_message_storage = \(messageStorage), channel_id = NULL,
                   channel_error = NULL, channel_attempts = 0, channel_run_at = now(), channel_locked_until = NULL
            WHERE app_id = \(appID) AND activity_id = \(activityID) AND (channel_state IS NULL OR channel_state IN ('failed', 'closed'))
            """,
            logger: logger
        )
        guard let channel = try await read(appID: appID, activityID: activityID, on: connection, logger: logger) else {
            throw StoreError(description: "live activity \(activityID) of app \(appID) has no channel after asking for one")
        }
        return channel
    }

    /// On the activity's end: its channel is deleted once its last broadcast settled.
    static func close(appID: Int64, activityID: String, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query(
            """
            UPDATE live_activities SET channel_state = 'closing', channel_run_at = now(), channel_attempts = 0
            WHERE app_id = \(appID) AND activity_id = \(activityID) AND channel_state IN ('requested', 'open')
            """,
            logger: logger
        )
    }

    static func read(appID: Int64, activityID: String, on connection: PostgresConnection, logger: Logger) async throws -> ActivityChannel? {
        let rows = try await connection.query(
            "SELECT \(unescaped: columns) FROM live_activities WHERE app_id = \(appID) AND activity_id = \(activityID)", logger: logger)
        for try await row in rows.decode((String?, String?, Bool, String?).self) { return channel(row) }
        return nil
    }

    /// The channel of a row of `columns`; nil when none was ever asked for.
    static func channel(_ row: (state: String?, id: String?, storage: Bool, error: String?)) -> ActivityChannel? {
        guard let state = row.state.flatMap(ActivityChannelState.init(rawValue:)) else { return nil }
        return ActivityChannel(state: state, channelID: row.id, messageStorage: row.storage, error: row.error)
    }
}
