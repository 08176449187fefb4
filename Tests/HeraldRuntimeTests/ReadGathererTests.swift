import FirestoreModel
import GoogleClients
import Synchronization
import Testing

@testable import HeraldRuntime

/// Busy groups, requests per event: reads that wait while the lanes are busy go in one `batchGet`, each
/// caller getting exactly its own documents; when nothing is busy a read goes at once; a failure reaches
/// every caller of its batch and the lane goes on.
@Suite struct ReadGathererTests {
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

        init(stored: [FirestoreDocument], closed: Bool = false, refuseFrom: Int = .max) {
            self.stored = Dictionary(uniqueKeysWithValues: stored.map { ($0.name, $0) })
            self.refuseFrom = refuseFrom
            gate.withLock { $0.open = !closed }
        }

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
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let open = gate.withLock { gate in
                    if !gate.open { gate.held.append(continuation) }
                    return gate.open
                }
                if open { continuation.resume() }
            }
            if index >= refuseFrom { throw Refused() }
            return Dictionary(uniqueKeysWithValues: Set(names).map { ($0, stored[$0]) })
        }

        func runQuery(_ query: StructuredQuery, parent: DocumentName?, transaction: String?) async throws -> [FirestoreDocument] { throw Refused() }
        func forEachPage(of query: StructuredQuery, parent: DocumentName?, pageSize: Int, _ body: ([FirestoreDocument]) async throws -> Void) async throws {
            throw Refused()
        }
        func commit(_ writes: [Write], transaction: String?) async throws -> FirestoreClient.CommitResult { throw Refused() }
        func commitIdempotent(_ writes: [Write], retry: RetryPolicy?, deadline: ContinuousClock.Instant?, essential: Bool) async throws
            -> FirestoreClient.CommitResult
        { throw Refused() }
        func batchWrite(_ writes: [Write]) async throws -> [FirestoreClient.WriteOutcome] { throw Refused() }
    }

    static func name(_ id: String) throws -> DocumentName { try DocumentName(project: "p", path: "docs/\(id)") }

    /// Documents d0…d9 exist; others are missing.
    static func stored() throws -> [FirestoreDocument] {
        try (0..<10).map { FirestoreDocument(name: try name("d\($0)"), fields: ["n": .integer(Int64($0))], updateTime: Timestamp(seconds: 5)) }
    }

    /// Waits until `count` reads wait for a lane (a condition, not a time).
    static func waitUntil(_ gatherer: ReadGatherer, waiting count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while gatherer.waitingCount < count {
            guard ContinuousClock.now < deadline else { throw Refused() }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    @Test func whenNothingIsBusyAReadGoesAtOnce() async throws {
        let firestore = GatedFirestore(stored: try Self.stored())
        let gatherer = ReadGatherer(firestore: firestore, lanes: 1)
        for id in ["d1", "d2", "x"] {
            let found = try await gatherer.batchGet([try Self.name(id)])
            #expect(found.count == 1)
            #expect(found[try Self.name(id)]??.name == (id == "x" ? nil : try Self.name(id)))
        }
        #expect(firestore.requests.withLock { $0.count } == 3)
    }

    @Test func readsWaitingWhileTheLanesAreBusyGoInOneRequest() async throws {
        let firestore = GatedFirestore(stored: try Self.stored(), closed: true)
        let gatherer = ReadGatherer(firestore: firestore, lanes: 1)
        let asked: [[String]] = [["d1"], ["d2", "d3"], ["d3", "x1"], ["d4"], ["x2"]]
        try await withThrowingTaskGroup(of: ([String], ReadGatherer.Found).self) { group in
            group.addTask { (["d0"], try await gatherer.batchGet([try Self.name("d0")])) }
            try await Self.waitUntilRequested(firestore, 1)
            for ids in asked {
                group.addTask { (ids, try await gatherer.batchGet(try ids.map(Self.name))) }
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
        #expect(gatherer.counts.requests == 2 && gatherer.counts.reads == 1 + asked.count)
    }

    @Test func aBatchCarriesNoMoreThanItsMaximumUnlessOneReadIsBigger() async throws {
        let firestore = GatedFirestore(stored: try Self.stored(), closed: true)
        let gatherer = ReadGatherer(firestore: firestore, lanes: 1, maximumDocuments: 3)
        let asked: [[String]] = [["d1", "d2", "d3", "d4"], ["d5", "d6"], ["d7"], ["d8", "d9"]]
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { _ = try await gatherer.batchGet([try Self.name("d0")]) }
            try await Self.waitUntilRequested(firestore, 1)
            for (index, ids) in asked.enumerated() {
                group.addTask { _ = try await gatherer.batchGet(try ids.map(Self.name)) }
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
        let gatherer = ReadGatherer(firestore: firestore, lanes: 1)
        let failures = try await withThrowingTaskGroup(of: Bool?.self) { group in
            group.addTask {
                _ = try await gatherer.batchGet([try Self.name("d0")])
                return nil
            }
            try await Self.waitUntilRequested(firestore, 1)
            for id in ["d1", "d2"] {
                group.addTask { (try? await gatherer.batchGet([try Self.name(id)])) == nil }
            }
            try await Self.waitUntil(gatherer, waiting: 2)
            firestore.open()
            var failures: [Bool] = []
            for try await failed in group { if let failed { failures.append(failed) } }
            return failures
        }
        #expect(failures == [true, true])
        // The lane was handed back: the next read goes (and is refused by this Firestore, not left waiting).
        await #expect(throws: Refused.self) { _ = try await gatherer.batchGet([try Self.name("d3")]) }
        #expect(gatherer.waitingCount == 0)
    }

    static func waitUntilRequested(_ firestore: GatedFirestore, _ count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while firestore.requests.withLock({ $0.count }) < count {
            guard ContinuousClock.now < deadline else { throw Refused() }
            try await Task.sleep(for: .milliseconds(2))
        }
    }
}
