import FirestoreModel

/// When each document Herald writes may be committed next, so no document goes past Firestore's
/// sustained rate of about one write a second and a document that is not hot never waits
/// (docs/architecture.md, "Busy groups").
///
/// Each document's commits are admitted as a token bucket (a generic cell rate algorithm): a burst of
/// `burst` at once, then one every `interval`. With a burst of 2 and 1.3 s, any 10 s hold at most
/// 2 + ⌊10 / 1.3⌋ = 9 commits (a write short of Firestore's one a second, for clocks and delays),
/// and a quick exchange (two messages in one conversation within a second, one person in two
/// conversations at once) goes without waiting.
///
/// An instance knows its own commits but only the latest version of a document another writer
/// committed, never how many came before it: a burst it did not see may lie behind that version. So a
/// document another writer updated within the last `strictness` goes strictly by turns, `interval`
/// after its latest known commit: at least `burst · interval` (the longest a hidden burst bears on the
/// bucket), and 10 s, because a document two instances write is contended, where bursts only collide
/// (with 2.6 s, `BusyGroupsTests` with two processes took 12.5 s p50 from write to push, against 4 s).
/// A version that is the document's creation hides nothing: a message the app just wrote is written
/// again at once. Every commit of the coalescer is conditional on the version it knows, so each commit follows
/// one its maker knew of: the turns of all instances together keep the bucket.
struct CommitCadence: Sendable {
    let interval: Duration
    let burst: Int
    /// How long after another writer's update the document goes strictly by turns.
    let strictness: Duration

    struct Document {
        /// When the bucket is empty again ("theoretical arrival time"); commits may go while
        /// `theoreticalArrival − (burst − 1) · interval` has passed.
        var theoreticalArrival: Timestamp
        /// The latest commit known, by anyone.
        var latest: Timestamp
        /// The latest commit by another writer.
        var foreign: Timestamp?
        /// This instance's latest commit and the one before it.
        var own: Timestamp?
        var previousOwn: Timestamp?
        /// Commits by others seen since this instance's latest commit, all while it had one waiting (one
        /// seen while it had none starts the count again: an instance without events was not passed over,
        /// and going early without a read would only risk a conflict).
        var foreignSinceOwn = 0
    }

    private var documents: [DocumentName: Document] = [:]

    init(interval: Duration = .milliseconds(1300), burst: Int = 2, strictness: Duration = .seconds(10)) {
        self.interval = interval
        self.burst = burst
        // Never shorter than a hidden burst bears on the bucket.
        self.strictness = max(strictness, interval * burst)
    }

    /// This instance committed the document; `time` is the commit's update time. `blind`: no version of
    /// it was known here before (missing when the coalescer read it, or the read failed), so the commit
    /// went unconditioned and another writer's commit may lie just before it, unseen: it counts as two,
    /// and the next goes a turn after it. (Two instances' blind first commits to one document otherwise
    /// each began a burst of their own: ten or eleven commits in 10 s.)
    mutating func committed(_ document: DocumentName, at time: Timestamp, blind: Bool = false) {
        record(document, at: time, foreign: false, commits: blind ? 2 : 1)
    }

    /// Another writer committed the document at `time` (a version newer than any known here);
    /// `created`: that commit created it, so no commit of theirs came before it. `whileWaiting`: this
    /// instance had a commit to it waiting or under way, so the other took a turn this one wanted.
    mutating func observed(_ document: DocumentName, writtenAt time: Timestamp, created: Bool = false, whileWaiting: Bool = true) {
        record(document, at: time, foreign: !created, wanted: whileWaiting)
    }

    /// A commit to the document failed at `now` for a reason no read explains (Firestore's contention):
    /// the next is a turn away, where it would otherwise be tried again at once, round trip after round
    /// trip, for as long as its patience lasts.
    mutating func refused(_ document: DocumentName, at now: Timestamp) {
        var state = state(of: document)
        state.theoreticalArrival = max(state.theoreticalArrival, now.adding(interval * burst))
        documents[document] = state
    }

