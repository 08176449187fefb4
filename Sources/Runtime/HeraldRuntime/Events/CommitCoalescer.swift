import FirestoreModel
import GoogleClients

/// Keeps every document Herald writes under Firestore's sustained rate of about one write a second,
/// across instances, and makes nobody wait when nothing is hot (docs/architecture.md, "Busy groups").
///
/// - A document's commits are admitted by its `CommitCadence`: a burst of two at once, then one every
///   1.3 s; a document another writer updated in the last 10 s goes strictly by turns. A commit whose documents
///   may all be committed now goes at once; documents written by clients only are never waited for.
/// - A commit touching a document that may not be committed yet (a busy group's conversation, a busy
///   person's user document) waits, and every commit waiting when it may goes together: their writes
///   merged per document (a later event's fields over an earlier one's, increments one after the other,
///   so counts add up), each event's ledger entry in the same commit, so exactly once holds for each.
///   Each caller gets its own writes' results: a count's value is the total the shared commit produced.
/// - Every write to a document already written goes on the condition that it is still at the version
///   known here: of two instances committing at once, one commit fails that condition; that instance
///   reads the new version and waits for its turn after it. So each commit follows one its maker knew:
///   a document no plan reads (a badge) is read once before its first commit here; one still without
///   a version (missing when read) is committed blind and counts as two.
/// - Instances writing one document take turns: the one that just committed after the other's commit
///   leaves it the next turn, and a turn's commit first reads the documents others write (one read for
///   the whole shared commit), so it goes after a commit made elsewhere instead of failing against it.
/// - A write the plan made conditional on an older version fails (its event is planned again); a ledger
///   entry that exists (a duplicate delivery) fails its own event; the others go on.
actor CommitCoalescer {
    let firestore: any FirestoreAPI
    /// How long a commit may wait for its turns (it is then handed back to the trigger as a 503).
    let patience: Duration
    /// Where the commits and the waits are counted (`/metrics`), if anywhere.
    let metrics: RuntimeMetrics?

    /// The latest version of each document known here: its update time, from a read or a commit.
    private var versions: [DocumentName: Timestamp] = [:]
    /// Documents a read here found missing (and nobody has committed here since): a write to one is
    /// made conditional on its still being missing.
    private var missing: Set<DocumentName> = []
    /// When each document may be committed next (wall-clock time, as update times are).
    private var cadence: CommitCadence
    /// Documents in a commit or a read of the coalescer now.
    private var busy: Set<DocumentName> = []
    /// Documents in a commit now: a version of one that a plan's read meets meanwhile may be that
    /// commit's own, so it is not taken for another writer's.
    private var committing: Set<DocumentName> = []
    private var waiting: [Waiting] = []
    private var flushScheduled = false
    private var nextID = 0
    /// Commits that could not go at once and waited for a turn (the tests' measure of "nothing waits").
    private(set) var commitsThatWaited = 0

    struct Waiting {
        var id: Int
        var writes: [Write]
        var documents: Set<DocumentName>
        /// Merged in this order: the event's time, so a later event's fields win.
        var order: Timestamp
        var since: ContinuousClock.Instant
        /// Nil for a commit tried at once (it answers its caller itself).
        var continuation: CheckedContinuation<FirestoreClient.CommitResult, any Error>?
    }

    /// At most this many writes in one shared commit (Firestore's limit is 500).
    static let maximumWrites = 500

    init(firestore: any FirestoreAPI, cadence: CommitCadence = CommitCadence(), patience: Duration = .seconds(20), metrics: RuntimeMetrics? = nil) {
        self.firestore = firestore
        self.cadence = cadence
        self.patience = patience
        self.metrics = metrics
    }

    /// What a read found: the documents' versions (a missing document has none).
    func observe(_ documents: [FirestoreDocument]) {
        for document in documents where !committing.contains(document.name) {
            guard let time = document.updateTime else { continue }
            if let known = versions[document.name], known >= time { continue }
            versions[document.name] = time
            // Written since it was last seen here (or first seen), by someone else: another instance,
            // most likely, or the app.
            let wanted = busy.contains(document.name) || waiting.contains { $0.documents.contains(document.name) }
            cadence.observed(document.name, writtenAt: time, created: document.createTime == time, whileWaiting: wanted)
        }
        if versions.count > 50_000 { versions = versions.filter { Timestamp.now().duration(since: $0.value) < cadence.strictness } }
        cadence.forgetQuiet(now: .now())
    }

    func commit(_ writes: [Write], order: Timestamp) async throws -> FirestoreClient.CommitResult {
        let documents = Set(writes.map(\.document))
        await learnVersions(of: writes)
        nextID += 1
        let entry = Waiting(id: nextID, writes: writes, documents: documents, order: order, since: .now, continuation: nil)
        if turnHasCome(documents), !waiting.contains(where: { !$0.documents.isDisjoint(with: documents) }) {
            // Nothing hot: at once, as one commit of its own.
            busy.formUnion(documents)
            let outcome = await attempt([entry])
            busy.subtract(documents)
            if !waiting.isEmpty { scheduleFlush() }
            switch outcome.first.flatMap({ $0.1 }) {
            case .success(let result)?: return result
            case .failure(let error)?: throw error
            case nil:
                // Its documents changed under it: it waits for their next turn like any other.
                break
            }
        }
        return try await withCheckedThrowingContinuation { continuation in
            var waiter = entry
            waiter.continuation = continuation
            waiting.append(waiter)
            commitsThatWaited += 1
            scheduleFlush()
        }
    }

    private func turnHasCome(_ documents: Set<DocumentName>) -> Bool { turn(of: documents) <= Timestamp.now() && busy.isDisjoint(with: documents) }

    /// When every one of the documents may be committed next.
    private func turn(of documents: Set<DocumentName>) -> Timestamp {
        let now = Timestamp.now()
        return documents.map { cadence.next($0, now: now) }.max() ?? .distantPast
    }

    private func scheduleFlush() {
        guard !flushScheduled, !waiting.isEmpty else { return }
        let documents = waiting.reduce(into: Set<DocumentName>()) { $0.formUnion($1.documents) }
        guard busy.isDisjoint(with: documents) else { return }
        flushScheduled = true
        // The earliest turn of any waiting commit (the rest are looked at again after it).
        let soonest = waiting.map { ($0.documents, turn(of: $0.documents)) }.min { $0.1 < $1.1 }
        let delay = max(.zero, (soonest?.1 ?? .distantPast).duration(since: Timestamp.now()))
        // A little jitter past the turn, so two instances that learned the same turn seldom both take it;
        // none for an instance passed over, whose turn is the other's too and must come first.
        let passedOver = soonest?.0.contains { cadence.passedOver($0) } ?? false
        let jitter = delay > .zero && !passedOver ? Duration.milliseconds(Int64.random(in: 0...Int64(cadence.interval / .milliseconds(1) / 5))) : .zero
        Task {
            try? await Task.sleep(for: delay + jitter)
            await flush()
        }
    }

    /// Commits every waiting commit whose turn has come, together, in commits of at most 500 writes
    /// whose writes to each document merge into one.
    private func flush() async {
        flushScheduled = false
        let now = ContinuousClock.now
        for expired in waiting.filter({ now - $0.since > patience }) {
            answer(
                expired,
                .failure(DownstreamError.unavailable("the documents it writes were busy for \(patience): their turns did not come", retryAfterSeconds: 1)),
                outcome: "gave_up")
        }
        waiting.removeAll { now - $0.since > patience }
        await peek(waiting.filter { turnHasCome($0.documents) })
        // A plan made on a version older than one known here fails now (planned again), so it takes no
        // place in this turn's commit.
        for stale in waiting.compactMap({ entry in staleWrite(in: entry).map { (entry, $0) } }) {
            answer(stale.0, .failure(GoogleAPIError.stale(stale.1)))
        }
        waiting.removeAll { staleWrite(in: $0) != nil }
        let due = waiting.filter { turnHasCome($0.documents) }
        let taken = Set(due.map(\.id))
        waiting.removeAll { taken.contains($0.id) }
        // Batches never share a document (each document is committed once per turn): an entry that
        // cannot join the one batch holding its documents waits for the next turn.
        var batches: [(entries: [Waiting], shared: SharedCommit, documents: Set<DocumentName>)] = []
        var later: [Waiting] = []
        for entry in due.sorted(by: { $0.order < $1.order }) {
            let overlapping = batches.indices.filter { !batches[$0].documents.isDisjoint(with: entry.documents) }
            if overlapping.count > 1 {
                later.append(entry)
            } else if let index = overlapping.first {
                if batches[index].shared.add(entry.writes, limit: Self.maximumWrites) {
                    batches[index].entries.append(entry)
                    batches[index].documents.formUnion(entry.documents)
                } else {
                    later.append(entry)
                }
            } else if let index = batches.indices.first(where: { batches[$0].shared.add(entry.writes, limit: Self.maximumWrites) }) {
                batches[index].entries.append(entry)
                batches[index].documents.formUnion(entry.documents)
            } else {
                var shared = SharedCommit()
                _ = shared.add(entry.writes, limit: .max)
                batches.append(([entry], shared, entry.documents))
            }
        }
        waiting += later
        let documents = batches.reduce(into: Set<DocumentName>()) { $0.formUnion($1.documents) }
        busy.formUnion(documents)
        for batch in batches.map(\.entries) {
            let outcomes = await attempt(batch)
            for (entry, result) in outcomes {
                if let result { answer(entry, result) } else { waiting.append(entry) }  // its next turn
            }
        }
        busy.subtract(documents)
        scheduleFlush()
    }

    /// Answers a commit that waited, and counts how long it waited and how it ended.
    private func answer(_ entry: Waiting, _ result: Result<FirestoreClient.CommitResult, any Error>, outcome: String? = nil) {
        let outcome =
            outcome
            ?? {
                switch result {
                case .success: "committed"
                case .failure(let error as GoogleAPIError) where error.status == .failedPrecondition: "stale"
                case .failure: "failed"
                }
            }()
        metrics?.commitWaited(.now - entry.since, outcome: outcome)
        entry.continuation?.resume(with: result)
    }

    /// Reads the documents the writes update whose version is not known here (never read by a plan
    /// here, never committed here: a badge kept apart), so the first commit to each is conditional
    /// like every other: committed blind, it could follow another instance's commit unseen and start a
    /// burst of its own (`BusyGroupsTests` once measured a badge document at 1.1 writes a second).
    /// One read per document in an instance's life; a document being read or committed is left to
    /// that commit (this one then waits for its turn).
    private func learnVersions(of writes: [Write]) async {
        let unknown = Set(writes.filter(versionUnknown).map(\.document)).subtracting(busy).subtracting(missing)
        guard !unknown.isEmpty else { return }
        busy.formUnion(unknown)
        defer { busy.subtract(unknown) }
        guard let found = try? await firestore.batchGet(Array(unknown), transaction: nil) else { return }
        learn(found, for: unknown)
    }

    /// A write to a document whose version is not known here, other than one creating it.
    private func versionUnknown(_ write: Write) -> Bool { versions[write.document] == nil && write.precondition != .exists(false) }

    /// What a read of `documents` found: the versions of those that exist, and which are missing (a
    /// version known here of one deleted since is forgotten, so the next write to it is conditional on
    /// its absence rather than failing on a version that is gone until the commit's patience ends).
    private func learn(_ found: [DocumentName: FirestoreDocument?], for documents: Set<DocumentName>) {
        if missing.count > 50_000 { missing.removeAll() }
        for document in documents {
            if (found[document] ?? nil) == nil {
                missing.insert(document)
                versions[document] = nil
            } else {
                missing.remove(document)
            }
        }
        observe(found.values.compactMap { $0 })
    }

    /// Reads the documents of due commits that another instance writes too: a commit made since the
    /// latest known here sets this turn after it, where committing blind would fail its condition (a
    /// round trip, and a commit Firestore counted against the document) and then read them anyway. One
    /// read for the whole turn's commit, made only when it carries several events (one event alone
    /// risks less than a read costs) and this instance was not passed over (its early turn goes on
    /// what the read that found it passed over learned).
    private func peek(_ due: [Waiting]) async {
        guard due.count > 1 else { return }
        let documents = due.reduce(into: Set<DocumentName>()) { $0.formUnion($1.documents) }.filter {
            cadence.sharedWithOthers($0) && !cadence.passedOver($0)
        }
        guard !documents.isEmpty else { return }
        busy.formUnion(documents)
        defer { busy.subtract(documents) }
        guard let found = try? await firestore.batchGet(Array(documents), transaction: nil) else { return }
        learn(found, for: documents)
    }

    /// One commit of the entries' writes, each write to a document written before made conditional on
    /// the version known here. Each entry's outcome: its result, its own error, or nil to try again at
    /// the documents' next turn (another instance wrote one of them meanwhile).
    private func attempt(_ entries: [Waiting]) async -> [(Waiting, Result<FirestoreClient.CommitResult, any Error>?)] {
        // A write conditional on a version older than the one known here cannot go: its plan is stale.
        var live: [Waiting] = []
        var outcomes: [(Waiting, Result<FirestoreClient.CommitResult, any Error>?)] = []
        for entry in entries {
            if let stale = staleWrite(in: entry) {
                outcomes.append((entry, .failure(GoogleAPIError.stale(stale))))
            } else {
                live.append(entry)
            }
        }
        // Those that fitted the turn's batch fit again without the stale ones; one that does not waits.
        var shared = SharedCommit()
        live = live.filter { entry in
            guard shared.add(entry.writes, limit: .max) else {
                outcomes.append((entry, nil))
                return false
            }
            return true
        }
        guard !live.isEmpty else { return outcomes }
        // Documents written without a version known here or a read that found them missing (it failed).
        let blind = Set(shared.writes.filter { versionUnknown($0) && !missing.contains($0.document) }.map(\.document))
        let writes = shared.conditioned(on: versions, missing: missing)
        let written = Set(writes.map(\.document))
        do {
            committing.formUnion(written)
            defer { committing.subtract(written) }
            let result = try await firestore.commit(writes, transaction: nil)
            metrics?.documentCommit(events: live.count, outcome: "committed")
            for (index, write) in writes.enumerated() where index < result.updateTimes.count {
                guard let time = result.updateTimes[index] else { continue }
                versions[write.document] = time
                missing.remove(write.document)
                cadence.committed(write.document, at: time, blind: blind.contains(write.document))
            }
            return outcomes + live.enumerated().map { index, entry in (entry, .success(shared.result(of: index, from: result))) }
        } catch let error as GoogleAPIError where [.failedPrecondition, .notFound, .alreadyExists, .aborted].contains(error.status) {
            metrics?.documentCommit(events: live.count, outcome: "conflict")
            // A document changed, vanished or exists: read them all to learn which, and who can go on.
            guard let found = try? await firestore.batchGet(Array(written), transaction: nil) else {
                return outcomes + live.map { ($0, .failure(error)) }
            }
            // A document whose version moved past the one known here was just committed by someone else
            // (another instance, most likely): observing it sets its next turn an interval after that.
            // What the plans create (ledger entries) is never written here again: not kept as missing.
            let created = live.flatMap(\.writes).filter { $0.precondition == .exists(false) }.map(\.document)
            let known = (written.map { versions[$0] }, missing.intersection(written))
            learn(found, for: written.subtracting(created))
            if known == (written.map { versions[$0] }, missing.intersection(written)) {
                // Nothing moved (Firestore's contention, an ABORTED): tried again a turn from now, not at once.
                for document in written { cadence.refused(document, at: .now()) }
            }
            return outcomes
                + live.map { entry in
                    if let own = Self.ownFailure(of: entry.writes, found: found) { return (entry, .failure(own)) }
                    if ContinuousClock.now - entry.since > patience { return (entry, .failure(error)) }
                    return (entry, nil)
                }
        } catch {
            metrics?.documentCommit(events: live.count, outcome: "failed")
            return outcomes + live.map { ($0, .failure(error)) }
        }
    }

    /// The error the writes would have met alone against the documents as `found`, if any: a document
    /// they create that exists first (their ledger entry: the event was applied, perhaps by this very
    /// delivery, its answer lost), then one that vanished or changed. Only each document's first write is
    /// judged: a later one in the same commit meets the document as the first left it.
    static func ownFailure(of writes: [Write], found: [DocumentName: FirestoreDocument?]) -> GoogleAPIError? {
        var seen: Set<DocumentName> = []
        var failures: [GoogleAPIError] = []
        for write in writes where seen.insert(write.document).inserted {
            let current = found[write.document] ?? nil
            switch write.precondition {
            case .exists(false)? where current != nil: return GoogleAPIError.exists(write.document)
            case .exists(true)? where current == nil: failures.append(GoogleAPIError.missing(write.document))
            case .updateTime(let time)? where current?.updateTime != time: failures.append(GoogleAPIError.stale(write.document))
            default: continue
            }
        }
        return failures.first
    }

    /// A document the entry's plan read at a version older than the one known here.
    private func staleWrite(in entry: Waiting) -> DocumentName? {
        entry.writes.first { write in
            if case .updateTime(let time) = write.precondition, let known = versions[write.document], time < known { return true }
            return false
        }?.document
    }
}
