import Foundation
import NotifiableStore
import NotifiableTesting
import Testing

/// Requests seen are recorded in batches: of one request arriving many times at once, exactly one
/// is admitted, whichever batch its copies fall in; a forgotten one is admitted again.
@Suite struct SeenRequestStoreTests {
    @Test func ofManyCopiesAtOnceOneIsAdmittedAndDistinctRequestsAllAre() async throws {
        try await withTestService { _, service in
            let seen = SeenRequestStore(client: service.postgres, logger: TestDatabase.logger, writers: 2, batchLimit: 7)
            let until = Date().addingTimeInterval(900)
            let copy = (0..<16).map { _ in UInt8.random(in: 0...255) }
            let distinct = (0..<40).map { _ in (0..<16).map { _ in UInt8.random(in: 0...255) } }
            let admitted = try await withThrowingTaskGroup(of: (Bool, Bool).self) { group in
                for _ in 0..<30 { group.addTask { (true, try await seen.admit(copy, until: until)) } }
                for digest in distinct { group.addTask { (false, try await seen.admit(digest, until: until)) } }
                var copies = 0, others = 0
                for try await (isCopy, wasAdmitted) in group where wasAdmitted {
                    if isCopy { copies += 1 } else { others += 1 }
                }
                return (copies, others)
            }
            #expect(admitted.0 == 1, "copies admitted")
            #expect(admitted.1 == distinct.count)
            #expect(try await seen.admit(copy, until: until) == false)
            await seen.forget(copy, logger: TestDatabase.logger)
            #expect(try await seen.admit(copy, until: until))
        }
    }
}
