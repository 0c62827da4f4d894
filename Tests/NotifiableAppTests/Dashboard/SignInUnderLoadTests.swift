import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NotifiableCore
import NotifiableStore
import NotifiableTesting
import Testing

@testable import NotifiableApp

/// A password takes scrypt's time to check, so sign-ins sent together must count together and
/// must not be checked all at once on the threads that answer every other request.
@Suite struct SignInUnderLoadTests {
    @Test func signInsSentTogetherCountTogether() async throws {
        try await withTestService(.live) { client, service in
            let account = try await ConsoleSession.addOperator(service, .viewer)
            let body = ByteBuffer(string: ConsoleSession.encode(["name": account.name, "password": "not the password, but long"]))
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<16 {
                    group.addTask {
                        try await client.execute(
                            uri: "/dashboard/login", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"], body: body
                        ).status
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            // Ten failures per minute are allowed: the other six are refused unchecked, however
            // quickly they came, where before they were all checked before any was counted.
            #expect(statuses.filter { $0 == .unauthorized }.count == 10, "\(statuses)")
            #expect(statuses.filter { $0 == .tooManyRequests }.count == 6, "\(statuses)")
        }
    }

    @Test func aSuccessfulSignInIsNotCountedAgainstTheClient() async throws {
        try await withTestService(.live) { client, service in
            let account = try await ConsoleSession.addOperator(service, .viewer)
            for _ in 0..<12 { _ = try await ConsoleSession.signIn(client, service, name: account.name, password: account.password) }
            let wrong = try await client.execute(
                uri: "/dashboard/login", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
                body: ByteBuffer(string: ConsoleSession.encode(["name": account.name, "password": "a wrong password here"])))
            #expect(wrong.status == .unauthorized, "twelve good sign-ins left the client its ten failures")
        }
    }

    @Test func passwordChecksRunAFewAtATimeAndTurnAwayTheRest() async throws {
        let checks = PasswordChecks(concurrent: 1, queued: 1)
        let hash = try PasswordHash.make("the right password", parameters: .init(rounds: 1 << 14, blockSize: 8, parallelism: 1))
        let outcomes = await withTaskGroup(of: String.self) { group in
            for _ in 0..<6 {
                group.addTask {
                    do {
                        return try await checks.matches("the right password", hash) ? "matched" : "refused"
                    } catch is PasswordChecks.Busy {
                        return "busy"
                    } catch {
                        return "\(error)"
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        // One runs, one waits its turn; the others are turned away at once.
        #expect(outcomes.filter { $0 == "matched" }.count >= 2, "\(outcomes)")
        #expect(outcomes.filter { $0 == "busy" }.count >= 1, "\(outcomes)")
        #expect(outcomes.allSatisfy { $0 == "matched" || $0 == "busy" }, "\(outcomes)")
        // Turns are handed back: later checks run.
        #expect(try await checks.matches("the right password", hash))
        #expect(try await checks.matches("another password!", hash) == false)
    }
}
