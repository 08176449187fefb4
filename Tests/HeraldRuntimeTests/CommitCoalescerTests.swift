import FirestoreModel
import GoogleClients
import HeraldHTTPClient
import HeraldTesting
import Synchronization
import Testing

@testable import HeraldRuntime

/// Busy groups, item 2: one instance's commits to a busy document go about once a second, gathered,
/// each caller getting its own results (a count's committed total); nothing waits when nothing is hot;
/// a commit that cannot share (a duplicate's ledger entry) meets its own outcome and spoils no other.
@Suite struct CommitCoalescerTests {
    /// Counts the commits that reach Firestore and their sizes.
    final class CountingFirestore: ForwardingFirestore {
        let inner: FirestoreClient
        let commits = Mutex<[Int]>([])
        /// The update times the commits gave `watched`.
        let watchedTimes = Mutex<[Timestamp]>([])
        let watched: DocumentName?
        /// Run after each read: another writer's commit between a read and the commit after it.
        let afterRead: (@Sendable () async throws -> Void)?
        /// Added to each call: a slow Firestore.
        let latency: Duration
        init(_ inner: FirestoreClient, watching watched: DocumentName? = nil, latency: Duration = .zero, afterRead: (@Sendable () async throws -> Void)? = nil)
        {
            self.inner = inner
            self.latency = latency
            self.watched = watched
            self.afterRead = afterRead
        }
        /// Commits that failed (a condition on a version another instance moved).
        let failed = Mutex(0)
        /// What this instance did to `watched`, in order.
        let watchedCalls = Mutex<[WatchedCall]>([])
        enum WatchedCall: Equatable {
            case read
            case commit(writes: Int, failed: Bool)
            /// A commit that carried several events (one event writes two documents) and failed.
            var failedWithSeveralEvents: Bool { if case .commit(let writes, true) = self { writes > 2 } else { false } }
            var committed: Bool { if case .commit(_, false) = self { true } else { false } }
        }
        /// For each commit writing `watched`: that write's condition.
        let watchedConditions = Mutex<[Precondition?]>([])
        func commit(_ writes: [Write], transaction: String?) async throws -> FirestoreClient.CommitResult {
            commits.withLock { $0.append(writes.count) }
            for write in writes where write.document == watched { watchedConditions.withLock { $0.append(write.precondition) } }
            let result: FirestoreClient.CommitResult
            if latency > .zero { try await Task.sleep(for: latency) }
            let writesWatched = writes.contains { $0.document == watched }
            do {
                result = try await inner.commit(writes, transaction: transaction)
                if writesWatched { watchedCalls.withLock { $0.append(.commit(writes: writes.count, failed: false)) } }
            } catch {
                if writesWatched { watchedCalls.withLock { $0.append(.commit(writes: writes.count, failed: true)) } }
                failed.withLock { $0 += 1 }
                throw error
            }
            for (write, time) in zip(writes, result.updateTimes) where write.document == watched {
                if let time { watchedTimes.withLock { $0.append(time) } }
            }
            return result
        }
        func batchGet(_ names: [DocumentName], transaction: String?) async throws -> [DocumentName: FirestoreDocument?] {
            if latency > .zero { try await Task.sleep(for: latency) }
            let found = try await inner.batchGet(names, transaction: transaction)
            if let watched, names.contains(watched) { watchedCalls.withLock { $0.append(.read) } }
            try await afterRead?()
            return found
        }
    }

    /// What one event commits: its own entry (created once) and one more on a shared counter.
    static func event(_ n: Int, _ db: FirestoreClient) throws -> [Write] {
        [
            Write(.update(try db.name("entries/e\(n)"), fields: ["n": .integer(Int64(n))], mask: nil), precondition: .exists(false)),
            Write(
                .transform(try db.name("rooms/busy")),
                transforms: [FieldTransform(FieldPath("count"), .maximum(.integer(0))), FieldTransform(FieldPath("count"), .increment(.integer(1)))],
                precondition: .exists(true)),
        ]
    }

