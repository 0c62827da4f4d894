import NotifiableCore
import NotifiableTesting
import PostgresNIO
import Testing

@testable import NotifiableStore

/// Registrations that wait together are written in one statement, and each caller still gets
/// exactly its own device. To make them wait together, a transaction holds the row that the one
/// writer is upserting; what arrives meanwhile forms the next batch.
@Suite struct RegistrationBatcherTests {
    static func registration(app: Int64, token: String, alias: String?, name: String? = nil) -> Registration {
        var fields = DeviceFields()
        fields.provider = .apns
        fields.token = token
        fields.userAlias = .set(alias)
        if let name { fields.name = .set(name) }
        return Registration(appID: app, provider: .apns, token: token, binds: ColumnBinds(fields))
    }

    /// One writer whose statement may wait behind a held row for as long as `whileAWriteIsHeld` waits for
    /// the rest to arrive: under the default 10 s deadline a slow machine made the held write give up.
    static func heldBatcher(_ service: TestService) -> RegistrationBatcher {
        RegistrationBatcher(client: service.postgres, logger: TestDatabase.logger, writers: 1, statementDeadline: .seconds(120))
    }

    static func token(_ n: Int) -> String { String(repeating: "0", count: 56) + String(format: "%08x", n) }

    /// Runs `arrivals` while a transaction holds the row of `heldToken`, which the batcher is
    /// upserting first, and lets the row go once `expectedWaiting` registrations wait.
    static func whileAWriteIsHeld<T: Sendable>(
        _ service: TestService, _ batcher: RegistrationBatcher, app: Int64, heldToken: String, expectedWaiting: Int,
        _ arrivals: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let (heldWrite, result, waited) = try await service.postgres.withTransaction(logger: TestDatabase.logger) { connection in
            _ = try await connection.query(
                "SELECT id FROM devices WHERE app_id = \(app) AND token = \(heldToken) FOR UPDATE", logger: TestDatabase.logger
            )
            let heldWrite = Task { try await batcher.register(registration(app: app, token: heldToken, alias: "held")) }
            let result = Task { try await arrivals() }
            // Generous: the loop ends as soon as they wait, and on a loaded CI machine, running the
            // whole suite in parallel, four tasks once took more than 20 s to be scheduled.
            let deadline = ContinuousClock.now + .seconds(90)
            while batcher.waitingCount < expectedWaiting, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            // Checked after the transaction ends: until then the held write cannot finish.
            return (heldWrite, result, batcher.waitingCount)
        }
        _ = try await heldWrite.value
        let value = try await result.value
        #expect(waited == expectedWaiting, "the registrations did not all wait for the held write")
        return value
    }

    @Test func registrationsThatWaitTogetherAreWrittenTogetherAndEachGetsItsOwnDevice() async throws {
        try await withTestService { _, service in
            let app = try await service.createApp().app.id
            let batcher = Self.heldBatcher(service)
            let held = Self.token(0)
            let named = try await batcher.register(Self.registration(app: app, token: Self.token(1), alias: "old", name: "Old name"))
            _ = try await batcher.register(Self.registration(app: app, token: held, alias: "first"))
            #expect(batcher.statementsRun == 2)

            // 40 new tokens; the named device re-registered without a name (it keeps it); one of the 40
            // again in upper case (the same device: it cannot share their statement); and one that sets a
            // name (the statement sets a column for all its rows or for none).
            let devices = try await Self.whileAWriteIsHeld(service, batcher, app: app, heldToken: held, expectedWaiting: 43) {
                try await withThrowingTaskGroup(of: (String, Device).self) { group in
                    for n in 2..<42 {
                        group.addTask { ("new \(n)", try await batcher.register(Self.registration(app: app, token: Self.token(n), alias: "user-\(n)"))) }
                    }
                    group.addTask { ("renamed", try await batcher.register(Self.registration(app: app, token: Self.token(1), alias: "moved"))) }
                    group.addTask { ("upper", try await batcher.register(Self.registration(app: app, token: Self.token(2).uppercased(), alias: "upper"))) }
                    group.addTask { ("named", try await batcher.register(Self.registration(app: app, token: Self.token(42), alias: "n", name: "Named"))) }
                    return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
                }
            }
            // The held one; the 40 and the renamed device together; the upper-case spelling; the one with a name.
            #expect(batcher.statementsRun == 2 + 1 + 1 + 1 + 1)
            for n in 2..<42 {
                let device = try #require(devices["new \(n)"])
                #expect(device.appID == app)
                if n != 2 {
                    #expect(device.token == Self.token(n))
                    #expect(device.userAlias == "user-\(n)")
                }
            }
            let moved = try #require(devices["renamed"])
            #expect(moved.id == named.id)
            #expect(moved.userAlias == "moved")
            #expect(moved.name == "Old name", "a registration without a name keeps the device's")
            let upper = try #require(devices["upper"])
            #expect(upper.id == devices["new 2"]?.id, "one device per token in any case")
            #expect(upper.token == Self.token(2).uppercased())
            #expect(devices["named"]?.name == "Named")
            #expect(try await service.integer("SELECT count(*) FROM devices WHERE app_id = \(app)") == 43)
            // Whichever of the two spellings waited longer went second and holds the row now.
            let sameToken = "SELECT count(*) FROM devices WHERE app_id = \(app) AND lower(token) = '\(Self.token(2))'"
            #expect(try await service.integer("\(unescaped: sameToken)") == 1)
            #expect(try await service.integer("\(unescaped: sameToken) AND user_alias IN ('upper', 'user-2')") == 1)
        }
    }