    /// The earliest time the document may be committed again (the distant past when it may be now).
    func next(_ document: DocumentName, now: Timestamp) -> Timestamp {
        guard let state = documents[document] else { return .distantPast }
        let bucket = state.theoreticalArrival.adding(.zero - interval * (burst - 1))
        if let foreign = state.foreign, now.duration(since: foreign) < strictness {
            // Taking turns with another writer (its commit came between this instance's last two): the
            // turn after this instance's own commit is left to it, so the two do not both take it and
            // one of them fail its condition. Half a turn later this one goes if the other did not.
            if let own = state.own, own == state.latest, let previous = state.previousOwn, foreign > previous {
                return max(bucket, own.adding(interval * 3 / 2))
            }
            // Passed over: the other writer took two turns running that this one wanted. One that has
            // never seen a commit of this instance's goes by its bucket, whose turns keep to its own
            // schedule and so come no later than a turn after its latest commit, where this one's came a
            // turn after it plus a jitter and a read: it took every turn, and this one's events waited
            // for as long as the other had events (the second instance of `twoInstancesTakingTurns
            // LearnOfEachOthersCommitsBeforeCommitting` in four runs of seven: all its events in one
            // commit at the end). Now this one's turn comes at the other's bucket turn or before it, and
            // goes with no jitter and no read first (`passedOver`), so it commits first; the other's
            // commit fails its condition, this one leaves it the next turn (`record`), and from then on
            // the two take turns.
            if passedOver(state) { return max(bucket, state.latest.adding(interval * 3 / 5)) }
            return max(bucket, state.latest.adding(interval))
        }
        return bucket
    }

    /// Whether this instance and another writer (another instance, most likely) both update the
    /// document, so the other may have committed since the latest commit known here. A document neither
    /// this instance committed nor it saw created (one the app updates) is not counted: reading it
    /// before the first commit would cost a read where a conflict is rare. One it saw created is: with
    /// two instances writing a conversation the app created, the second's first commit fails against
    /// the first's, and from then on it reads before its turns (counted as not shared, that instance
    /// failed a condition on every turn until its own first commit went through: 7 failures in 80
    /// events in `twoInstancesTakingTurnsLearnOfEachOthersCommitsBeforeCommitting`, against 2).
    func sharedWithOthers(_ document: DocumentName) -> Bool {
        guard let state = documents[document] else { return false }
        return state.foreign != nil && state.own != nil
    }

    /// Whether another writer took the document's last two turns while this instance had a commit
    /// waiting for them, so its next comes early and goes at once (no jitter) on what it knows (no read
    /// first, `CommitCoalescer.peek`): the read that found the other's commit was a moment ago, and a
    /// round trip now could let the other's next commit in before this one's again.
    func passedOver(_ document: DocumentName) -> Bool { documents[document].map(passedOver) ?? false }

    private func passedOver(_ state: Document) -> Bool { state.foreignSinceOwn >= 2 }

    /// Forgets documents whose history no longer bears on their next commit.
    mutating func forgetQuiet(now: Timestamp) {
        guard documents.count > 50_000 else { return }
        documents = documents.filter { _, state in
            state.theoreticalArrival > now || now.duration(since: state.foreign ?? .distantPast) < strictness
        }
    }

    /// `foreign`: another writer's commit, not one creating the document (a creation is counted with
    /// this instance's own, so a document the app created is shared once another writer updates it).
    /// `commits`: how many commits the bucket is charged for this one.
    private mutating func record(_ document: DocumentName, at time: Timestamp, foreign: Bool, wanted: Bool = true, commits: Int = 1) {
        var state = state(of: document)
        state.theoreticalArrival = max(state.theoreticalArrival, time).adding(interval * commits)
        state.latest = max(state.latest, time)
        if foreign {
            state.foreign = max(state.foreign ?? .distantPast, time)
            state.foreignSinceOwn = wanted ? state.foreignSinceOwn + 1 : 0
        } else if time > state.own ?? .distantPast {
            // A commit made when passed over followed the other's commits: like one made after its own
            // and theirs, it leaves the next turn to them.
            (state.previousOwn, state.own) = (passedOver(state) ? .distantPast : state.own, time)
            state.foreignSinceOwn = 0
        }
        documents[document] = state
    }

    /// What is known of the document's commits: nothing yet for one never seen.
    private func state(of document: DocumentName) -> Document {
        documents[document] ?? Document(theoreticalArrival: .distantPast, latest: .distantPast)
    }
}