    /// Commit times `k` apart in a sorted list span at least a turn: the cadence's bucket (a burst of 2,
    /// then one a turn) allows no third commit within one turn of the first of them.
    static func expectBucketKept(_ times: [Timestamp], turn: Duration = .milliseconds(1250), sourceLocation: SourceLocation = #_sourceLocation) {
        for (earlier, later) in zip(times, times.dropFirst(2)) {
            #expect(later.duration(since: earlier) >= turn, "\(times)", sourceLocation: sourceLocation)
        }
    }

    @Test func aBusyDocumentIsCommittedAtMostOnceATurnAndEveryCountAddsUp() async throws {
        try await withLocalCloud { local in
            let db = FirestoreClient(project: "herald-test", endpoint: local.baseURL, credentials: EmulatorCredentials(), httpClient: .shared)
            let busy = try db.name("rooms/busy")
            _ = try await db.commit([Write(.update(busy, fields: ["count": .integer(0)], mask: nil))])
            let counting = CountingFirestore(db, watching: busy)
            let coalescer = CommitCoalescer(firestore: counting)
            let started = ContinuousClock.now
            let events = 60
            let totals = try await withThrowingTaskGroup(of: Int64.self) { group in
                for n in 0..<events {
                    group.addTask {
                        // 20 events a second for 3 s on one document.
                        try await Task.sleep(until: started + .milliseconds(50 * n), clock: .continuous)
                        let result = try await coalescer.commit(try Self.event(n, db), order: Timestamp(seconds: Int64(n)))
                        #expect(result.updateTimes.count == 2 && result.transformResults[1].count == 2)
                        return result.transformResults[1][1].integerValue ?? -1
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let times = counting.watchedTimes.withLock { $0 }.sorted()
            // Two at once, then one a turn (1.3 s) for the rest of the 3 s: about five commits.
            #expect(times.count >= 3 && times.count <= 6, "\(times.count) commits for \(events) events")
            Self.expectBucketKept(times)
            #expect(try await db.get(busy)?["count"] == .integer(Int64(events)), "every increment counted")
            // Each caller got the committed total its push would carry: the events of each shared commit
            // all got that commit's total, which is the previous total plus their number.
            let byTotal = Dictionary(totals.map { ($0, 1) }, uniquingKeysWith: +).sorted { $0.key < $1.key }
            #expect(byTotal.count == times.count, "\(byTotal)")
            var previous: Int64 = 0
            for (total, callers) in byTotal {
                #expect(total - previous == Int64(callers), "\(byTotal)")
                previous = total
            }
            for n in 0..<events { #expect(try await db.get(try db.name("entries/e\(n)")) != nil) }
        }
    }

    @Test func whenNothingIsHotNothingWaits() async throws {
        try await withLocalCloud { local in
            let db = FirestoreClient(project: "herald-test", endpoint: local.baseURL, credentials: EmulatorCredentials(), httpClient: .shared)
            _ = try await db.commit([Write(.update(try db.name("rooms/busy"), fields: ["count": .integer(0)], mask: nil))])
            let coalescer = CommitCoalescer(firestore: db)
            // The plan read the document (a conversation last written over a turn ago, its creation
            // no longer in the bucket): its version is known here.
            try await Task.sleep(for: .milliseconds(1400))
            if let read = try await db.get(try db.name("rooms/busy")) { await coalescer.observe([read]) }
            _ = try await coalescer.commit(try Self.event(1, db), order: .now())
            // A quick exchange: a second commit to the document just written goes at once too.
            _ = try await coalescer.commit(try Self.event(2, db), order: .now())
            // Another document, at once too.
            let other = [Write(.update(try db.name("rooms/quiet"), fields: ["x": .integer(1)], mask: nil))]
            _ = try await coalescer.commit(other, order: .now())
            #expect(await coalescer.commitsThatWaited == 0)
            // Commits at once to a document being written do wait (what the count above would show).
            try await withThrowingTaskGroup(of: Void.self) { group in
                for n in 3...5 { group.addTask { _ = try await coalescer.commit(try Self.event(n, db), order: .now()) } }
                try await group.waitForAll()
            }
            #expect(await coalescer.commitsThatWaited >= 1)
        }
    }

    /// A duplicate delivery's entry exists already: the shared commit fails, so each goes alone; the
    /// duplicate meets ALREADY_EXISTS, the others are applied.
    @Test func aCommitThatCannotShareMeetsItsOwnOutcome() async throws {
        try await withLocalCloud { local in
            let db = FirestoreClient(project: "herald-test", endpoint: local.baseURL, credentials: EmulatorCredentials(), httpClient: .shared)
            _ = try await db.commit([Write(.update(try db.name("rooms/busy"), fields: ["count": .integer(0)], mask: nil))])
            _ = try await db.commit([Write(.update(try db.name("entries/e3"), fields: [:], mask: nil))])
            let coalescer = CommitCoalescer(firestore: db)
            _ = try await coalescer.commit(try Self.event(0, db), order: .now())  // makes the document busy
            let outcomes = await withTaskGroup(of: (Int, Bool).self) { group in
                for n in 1..<6 {
                    group.addTask {
                        do {
                            _ = try await coalescer.commit(try Self.event(n, db), order: Timestamp(seconds: Int64(n)))
                            return (n, true)
                        } catch let error as GoogleAPIError {
                            #expect(error.status == .alreadyExists, "\(error)")
                            return (n, false)
                        } catch { return (n, false) }
                    }
                }
                return await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
            }
            #expect(outcomes == [1: true, 2: true, 3: false, 4: true, 5: true], "\(outcomes)")
            #expect(try await db.get(try db.name("rooms/busy"))?["count"] == .integer(5))
        }
    }

    /// Commits that cannot be one write (each replaces the document) are not committed together: after
    /// the burst of two, each waits for a turn of its own.
    @Test func writesThatCannotJoinTakeTurnsOfTheirOwn() async throws {
        try await withLocalCloud { local in
            let db = FirestoreClient(project: "herald-test", endpoint: local.baseURL, credentials: EmulatorCredentials(), httpClient: .shared)
            let busy = try db.name("rooms/busy")
            let counting = CountingFirestore(db, watching: busy)
            let coalescer = CommitCoalescer(firestore: counting)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for n in 0..<4 {
                    group.addTask {
                        _ = try await coalescer.commit(
                            [Write(.update(busy, fields: ["n": .integer(Int64(n))], mask: nil))], order: Timestamp(seconds: Int64(n)))
                    }
                }
                try await group.waitForAll()
            }
            let times = counting.watchedTimes.withLock { $0 }.sorted()
            #expect(times.count == 4)
            Self.expectBucketKept(times)
        }
    }

    /// `count` events on one busy document, 100 ms apart, alternating between two instances (two
    /// coalescers), as Eventarc spreads events; `readingFirst`: each event reads the document first (the
    /// plan's read, as the gateway passes it on), else each instance reads it once at the start. The
    /// instances' Firestore, as each saw its commits, their metrics, and the count the events left.
    static func twoInstances(
        events count: Int, reading: Reading, latency: Duration = .zero
    ) async throws -> (instances: [CountingFirestore], metrics: [RuntimeMetrics], count: FirestoreValue?) {
        try await withLocalCloud { local in
            let db = FirestoreClient(project: "herald-test", endpoint: local.baseURL, credentials: EmulatorCredentials(), httpClient: .shared)
            let busy = try db.name("rooms/busy")
            _ = try await db.commit([Write(.update(busy, fields: ["count": .integer(0)], mask: nil))])
            let instances = (0..<2).map { _ in CountingFirestore(db, watching: busy, latency: latency) }
            let metrics = (0..<2).map { _ in RuntimeMetrics(function: "onMessageCreated") }
            let coalescers = zip(instances, metrics).map { CommitCoalescer(firestore: $0, metrics: $1) }
            if reading == .once { for coalescer in coalescers { if let read = try await db.get(busy) { await coalescer.observe([read]) } } }
            let started = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for n in 0..<count {
                    group.addTask {
                        try await Task.sleep(until: started + .milliseconds(100 * n), clock: .continuous)
                        let coalescer = coalescers[n % 2]
                        if reading == .everyEvent, let read = try await db.get(busy) { await coalescer.observe([read]) }
                        _ = try await coalescer.commit(try Self.event(n, db), order: Timestamp(seconds: Int64(n)))
                    }
                }
                try await group.waitForAll()
            }
            return (instances, metrics, try await db.get(busy)?["count"])
        }
    }

    /// How the instances' events come to know the busy document: every event's plan reads it (a
    /// conversation), each instance read it once at the start, or none ever reads it (a badge).
    enum Reading { case everyEvent, once, never }

    /// Two instances writing one busy document none of their plans reads (a badge): each reads it once
    /// before its first commit, so every commit is conditional on a version its maker knew and no third
    /// commit comes within a turn of the first of three. (Committed blind, the second instance's first
    /// commit could follow the other's unseen, and with its next, still in its own burst, made three
    /// within 0.3 s.)
    @Test func twoInstancesWritingADocumentNeitherReadsKeepTheBucket() async throws {
        let (instances, _, count) = try await Self.twoInstances(events: 30, reading: .never)
        #expect(count == .integer(30), "every increment counted once")
        let conditions = instances.flatMap { $0.watchedConditions.withLock { $0 } }
        let onVersions = conditions.filter { if case .updateTime? = $0 { true } else { false } }
        #expect(!conditions.isEmpty && onVersions.count == conditions.count, "every commit conditional on a known version: \(conditions)")
        let times = instances.flatMap { $0.watchedTimes.withLock { $0 } }.sorted()
        Self.expectBucketKept(times)
    }

    /// A document the coalescer found missing is created on the condition that it still is: another
    /// writer's creation between the read and the commit fails that commit, which learns the version
    /// and goes again after it, the counts of both kept.
    @Test func aDocumentFoundMissingIsCreatedOnConditionThatItStillIs() async throws {
        try await withLocalCloud { local in
            let db = FirestoreClient(project: "herald-test", endpoint: local.baseURL, credentials: EmulatorCredentials(), httpClient: .shared)
            let badge = try db.name("badges/u1")
            let instance = CountingFirestore(db, watching: badge) {
                if try await db.get(badge) == nil {
                    _ = try await db.commit([Write(.transform(badge), transforms: [FieldTransform(FieldPath("count"), .increment(.integer(5)))])])
                }
            }
            let coalescer = CommitCoalescer(firestore: instance)
            let result = try await coalescer.commit(
                [Write(.transform(badge), transforms: [FieldTransform(FieldPath("count"), .increment(.integer(1)))])], order: .now())
            #expect(result.transformResults.first?.first == .integer(6), "the committed total after the other's creation")
            #expect(try await db.get(badge)?["count"] == .integer(6))
            let conditions = instance.watchedConditions.withLock { $0 }
            #expect(conditions.first == .exists(false) && conditions.count == 2, "\(conditions)")
            if case .updateTime? = conditions.last {} else { Issue.record("then on the version it read: \(conditions)") }
        }
    }

    /// A document written here and then deleted by someone else (the app removing a badge) is written
    /// again on the condition that it is still missing, not retried on the old version until the
    /// commit's patience runs out (a 503, and the same again on every redelivery).
    @Test func aDocumentDeletedElsewhereIsWrittenAgain() async throws {
        try await withLocalCloud { local in
            let db = FirestoreClient(project: "herald-test", endpoint: local.baseURL, credentials: EmulatorCredentials(), httpClient: .shared)
            let badge = try db.name("badges/u1")
            let coalescer = CommitCoalescer(firestore: db, patience: .seconds(5))
            let increment = [Write(.transform(badge), transforms: [FieldTransform(FieldPath("count"), .increment(.integer(1)))])]
            _ = try await coalescer.commit(increment, order: .now())
            _ = try await db.commit([Write(.delete(badge))])
            let result = try await coalescer.commit(increment, order: .now())
            #expect(result.transformResults.first?.first == .integer(1), "counted from nothing again")
            #expect(try await db.get(badge)?["count"] == .integer(1))
        }
    }

    /// Two instances writing one busy document they read first: whichever commits, no third commit
    /// comes within a turn of the first of three, and every count adds up.
    @Test func twoInstancesTakeTurnsOnABusyDocument() async throws {
        let (instances, _, count) = try await Self.twoInstances(events: 30, reading: .everyEvent)
        #expect(count == .integer(30), "every increment counted once")
        let times = instances.flatMap { $0.watchedTimes.withLock { $0 } }.sorted()
        #expect(times.count >= 3 && times.count < 30, "gathered: \(times.count) commits for 30 events")
        Self.expectBucketKept(times)
    }

    /// Two instances whose events do not read the busy document (each learns of the other's commits
    /// only from Firestore): they take turns, each reading the document before its turn's commit, so
    /// after the first turn no commit fails its condition for lack of knowing the other's; and neither
    /// takes every turn while the other's events wait. Also with a slow Firestore (300 ms a call).
    @Test(arguments: [0, 300]) func twoInstancesTakingTurnsLearnOfEachOthersCommitsBeforeCommitting(latency: Int) async throws {
        let (instances, metrics, count) = try await Self.twoInstances(events: 80, reading: .once, latency: .milliseconds(latency))
        #expect(count == .integer(80), "every increment counted once")
        let times = instances.flatMap { $0.watchedTimes.withLock { $0 } }.sorted()
        Self.expectBucketKept(times)
        let failed = instances.map { $0.failed.withLock { $0 } }.reduce(0, +)
        // Each learns of the other once by a failed condition (neither knows the other writes it); after
        // that, no turn's commit fails for lack of a read before it. A read can still be overtaken by the
        // other's commit (the longer the round trips, the likelier: a busy machine, a slow Firestore),
        // and a turn with one event goes without a read: those are not counted here.
        let calls = instances.map { $0.watchedCalls.withLock { $0 } }
        let unread = calls.map { calls in
            zip([nil] + calls.map(Optional.some), calls).filter { previous, call in call.failedWithSeveralEvents && previous != .read }.count
        }
        #expect(unread.reduce(0, +) <= 2, "\(failed) commits failed their condition in \(times.count) turns: \(calls)")
        let turns = calls.map { $0.filter(\.committed).count }
        #expect(turns.allSatisfy { $0 >= 2 }, "each instance's events had turns of their own while the other's came: \(turns)")

        // What an operator sees of it at `/metrics`: every commit, the events it carried, the waits.
        var total: [String: Double] = [:]
        for samples in metrics.map({ prometheusSamples(String(decoding: $0.exposition(), as: UTF8.self)) }) {
            for (series, value) in samples { total[series.replacing(#/\{.*\}/#, with: "") + Self.labels(series), default: 0] += value }
        }
        let sent = instances.map { $0.commits.withLock { $0.count } }.reduce(0, +)
        let committed = (total["herald_document_commits_total[committed,one]"] ?? 0) + (total["herald_document_commits_total[committed,several]"] ?? 0)
        let conflicts = (total["herald_document_commits_total[conflict,one]"] ?? 0) + (total["herald_document_commits_total[conflict,several]"] ?? 0)
        #expect(Int(committed) == sent - failed && Int(conflicts) == failed, "\(total)")
        #expect(total["herald_document_commit_events_total[]"] == 80, "every event carried by exactly one commit: \(total)")
        #expect((total["herald_document_commits_total[committed,several]"] ?? 0) >= 1, "turns carried several events: \(total)")
        let waited = total["herald_commit_wait_seconds_count[committed]"] ?? 0
        #expect(waited >= 40 && waited <= 80, "most events waited for a turn, and each wait ended committed: \(total)")
    }

    /// A series' `outcome` and `events` labels, in that order, as `[committed,several]`.
    static func labels(_ series: String) -> String {
        let outcome = series.firstMatch(of: #/outcome="([a-z_]+)"/#).map { String($0.1) }
        let events = series.firstMatch(of: #/events="([a-z]+)"/#).map { String($0.1) }
        return "[" + [outcome, events].compactMap { $0 }.joined(separator: ",") + "]"
    }
}