    @Test func aRowPostgreSQLRefusesFailsAloneAndTheRestOfItsBatchIsWritten() async throws {
        try await withTestService { _, service in
            let app = try await service.createApp().app.id
            let batcher = Self.heldBatcher(service)
            let held = Self.token(0)
            _ = try await batcher.register(Self.registration(app: app, token: held, alias: "first"))

            // An app deleted while its registration waited: its row breaks the foreign key.
            let missingApp = app + 1_000_000
            let outcomes = try await Self.whileAWriteIsHeld(service, batcher, app: app, heldToken: held, expectedWaiting: 11) {
                await withTaskGroup(of: (Int, Result<Device, any Error>).self) { group in
                    for n in 1...11 {
                        group.addTask {
                            let owner = n == 6 ? missingApp : app
                            do {
                                return (n, .success(try await batcher.register(Self.registration(app: owner, token: Self.token(n), alias: "u\(n)"))))
                            } catch {
                                return (n, .failure(error))
                            }
                        }
                    }
                    return await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
                }
            }
            for n in 1...11 {
                switch outcomes[n] {
                case .success(let device)?:
                    #expect(n != 6, "the registration for a missing app was stored")
                    #expect(device.token == Self.token(n))
                    #expect(device.userAlias == "u\(n)")
                case .failure(let error)?:
                    #expect(n == 6, "registration \(n) failed: \(String(reflecting: error))")
                    #expect(isMissingReference(error), "\(String(reflecting: error))")
                case nil:
                    Issue.record("registration \(n) did not answer")
                }
            }
            #expect(try await service.integer("SELECT count(*) FROM devices WHERE app_id = \(app)") == 11)
        }
    }

    @Test func aStatementHeldPastItsDeadlineTellsItsCallersToComeBackAndTheWriterGoesOn() async throws {
        try await withTestService { _, service in
            let app = try await service.createApp().app.id
            let batcher = RegistrationBatcher(
                client: service.postgres, logger: TestDatabase.logger, writers: 1, statementDeadline: .milliseconds(300)
            )
            let held = Self.token(0)
            _ = try await batcher.register(Self.registration(app: app, token: held, alias: "first"))
            let refusal: (any Error)? = try await service.postgres.withTransaction(logger: TestDatabase.logger) { connection in
                _ = try await connection.query(
                    "SELECT id FROM devices WHERE app_id = \(app) AND token = \(held) FOR UPDATE", logger: TestDatabase.logger
                )
                do {
                    _ = try await batcher.register(Self.registration(app: app, token: held, alias: "blocked"))
                    return nil
                } catch {
                    return error
                }
            }
            let error = try #require(refusal, "a registration held behind a lock past the deadline was answered")
            #expect(error is DatabaseDidNotAnswer, "\(String(reflecting: error))")
            #expect(isDatabaseUnavailable(error), "answered 503 with Retry-After, like an absent database")
            let next = try await batcher.register(Self.registration(app: app, token: Self.token(1), alias: "next"))
            #expect(next.userAlias == "next")
        }
    }

    @Test func aBatchWhoseConnectionTheServerEndsTellsEveryCallerAtOnceInsteadOfTryingEachRow() async throws {
        try await withTestService { _, service in
            let app = try await service.createApp().app.id
            let batcher = Self.heldBatcher(service)
            let first = Self.token(0), second = Self.token(1)
            _ = try await batcher.register(Self.registration(app: app, token: first, alias: "a"))
            _ = try await batcher.register(Self.registration(app: app, token: second, alias: "b"))
            let statementsBefore = batcher.statementsRun

            // The second row is held for the whole test; the first only until the batch behind it formed.
            let outcomes = try await service.postgres.withTransaction(logger: TestDatabase.logger) { holdsSecond in
                _ = try await holdsSecond.query(
                    "SELECT id FROM devices WHERE app_id = \(app) AND token = \(second) FOR UPDATE", logger: TestDatabase.logger
                )
                var holder: Int32 = 0
                for try await pid in try await holdsSecond.query("SELECT pg_backend_pid()", logger: TestDatabase.logger).decode(Int32.self) {
                    holder = pid
                }
                let batch = try await Self.whileAWriteIsHeld(service, batcher, app: app, heldToken: first, expectedWaiting: 4) {
                    Task {
                        await withTaskGroup(of: Result<Device, any Error>.self) { group in
                            for n in 1...4 {
                                group.addTask {
                                    do {
                                        return .success(try await batcher.register(Self.registration(app: app, token: Self.token(n), alias: "n\(n)")))
                                    } catch {
                                        return .failure(error)
                                    }
                                }
                            }
                            return await group.reduce(into: []) { $0.append($1) }
                        }
                    }
                }
                // The four wait behind the second row's lock in one statement; the server ends its connection,
                // as a restart or an administrator would (57P01).
                let deadline = ContinuousClock.now + .seconds(90)
                var terminated = false
                while !terminated, ContinuousClock.now < deadline {
                    terminated =
                        try await service.integer(
                            """
                            SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE \(holder) = ANY(pg_blocking_pids(pid))
                            """) == 1
                    if !terminated { try await Task.sleep(for: .milliseconds(20)) }
                }
                try #require(terminated, "the batch never waited on the held row")
                let start = ContinuousClock.now
                let outcomes = await batch.value
                return (outcomes, ContinuousClock.now - start)
            }
            #expect(outcomes.0.count == 4)
            for outcome in outcomes.0 {
                guard case .failure(let error) = outcome else {
                    Issue.record("a registration of the ended batch was written row by row instead")
                    continue
                }
                #expect(isDatabaseUnavailable(error), "\(String(reflecting: error))")
            }
            // Promptly rather than at the statement deadline (120 s), however slow the machine.
            #expect(outcomes.1 < .seconds(60))
            #expect(batcher.statementsRun == statementsBefore + 2, "the held one, then the ended batch, and no statement per row")
        }
    }
}
