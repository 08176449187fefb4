import FirestoreModel
import GoogleClients
import Synchronization
import Testing

@testable import HeraldRuntime

/// Busy groups, requests per event: reads that wait while the lanes are busy go in one `batchGet`, each
/// caller getting exactly its own documents; when nothing is busy a read goes at once; a failure reaches
/// every caller of its batch and the lane goes on. Records of pushes share one commit the same way, and
/// go each on its own when the shared one fails.
@Suite struct RequestGathererTests {
    typealias Reads = RequestGatherer<[DocumentName], [DocumentName: FirestoreDocument?]>

    struct Refused: Error {}

    /// Answers `batchGet` from a fixed set of documents, holding every request until the gate opens.
    final class GatedFirestore: FirestoreAPI {
        let project = "p"
        let database = "(default)"
        let stored: [DocumentName: FirestoreDocument]
        /// The names of each request, in order.
        let requests = Mutex<[[DocumentName]]>([])
        let gate = Mutex<(open: Bool, held: [CheckedContinuation<Void, Never>])>((true, []))
        /// Requests from this index on are refused.
        let refuseFrom: Int
        /// The writes of each commit, in order; a commit writing one of `refused` is refused.
        let commits = Mutex<[[Write]]>([])
        let refused: Set<DocumentName>

        init(stored: [FirestoreDocument], closed: Bool = false, refuseFrom: Int = .max, refused: Set<DocumentName> = []) {
            self.stored = Dictionary(uniqueKeysWithValues: stored.map { ($0.name, $0) })
            self.refuseFrom = refuseFrom
            self.refused = refused
            gate.withLock { $0.open = !closed }
        }

        func close() { gate.withLock { $0.open = false } }

        func open() {
            let held = gate.withLock { gate in
                gate.open = true
                defer { gate.held = [] }
                return gate.held
            }
            for continuation in held { continuation.resume() }
        }

        func batchGet(_ names: [DocumentName], transaction: String?) async throws -> [DocumentName: FirestoreDocument?] {
            let index = requests.withLock { requests in
                requests.append(names)
                return requests.count - 1
            }
            await passGate()
            if index >= refuseFrom { throw Refused() }
            return Dictionary(uniqueKeysWithValues: Set(names).map { ($0, stored[$0]) })
        }

