import FirestoreModel
import GoogleClients
import HeraldCore
import Logging
import Synchronization
import Testing

@testable import HeraldRuntime

/// The executor's parts on their own, over a Firestore that keeps what it is sent: the claim on an
/// event's pushes (`PushDelivery`), the ledger as read back (`LedgerCommits`), and which devices a
/// badge correction is due to (`BadgeCorrections`). The executor's own suites run them together.
@Suite struct ExecutorPartsTests {
    struct Refused: Error {}

    /// Answers reads from `stored` and keeps every commit's writes.
    final class KeepingFirestore: FirestoreAPI {
        let project = "p"
        let database = "(default)"
        let stored: [DocumentName: FirestoreDocument]
        let reads = Mutex<[[DocumentName]]>([])
        let commits = Mutex<[[Write]]>([])

        init(_ stored: [FirestoreDocument] = []) { self.stored = Dictionary(uniqueKeysWithValues: stored.map { ($0.name, $0) }) }

        func batchGet(_ names: [DocumentName], transaction: String?) async throws -> [DocumentName: FirestoreDocument?] {
            reads.withLock { $0.append(names) }
            return Dictionary(uniqueKeysWithValues: Set(names).map { ($0, stored[$0]) })
        }
        func runQuery(_ query: StructuredQuery, parent: DocumentName?, transaction: String?) async throws -> [FirestoreDocument] { throw Refused() }
        func forEachPage(of query: StructuredQuery, parent: DocumentName?, pageSize: Int, _ body: ([FirestoreDocument]) async throws -> Void) async throws {
            throw Refused()
        }
        func commit(_ writes: [Write], transaction: String?) async throws -> FirestoreClient.CommitResult {
            commits.withLock { $0.append(writes) }
            return FirestoreClient.CommitResult(commitTime: .now(), updateTimes: writes.map { _ in .now() }, transformResults: writes.map { _ in [] })
        }
        func commitIdempotent(_ writes: [Write], retry: RetryPolicy?, deadline: ContinuousClock.Instant?, essential: Bool) async throws
            -> FirestoreClient.CommitResult
        { try await commit(writes, transaction: nil) }
        func batchWrite(_ writes: [Write]) async throws -> [FirestoreClient.WriteOutcome] { throw Refused() }
    }

    static let lease = Duration.seconds(60)

    static func delivery(_ firestore: KeepingFirestore) -> PushDelivery {
        let logger = Logger(label: "parts")
        let services = PushServices(fcm: nil, logger: logger)
        let reads = DocumentReads(firestore, commits: CommitCoalescer(firestore: firestore, metrics: nil))
        let budget = LeaseBudget(lease: lease)
        return PushDelivery(
            firestore: firestore, services: services, reads: reads, budget: budget, deadTokens: DeadTokenGuard(logger: logger),
            badges: BadgeCorrections(firestore: firestore, services: services, reads: reads, budget: budget, metrics: nil), logger: logger,
            metrics: nil, records: RequestGatherer(lanes: 1, maximum: 200, size: { $0.writes.count }, send: { await PushDelivery.commit($0, firestore) }))
    }

    static func entry(claims: [String: Timestamp], version: Timestamp) throws -> LedgerState {
        let main = FirestoreDocument(
            name: try DocumentName(project: "p", path: "_herald/events/ledger/k"), fields: ["claims": .map(claims.mapValues { .timestamp($0) })],
            updateTime: version)
        return LedgerState(main: main, parts: [])
    }

    @Test func aLiveClaimOfAnotherDeliveryHoldsThePushesBackAndWritesNothing() async throws {
        let firestore = KeepingFirestore()
        let now = Timestamp.now()
        let state = try Self.entry(claims: ["other": now.adding(.seconds(-5))], version: now)
        await #expect(throws: DownstreamError.self) { try await Self.delivery(firestore).claim(state, holder: "me") }
        #expect(firestore.commits.withLock { $0 }.isEmpty)
    }

    @Test func anExpiredClaimGivesWayToThisHoldersOwnOnTheEntryAsRead() async throws {
        let firestore = KeepingFirestore()
        let now = Timestamp.now()
        let state = try Self.entry(claims: ["dead": now.adding(.seconds(-120))], version: now)
        try await Self.delivery(firestore).claim(state, holder: "me")
        let commits = firestore.commits.withLock { $0 }
        #expect(commits.count == 1)
        let write = try #require(commits.first?.first)
        #expect(write.precondition == .updateTime(now), "conditional on the entry as read: of two takeovers one wins")
        guard case .update(_, _, let mask) = write.operation else {
            Issue.record("not an update")
            return
        }
        #expect(mask == [FieldPath("claims", "dead")], "the dead holder's claim goes")
        #expect(write.transforms == [FieldTransform(FieldPath("claims", "me"), .setToRequestTime)], "this holder's, in Firestore's time")
    }

    @Test func theLedgerIsReadBackWithEveryPartItNames() async throws {
        let main = try DocumentName(project: "p", path: "_herald/events/ledger/k")
        let parts = try (1...2).map { try DocumentName(project: "p", path: "_herald/events/ledger/k-\($0)") }
        let firestore = KeepingFirestore(
            [FirestoreDocument(name: main, fields: ["parts": .integer(2)], updateTime: .now())]
                + parts.map { FirestoreDocument(name: $0, fields: ["state": PartState.pending.value], updateTime: .now()) })
        let reads = DocumentReads(firestore, commits: CommitCoalescer(firestore: firestore, metrics: nil))
        let commits = LedgerCommits(
            firestore: firestore, commits: reads.commits, reads: reads, functionName: "f", ledgerLifetime: .seconds(60), logger: Logger(label: "parts"))
        let state = try #require(try await commits.readState(EventLedger(main: main)))
        #expect(state.parts.map(\.name) == parts)
        let missing = try DocumentName(project: "p", path: "_herald/events/ledger/none")
        #expect(try await commits.readState(EventLedger(main: missing)) == nil, "no entry: the event was never applied")
    }

    @Test func aCorrectionIsDueWhereTheStoredCountMovedAndOnlyThere() throws {
        let user = { (id: String) in try DocumentName(project: "p", path: "users/\(id)") }
        func push(_ id: String) throws -> PushMessage {
            PushMessage(
                userID: id, token: "tok-\(id)", fcm: .badgeOnly(token: "tok-\(id)", badge: 3),
                count: CountSource(document: try user(id), field: FieldPath("unread")))
        }
        var stored = DocumentsRead()
        stored.found[try user("moved")] = FirestoreDocument(name: try user("moved"), fields: ["unread": .integer(5)])
        stored.found[try user("same")] = FirestoreDocument(name: try user("same"), fields: ["unread": .integer(3)])
        let sent = [(push: try push("moved"), badge: 3), (push: try push("same"), badge: 3), (push: try push("gone"), badge: 3)]
        let due = BadgeCorrections.correctionsDue(sent, stored: stored)
        #expect(due.map(\.push.userID) == ["moved"] && due.map(\.badge) == [5])
    }
}
