import Foundation
import NotifiableCore
import PostgresNIO

extension LiveActivityStore {
    /// Asks for a broadcast channel for the activity (making the activity when it is new); a worker
    /// makes it at Apple. An activity that has one asked for or made keeps it.
    public func requestChannel(appID: Int64, activityID: String, messageStorage: Bool) async throws -> ActivityChannel {
        let channel = try await Self.unwrapped {
            try await client.withTransaction(logger: logger) { connection in
                _ = try await lockActivity(appID: appID, activityID: activityID, starting: false, first: nil, on: connection)
                return try await ActivityChannels.request(
                    appID: appID, activityID: activityID, messageStorage: messageStorage, on: connection, logger: logger)
            }
        }
        if channel.state == .requested { await wakeWorkers(client, logger: logger, for: .channels) }
        return channel
    }
}
