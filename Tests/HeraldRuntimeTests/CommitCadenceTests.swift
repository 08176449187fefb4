import FirestoreModel
import Testing

@testable import HeraldRuntime

/// The cadence on its own, on a simulated clock: what a document that is not hot may do at once, and
/// what no document ever gets past.
@Suite struct CommitCadenceTests {
    let document: DocumentName
    let start = Timestamp(seconds: 1_800_000_000)

    init() throws { document = try DocumentName(project: "p", path: "rooms/busy") }

    /// A writer that commits whenever the cadence lets it, for `seconds`, checking every 10 ms.
    func greedyCommits(_ cadence: inout CommitCadence, seconds: Int) -> [Timestamp] {
        var times: [Timestamp] = []
        for step in 0..<(seconds * 100) {
            let now = start.adding(.milliseconds(10 * step))
            // Two commits in one step if the bucket allows (a burst).
            while cadence.next(document, now: now) <= now, times.filter({ $0 == now }).count < 5 {
                cadence.committed(document, at: now)
                times.append(now)
            }
        }
        return times
    }

    @Test func aGreedyWriterGetsABurstOfTwoThenOneATurnAndNeverMoreThanNineIn10s() {
        var cadence = CommitCadence()
        let times = greedyCommits(&cadence, seconds: 60)
        #expect(times.prefix(2) == [start, start], "two at once: \(times.prefix(3))")
        #expect(times[2] == start.adding(.milliseconds(1300)), "then a turn later: \(times.prefix(3))")
        for (index, time) in times.enumerated() {
            let inWindow = times[index...].prefix { $0.duration(since: time) <= .seconds(10) }.count
            #expect(inWindow <= 9, "\(inWindow) commits in the 10 s from \(time)")
        }
        // 46 turns in 60 s (one every 1.3 s), plus the burst.
        #expect((47...49).contains(times.count), "\(times.count)")
    }

    @Test func aQuietDocumentGetsItsBurstBack() {
        var cadence = CommitCadence()
        cadence.committed(document, at: start)
        cadence.committed(document, at: start)
        #expect(cadence.next(document, now: start) > start, "a third waits")
        let later = start.adding(.milliseconds(2600))
        #expect(cadence.next(document, now: later) <= later)
        cadence.committed(document, at: later)
        #expect(cadence.next(document, now: later) <= later, "two at once again after two turns of quiet")
        // A message a second: quicker than a turn (1.3 s), so the bucket runs down and the sixth waits.
        var paced = CommitCadence()
        var waited: [Int] = []
        for second in 0..<10 {
            let now = start.adding(.seconds(second))
            if paced.next(document, now: now) > now { waited.append(second) }
            paced.committed(document, at: max(now, paced.next(document, now: now)))
        }
        #expect(waited.first == 5, "\(waited)")
    }

    /// Another writer's commit may hide a burst behind it: the document goes by turns after it.
    @Test func afterAnotherWritersCommitTheDocumentGoesByTurns() {
        var cadence = CommitCadence()
        cadence.observed(document, writtenAt: start)
        #expect(cadence.next(document, now: start) == start.adding(.milliseconds(1300)))
        let turn = start.adding(.milliseconds(1300))
        cadence.committed(document, at: turn)
        #expect(cadence.next(document, now: turn) == turn.adding(.milliseconds(1300)), "no burst while another writer is about")
        // Ten seconds after the other writer's last update, the burst comes back.
        let quiet = start.adding(.seconds(13))
        #expect(cadence.next(document, now: quiet) <= quiet)
        cadence.committed(document, at: quiet)
        #expect(cadence.next(document, now: quiet) <= quiet)
        // An old version seen for the first time holds nothing up.
        var fresh = CommitCadence()
        fresh.observed(document, writtenAt: start.adding(.seconds(-60)))
        #expect(fresh.next(document, now: start) <= start)
    }

    /// Two instances writing one document take turns: the one that just committed, after a commit of
    /// the other's, leaves it the next turn (rather than both taking it and one failing its condition),
    /// and takes the one after; a writer alone is not held back.
    @Test func twoWritersTakeTurnsAndTheOneThatJustCommittedLetsTheOtherGoFirst() {
        let turn = Duration.milliseconds(1300)
        var cadence = CommitCadence()
        cadence.committed(document, at: start)
        let other = start.adding(turn)
        cadence.observed(document, writtenAt: other)
        #expect(cadence.next(document, now: other) == other.adding(turn), "after the other's commit: a turn after it")
        #expect(cadence.sharedWithOthers(document))
        let own = other.adding(turn)
        cadence.committed(document, at: own)
        #expect(cadence.next(document, now: own) == own.adding(turn * 3 / 2), "the next turn is the other's, half a turn to take it")
        let again = own.adding(turn)
        cadence.observed(document, writtenAt: again)
        #expect(cadence.next(document, now: again) == again.adding(turn), "then this one's, right after it")

        var alone = CommitCadence()
        alone.committed(document, at: start)
        alone.committed(document, at: start.adding(turn))
        alone.committed(document, at: start.adding(turn * 2))
        #expect(alone.next(document, now: start.adding(turn * 2)) == start.adding(turn * 2), "nobody else writes it: its bucket's own pace")
        #expect(!alone.sharedWithOthers(document))
        var appWrote = CommitCadence()
        appWrote.observed(document, writtenAt: start)
        #expect(!appWrote.sharedWithOthers(document), "not committed here yet: not read before its first commit")
    }

