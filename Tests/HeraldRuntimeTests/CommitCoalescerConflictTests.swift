import FirestoreModel
import GoogleClients
import HeraldHTTPClient
import HeraldTesting
import Synchronization
import Testing

@testable import HeraldRuntime

/// The coalescer where its commits meet something other than a quiet document: Firestore refusing
/// without a cause a read can show, a plan reading the version the coalescer is committing, a plan
/// writing one document twice.
@Suite struct CommitCoalescerConflictTests {
    /// Answers every commit with ABORTED (Firestore's "too much contention"), counting them.
    final class AbortingFirestore: ForwardingFirestore {
        let inner: FirestoreClient
        let commits = Mutex(0)
        init(_ inner: FirestoreClient) { self.inner = inner }
        func commit(_ writes: [Write], transaction: String?) async throws -> FirestoreClient.CommitResult {
            commits.withLock { $0 += 1 }
            throw GoogleAPIError(httpStatus: 409, status: .aborted, message: "Too much contention on these documents. Please try again.")
        }
    }

    /// Commits, then lets a plan's read meet the version just committed before the commit answers.
    final class ReadDuringCommitFirestore: ForwardingFirestore {
        let inner: FirestoreClient
        let coalescer = Mutex<CommitCoalescer?>(nil)
        init(_ inner: FirestoreClient) { self.inner = inner }
        func commit(_ writes: [Write], transaction: String?) async throws -> FirestoreClient.CommitResult {
            let result = try await inner.commit(writes, transaction: transaction)
            let found = try await inner.batchGet(Array(Set(writes.map(\.document))), transaction: nil)
            if let coalescer = coalescer.withLock({ $0 }) { await coalescer.observe(found.values.compactMap { $0 }) }
            return result
        }
    }

    /// A client of the local cloud, and a room whose count starts at `count`.
    static func room(in local: TestLocalCloud, count: Int64 = 0) async throws -> (FirestoreClient, DocumentName) {
        let db = FirestoreClient(project: "herald-test", endpoint: local.baseURL, credentials: EmulatorCredentials(), httpClient: .shared)
        let room = try db.name("rooms/busy")
        _ = try await db.commit([Write(.update(room, fields: ["count": .integer(count)], mask: nil))])
        return (db, room)
    }

    /// One more on the room's count, on condition that the room exists.
    static func increment(_ room: DocumentName) -> Write {
        Write(.transform(room), transforms: [FieldTransform(FieldPath("count"), .increment(.integer(1)))], precondition: .exists(true))
    }

    /// A commit Firestore keeps refusing while every document is as known here is tried again a turn
    /// later each time, not at once round trip after round trip, until its patience ends.
    @Test func aCommitRefusedWithoutACauseWaitsATurnBeforeTheNextTry() async throws {
        try await withLocalCloud { local in
            let (db, room) = try await Self.room(in: local)
            let aborting = AbortingFirestore(db)
            let coalescer = CommitCoalescer(firestore: aborting, cadence: CommitCadence(interval: .milliseconds(300)), patience: .seconds(3))
            let write = Self.increment(room)
            await #expect(throws: (any Error).self) { _ = try await coalescer.commit([write], order: .now()) }
            // At most one try a turn over the patience: 3 s / 0.3 s, and the first.
            let tries = aborting.commits.withLock { $0 }
            #expect(tries >= 2 && tries <= 15, "\(tries) commits in 3 s")
        }
    }

    /// A plan that reads a document while the coalescer's commit to it is under way meets that commit's
    /// version: it is not another writer's, so the next commit keeps its burst instead of waiting a turn.
    @Test func aVersionReadDuringItsOwnCommitIsNotAnotherWritersCommit() async throws {
        try await withLocalCloud { local in
            let (db, room) = try await Self.room(in: local)
            let reading = ReadDuringCommitFirestore(db)
            let coalescer = CommitCoalescer(firestore: reading)
            reading.coalescer.withLock { $0 = coalescer }
            // Its creation a turn ago, out of the bucket.
            try await Task.sleep(for: .milliseconds(1400))
            let write = Self.increment(room)
            _ = try await coalescer.commit([write], order: .now())
            _ = try await coalescer.commit([write], order: .now())
            #expect(await coalescer.commitsThatWaited == 0)
            #expect(try await db.get(room)?["count"] == .integer(2))
        }
    }

    /// A plan that writes one document twice in ways that cannot be one write (a whole document, then a
    /// count on it) commits as it would alone: both writes in order, the first conditional on the
    /// version known here, each with its own result.
    @Test func aCommitWritingOneDocumentTwiceGoesAsItWouldAlone() async throws {
        try await withLocalCloud { local in
            let (db, room) = try await Self.room(in: local, count: 5)
            let coalescer = CommitCoalescer(firestore: db)
            if let read = try await db.get(room) { await coalescer.observe([read]) }
            let writes = [
                Write(.update(room, fields: ["name": .string("Family")], mask: nil)),
                Self.increment(room),
            ]
            let result = try await coalescer.commit(writes, order: .now())
            #expect(result.updateTimes.count == 2)
            #expect(result.transformResults.last == [.integer(1)])
            let stored = try await db.get(room)
            #expect(stored?["name"] == .string("Family"))
            #expect(stored?["count"] == .integer(1), "the whole document replaced, then counted")
        }
    }
}
