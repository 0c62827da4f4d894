import Foundation
import Hummingbird
import HummingbirdTesting
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import PostgresNIO
import Testing

/// PostgreSQL sends an autocommit statement's rows and CommandComplete before it commits (the
/// extended protocol commits at Sync), and PostgresNIO answers at CommandComplete. A commit can
/// still fail after that: on a primary that dies while its synchronous standby confirms, or, as
/// staged here, in a deferred constraint trigger that runs at commit. What the service answers or
/// acts on must wait for the commit.
@Suite struct AcknowledgedMeansCommittedTests {
    /// Makes commits that wrote the named row of `table` fail, as a commit lost with its primary.
    static func failCommits(of table: String, where condition: String, on service: TestService) async throws {
        try await service.postgres.query(
            PostgresQuery(
                unsafeSQL: """
                    CREATE FUNCTION refuse_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN
                        RAISE EXCEPTION 'commit refused' USING ERRCODE = '57P01';
                    END $$
                    """), logger: TestDatabase.logger)
        try await service.postgres.query(
            PostgresQuery(
                unsafeSQL: """
                    CREATE CONSTRAINT TRIGGER refuse_at_commit AFTER INSERT OR UPDATE ON \(table)
                    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (\(condition)) EXECUTE FUNCTION refuse_at_commit()
                    """), logger: TestDatabase.logger)
    }

    @Test func aRegistrationWhoseCommitFailsIsNotAcknowledged() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            let token = Pipeline.token(0xC0_4417)
            try await Self.failCommits(of: "devices", where: "NEW.token = '\(token)'", on: service)
            let body = #"{"device_token": {"provider": "apns", "token": "\#(token)"}}"#
            let answer = try await client.signed(.post, "/api/v1/device_tokens", body: body, as: app.deviceCredential)
            #expect(answer.status == .serviceUnavailable, "answered \(answer.status) for a registration that was not committed")
            #expect(try await service.integer("SELECT count(*) FROM devices WHERE token = \(token)") == 0)
        }
    }

    @Test func aClaimWhoseCommitFailsHandsOutNothing() async throws {
        try await withTestService(isolatedDatabase: true) { client, service in
            let app = try await service.createApp()
            let (_, id) = try await Pipeline.queuedPush(client, service, app, token: Pipeline.token(0xC0_4418))
            try await Self.failCommits(of: "deliveries", where: "NEW.state = 'running'", on: service)
            let queue = DeliveryQueueStore(client: service.postgres, logger: TestDatabase.logger)
            await #expect(throws: (any Error).self) { try await queue.claim(limit: 10, lease: .seconds(30)) }
            #expect(try await service.deliveries(of: id, in: "available") == 1)
        }
    }
}