    /// A writer that has never seen a commit of this one's goes by its bucket, whose turns keep to its
    /// own schedule, while this one's come a turn after each of its commits: it would take every turn.
    /// After two of its commits running, this one's turn comes before the other's next; once this one
    /// has committed, the other goes by turns, and this one leaves it the next (as one that committed
    /// right after the other's commit does) and is no longer early.
    @Test func aWriterPassedOverTwiceGoesBeforeTheOthersNextTurn() {
        let turn = Duration.milliseconds(1300)
        var other = CommitCadence()
        var passedOver = CommitCadence()
        // The other's burst (this one sees the latest version only), then a commit every turn.
        other.committed(document, at: start)
        other.committed(document, at: start)
        passedOver.observed(document, writtenAt: start)
        #expect(passedOver.next(document, now: start) == start.adding(turn), "a turn after the other's commit")
        let second = start.adding(turn)
        #expect(other.next(document, now: second) <= second, "the other's bucket lets it go at that very time")
        other.committed(document, at: second)
        passedOver.observed(document, writtenAt: second)
        let early = passedOver.next(document, now: second)
        #expect(early < other.next(document, now: second), "this one's turn comes first: \(early)")
        #expect(early >= second.adding(turn / 2), "yet not at once after the other's commit")
        #expect(passedOver.passedOver(document), "and without a read first")

        passedOver.committed(document, at: early)
        other.observed(document, writtenAt: early)
        let third = other.next(document, now: early)
        #expect(third >= early.adding(turn), "the other now goes by turns")
        #expect(passedOver.next(document, now: early) == early.adding(turn * 3 / 2), "and this one leaves it the next turn")
        #expect(!passedOver.passedOver(document))
        other.committed(document, at: third)
        passedOver.observed(document, writtenAt: third)
        #expect(passedOver.next(document, now: third) == third.adding(turn), "one commit of the other's: its turn as before")

        // The other's commits seen while this one had nothing to commit passed nothing over.
        var idle = CommitCadence()
        idle.observed(document, writtenAt: start, whileWaiting: false)
        idle.observed(document, writtenAt: second, whileWaiting: false)
        #expect(!idle.passedOver(document) && idle.next(document, now: second) == second.adding(turn))
        idle.observed(document, writtenAt: second.adding(turn), whileWaiting: true)
        #expect(!idle.passedOver(document), "one turn wanted and taken by the other is not two")
    }

    /// A commit to a document whose version was not known here (never read, never committed here) may
    /// follow another writer's unseen: it counts as two, so the next waits a turn; a commit on a version
    /// known here does not.
    @Test func aCommitMadeWithoutKnowingTheVersionCountsAsTwo() {
        var cadence = CommitCadence()
        cadence.committed(document, at: start, blind: true)
        #expect(cadence.next(document, now: start) == start.adding(.milliseconds(1300)))
        var known = CommitCadence()
        known.committed(document, at: start)
        #expect(known.next(document, now: start) <= start, "its own burst")
    }

    /// A document just created by another writer (a message the app wrote) hides no burst: the
    /// function's write to it goes at once, and the next waits a turn.
    @Test func aDocumentJustCreatedIsWrittenAtOnce() {
        var cadence = CommitCadence()
        cadence.observed(document, writtenAt: start, created: true)
        let now = start.adding(.milliseconds(5))
        #expect(cadence.next(document, now: now) <= now)
        cadence.committed(document, at: now)
        #expect(cadence.next(document, now: now) > now, "its creation and this commit were the burst")
        // Updated rather than created: the same write waits a turn.
        var updated = CommitCadence()
        updated.observed(document, writtenAt: start)
        #expect(updated.next(document, now: now) == start.adding(.milliseconds(1300)))
    }

    /// A commit refused for a reason no read explains (Firestore's contention) leaves the next a turn
    /// away, where the bucket alone would let it go at once.
    @Test func aRefusedCommitIsTriedAgainATurnLater() {
        var cadence = CommitCadence()
        #expect(cadence.next(document, now: start) <= start)
        cadence.refused(document, at: start)
        #expect(cadence.next(document, now: start) == start.adding(.milliseconds(1300)))
    }
}
