import Foundation
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import Testing

/// `notifiable operators keys create|list|revoke`: admin API keys from the command line.
@Suite struct OperatorKeysCommandTests {
    @Test func aKeyIsShownOnceListedWithoutItsTextAndRevoked() async throws {
        try await CLIFixture.with { cli in
            _ = try await cli.createApp()  // migrates the fresh database
            let hash = try PasswordHash.make("a long enough password", parameters: .init(rounds: 1 << 10, blockSize: 8, parallelism: 1))
            _ = try await cli.withPostgres {
                try await OperatorStore(client: $0, logger: TestDatabase.logger).add(name: "ops", role: .viewer, password: hash, appIDs: [])
            }

            let made = try await cli.run("operators", "keys", "create", "--name", "ops", "--label", "ci", "--expires-in-days", "30", "--json")
            #expect(made.status == 0, "\(made.output)")
            let json = try JSONValue.decode(Array(made.output.utf8))
            let key = try #require(json["key"]?.stringValue)
            #expect(OperatorKey.isWellFormed(key))
            #expect(json["operator"]?.stringValue == "ops")
            let check = try await cli.withPostgres { try await OperatorKeyStore(client: $0, logger: TestDatabase.logger).check(key) }
            guard case .valid(let holder, _) = check else {
                Issue.record("the key does not act as ops: \(check)")
                return
            }
            #expect(holder.name == "ops" && holder.role == .viewer)

            let listed = try await cli.run("operators", "keys", "list", "--name", "ops")
            #expect(listed.output.contains("\tops\tci\t") && listed.output.contains("\tlive\t"), "\(listed.output)")
            #expect(!listed.output.contains(key), "the key's text is never shown again")

            let id = try #require(json["id"]?.stringValue)
            #expect(try await cli.run("operators", "keys", "revoke", "--id", id).status == 0)
            #expect(try await cli.run("operators", "keys", "list").output.contains("\trevoked\t"))
            #expect(try await cli.run("operators", "keys", "revoke", "--id", id).output.contains("There is no live key \(id)"))
            #expect(try await cli.run("operators", "keys", "create", "--name", "nobody", "--label", "x").output.contains("There is no operator nobody"))
            let audited = try await cli.withPostgres { client in
                try await client.query("SELECT count(*) FROM audit_log WHERE action LIKE 'operators keys %' AND channel = 'cli'", logger: TestDatabase.logger)
                    .decode(Int64.self).first(where: { _ in true })
            }
            #expect(audited == 4, "create, revoke, a revoke that found nothing, a create that found no operator")
        }
    }
}