        func passGate() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let open = gate.withLock { gate in
                    if !gate.open { gate.held.append(continuation) }
                    return gate.open
                }
                if open { continuation.resume() }
            }
        }

        func runQuery(_ query: StructuredQuery, parent: DocumentName?, transaction: String?) async throws -> [FirestoreDocument] { throw Refused() }
        func forEachPage(of query: StructuredQuery, parent: DocumentName?, pageSize: Int, _ body: ([FirestoreDocument]) async throws -> Void) async throws {
            throw Refused()
        }
        func commit(_ writes: [Write], transaction: String?) async throws -> FirestoreClient.CommitResult { throw Refused() }
        func commitIdempotent(_ writes: [Write], retry: RetryPolicy?, deadline: ContinuousClock.Instant?, essential: Bool) async throws
            -> FirestoreClient.CommitResult
        {
            commits.withLock { $0.append(writes) }
            await passGate()
            if writes.contains(where: { refused.contains($0.document) }) { throw Refused() }
            return FirestoreClient.CommitResult(
                commitTime: Timestamp(seconds: 1), updateTimes: writes.map { _ in nil }, transformResults: writes.map { _ in [] })
        }
        func batchWrite(_ writes: [Write]) async throws -> [FirestoreClient.WriteOutcome] { throw Refused() }
    }

    /// Longer than any wait in these tests, so no part goes alone for having waited (but in the test of that).
    static let longPatience = Duration.seconds(600)

    static func name(_ id: String) throws -> DocumentName { try DocumentName(project: "p", path: "docs/\(id)") }

    /// Documents d0…d9 exist; others are missing.
    static func stored() throws -> [FirestoreDocument] {
        try (0..<10).map { FirestoreDocument(name: try name("d\($0)"), fields: ["n": .integer(Int64($0))], updateTime: Timestamp(seconds: 5)) }
    }

    /// Waits until `count` reads wait for a lane (a condition, not a time).
    static func waitUntil<Part, Answer>(_ gatherer: RequestGatherer<Part, Answer>, waiting count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while gatherer.waitingCount < count {
            guard ContinuousClock.now < deadline else { throw Refused() }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    @Test func whenNothingIsBusyAReadGoesAtOnce() async throws {
        let firestore = GatedFirestore(stored: try Self.stored())
        let gatherer = DocumentReads.gatherer(firestore, lanes: 1, patience: Self.longPatience)
        for id in ["d1", "d2", "x"] {
            let found = try await gatherer([try Self.name(id)])
            #expect(found.count == 1)
            #expect(found[try Self.name(id)]??.name == (id == "x" ? nil : try Self.name(id)))
        }
        #expect(firestore.requests.withLock { $0.count } == 3)
    }

    @Test func readsWaitingWhileTheLanesAreBusyGoInOneRequest() async throws {
        let firestore = GatedFirestore(stored: try Self.stored(), closed: true)
        let gatherer = DocumentReads.gatherer(firestore, lanes: 1, patience: Self.longPatience)
        let asked: [[String]] = [["d1"], ["d2", "d3"], ["d3", "x1"], ["d4"], ["x2"]]
        try await withThrowingTaskGroup(of: ([String], [DocumentName: FirestoreDocument?]).self) { group in
            group.addTask { (["d0"], try await gatherer([try Self.name("d0")])) }
            try await Self.waitUntilRequested(firestore, 1)
            for ids in asked {
                group.addTask { (ids, try await gatherer(try ids.map(Self.name))) }
            }
            try await Self.waitUntil(gatherer, waiting: asked.count)
            firestore.open()
            for try await (ids, found) in group {
                // Each caller gets its own documents, found or missing, and nobody else's.
                #expect(Set(found.keys) == Set(try ids.map(Self.name)), "\(ids)")
                for id in ids { #expect((found[try Self.name(id)]! == nil) == id.hasPrefix("x"), "\(id)") }
            }
        }
        let requests = firestore.requests.withLock { $0 }
        #expect(requests.count == 2, "\(requests)")
        #expect(Set(requests.last ?? []) == Set(try asked.joined().map(Self.name)))
        #expect(gatherer.counts.requests == 2 && gatherer.counts.parts == 1 + asked.count)
    }

    @Test func aBatchCarriesNoMoreThanItsMaximumUnlessOneReadIsBigger() async throws {
        let firestore = GatedFirestore(stored: try Self.stored(), closed: true)
        let gatherer = DocumentReads.gatherer(firestore, lanes: 1, maximum: 3, patience: Self.longPatience)
        let asked: [[String]] = [["d1", "d2", "d3", "d4"], ["d5", "d6"], ["d7"], ["d8", "d9"]]
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { _ = try await gatherer([try Self.name("d0")]) }
            try await Self.waitUntilRequested(firestore, 1)
            for (index, ids) in asked.enumerated() {
                group.addTask { _ = try await gatherer(try ids.map(Self.name)) }
                try await Self.waitUntil(gatherer, waiting: index + 1)  // in this order
            }
            firestore.open()
            try await group.waitForAll()
        }
        let sizes = firestore.requests.withLock { $0.map(\.count) }
        #expect(sizes == [1, 4, 3, 2], "one alone, the oversized alone, then as many as fit in order")
    }

    @Test func aFailureReachesEveryCallerOfItsBatchAndTheLaneGoesOn() async throws {
        let firestore = GatedFirestore(stored: try Self.stored(), closed: true, refuseFrom: 1)
        let gatherer = DocumentReads.gatherer(firestore, lanes: 1, patience: Self.longPatience)
        let failures = try await withThrowingTaskGroup(of: Bool?.self) { group in
            group.addTask {
                _ = try await gatherer([try Self.name("d0")])
                return nil
            }
            try await Self.waitUntilRequested(firestore, 1)
            for id in ["d1", "d2"] {
                group.addTask { (try? await gatherer([try Self.name(id)])) == nil }
            }
            try await Self.waitUntil(gatherer, waiting: 2)
            firestore.open()
            var failures: [Bool] = []
            for try await failed in group { if let failed { failures.append(failed) } }
            return failures
        }
        #expect(failures == [true, true])
        // The lane was handed back: the next read goes (and is refused by this Firestore, not left waiting).
        await #expect(throws: Refused.self) { _ = try await gatherer([try Self.name("d3")]) }
        #expect(gatherer.waitingCount == 0)
    }

    static func waitUntilRequested(_ firestore: GatedFirestore, _ count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while firestore.requests.withLock({ $0.count }) < count {
            guard ContinuousClock.now < deadline else { throw Refused() }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    /// Two events' records wait while the lane is busy: one commit carries both. When a shared commit is
    /// refused (here: one event's ledger entry is gone), each record goes on its own, so the other event's
    /// record is still written and only the refused one fails.
    @Test func recordsShareACommitAndGoAloneWhenItFails() async throws {
        let entries = try (0..<6).map { try DocumentName(project: "p", path: "_herald/events/ledger/e\($0)") }
        let firestore = GatedFirestore(stored: [], closed: true, refused: [entries[4]])
        let records = RequestGatherer<PushRecord, Result<Void, any Error>>(
            lanes: 1, maximum: 200, patience: Self.longPatience, size: { $0.writes.count }, send: { await PushDelivery.commit($0, firestore) })
        func record(_ entry: DocumentName) -> PushRecord {
            PushRecord(
                writes: [Write(.update(entry, fields: ["pushes": .map([:])], mask: [FieldPath("pushes")]), precondition: .exists(true))],
                deadline: .now + .seconds(30))
        }
        var failed: [Int: Bool] = [:]
        // Record 0 (then 5) holds the lane while two records wait.
        for (first, waiting) in [(0, [1, 2]), (5, [3, 4])] {
            firestore.close()
            let outcomes = try await withThrowingTaskGroup(of: (Int, Bool).self) { group in
                let before = firestore.commits.withLock { $0.count }
                group.addTask { (first, (try? await records(record(entries[first])).get()) == nil) }
                while firestore.commits.withLock({ $0.count }) == before { try await Task.sleep(for: .milliseconds(2)) }
                for index in waiting { group.addTask { (index, (try? await records(record(entries[index])).get()) == nil) } }
                try await Self.waitUntil(records, waiting: waiting.count)
                firestore.open()
                var outcomes: [Int: Bool] = [:]
                for try await (index, didFail) in group { outcomes[index] = didFail }
                return outcomes
            }
            failed.merge(outcomes) { $1 }
        }
        #expect(failed == [0: false, 1: false, 2: false, 3: false, 4: true, 5: false])
        let commits = firestore.commits.withLock { $0.map { Set($0.map(\.document)) } }
        #expect(Array(commits.prefix(4)) == [[entries[0]], [entries[1], entries[2]], [entries[5]], [entries[3], entries[4]]], "\(commits)")
        #expect(Set(commits.dropFirst(4)) == [[entries[3]], [entries[4]]], "after the shared commit was refused, each alone: \(commits)")
    }

    /// A request that takes longer than the patience (Firestore hanging) holds nobody: the parts behind
    /// it go each on its own, as without gathering, so an outage meets every event's own request.
    @Test func behindASlowRequestEachGoesOnItsOwn() async throws {
        let firestore = GatedFirestore(stored: try Self.stored(), closed: true)
        let gatherer = DocumentReads.gatherer(firestore, lanes: 1, patience: .milliseconds(50))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for id in ["d0", "d1", "d2"] {
                group.addTask { _ = try await gatherer([try Self.name(id)]) }
                try await Self.waitUntilRequested(firestore, 1)
            }
            // Still held at Firestore: the two behind the first went after 50 ms, each in its own request.
            try await Self.waitUntilRequested(firestore, 3)
            #expect(gatherer.waitingCount == 0)
            firestore.open()
            try await group.waitForAll()
        }
        #expect(firestore.requests.withLock { $0.map(\.count) } == [1, 1, 1])
    }
}
