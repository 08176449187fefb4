import FirestoreEvents
import FirestoreModel
import GoogleClients
import HeraldCore
import Logging
import PushClients

/// Reads from Firestore and carries plans out exactly once per (function, event):
/// 1. the plan's writes and the event's ledger entry are committed atomically, the entry with the
///    precondition that it does not exist yet: if it does, this event was applied before;
/// 2. a plan too large for one commit leaves its other parts in the ledger, each applied exactly once
///    by one more commit (see `EventLedger`);
/// 3. pushes without a final outcome in the ledger are sent, and the ledger records what became of them,
///    so a redelivery after a crash sends only what is still pending;
/// 4. whoever sends holds a claim on the ledger entry (`claims.{holder}`) until it has recorded the
///    outcome: a redelivery that arrives meanwhile (a trigger's timeout) answers 503 instead of sending
///    the same pushes again, and takes over only once the claim is older than `pushLease`. The sender
///    starts no send after 40% of the lease, stops waiting for FCM at 60% (an unanswered send is sent
///    once more by the next delivery), gives up the check of the badges at 75% and records by 95%, so
///    the lease is never overrun; it releases only its own claim.
/// A dry run reads for real and writes and sends nothing.
public struct ExactlyOnceExecutor: DocumentGateway {
    public let firestore: any FirestoreAPI
    /// FCM, and Expo's and Apple's services where configured: each push goes to its token's.
    public let services: PushServices
    public var fcm: FCMClient? { services.fcm }
    public let isDryRun: Bool
    public let functionName: String
    /// Ledger documents live at `{ledgerCollection}/{key}`; they carry `expireAt` for a TTL policy.
    public let ledgerCollection: String
    public let ledgerLifetime: Duration
    /// How long a claim on an event's pushes holds before another delivery may take them over.
    public let pushLease: Duration
    let logger: Logger
    let deadTokens: DeadTokenGuard
    let metrics: RuntimeMetrics?
    /// This instance's commits to a document, about one a second at most (gathered when it is busy).
    let commits: CommitCoalescer
    /// This instance's reads, and its records of pushes sent: fewer requests when it is busy.
    let reads: RequestGatherer<[DocumentName], [DocumentName: FirestoreDocument?]>
    let records: RequestGatherer<PushRecord, Result<Void, any Error>>

    public init(
        firestore: any FirestoreAPI, fcm: FCMClient?, expo: ExpoPushClient? = nil, apns: APNsClient? = nil, functionName: String, dryRun: Bool,
        logger: Logger,
        ledgerCollection: String = "_herald/events/ledger", ledgerLifetime: Duration = .seconds(7 * 86_400), pushLease: Double = 60,
        metrics: RuntimeMetrics? = nil
    ) {
        self.metrics = metrics
        self.firestore = firestore
        self.services = PushServices(fcm: fcm, expo: expo, apns: apns, logger: logger, metrics: metrics)
        self.isDryRun = dryRun
        self.functionName = functionName
        self.ledgerCollection = ledgerCollection
        self.ledgerLifetime = ledgerLifetime
        self.pushLease = .milliseconds(Int64(pushLease * 1000))
        self.logger = logger
        self.deadTokens = DeadTokenGuard(logger: logger)
        self.commits = CommitCoalescer(firestore: firestore, metrics: metrics)
        self.reads = Self.readGatherer(firestore)
        self.records = RequestGatherer(lanes: 1, maximum: 200, size: { $0.writes.count }, send: { records in await Self.commit(records, firestore) })
    }

    /// Reads gathered into one `batchGet` when the lanes are busy, each caller getting its own documents.
    static func readGatherer(
        _ firestore: any FirestoreAPI, lanes: Int = 1, maximum: Int = 300, patience: Duration = .milliseconds(250)
    ) -> RequestGatherer<[DocumentName], [DocumentName: FirestoreDocument?]> {
        RequestGatherer(
            lanes: lanes, maximum: maximum, patience: patience, size: { $0.count },
            send: { parts in
                let found = try await firestore.batchGet(Array(Set(parts.joined())), transaction: nil)
                return parts.map { names in
                    Dictionary(Set(names).compactMap { name in found[name].map { (name, $0) } }, uniquingKeysWith: { first, _ in first })
                }
            })
    }

    public func read(_ names: [DocumentName]) async throws -> DocumentsRead {
        do {
            var read = DocumentsRead()
            for (name, document) in try await reads(names) {
                if let document { read.found[name] = document } else { read.missing.insert(name) }
            }
            // The versions the plan will write on: the coalescer makes its shared writes conditional on them.
            await commits.observe(Array(read.found.values))
            return read
        } catch { throw Self.classify(error) }
    }

    public static let maximumListed = 100

    public func list(_ collections: [CollectionPath]) async throws -> [CollectionPath: [FirestoreDocument]] {
        try await runQueries(collections) { (StructuredQuery(collectionID: $0.collectionID, limit: Self.maximumListed), $0.parent) }
    }

    public func lookUp(_ lookups: [ValueLookup]) async throws -> [ValueLookup: [FirestoreDocument]] {
        try await runQueries(lookups) { ($0.query, nil) }
    }

    /// One query per key, all at once: what each key's query (and parent, nil for the root) found.
    func runQueries<Key: Hashable & Sendable>(
        _ keys: [Key], _ query: @escaping @Sendable (Key) -> (StructuredQuery, DocumentName?)
    ) async throws -> [Key: [FirestoreDocument]] {
        do {
            return try await withThrowingTaskGroup(of: (Key, [FirestoreDocument]).self) { group in
                for key in keys {
                    group.addTask {
                        let (structured, parent) = query(key)
                        return (key, try await firestore.runQuery(structured, parent: parent, transaction: nil))
                    }
                }
                var result: [Key: [FirestoreDocument]] = [:]
                for try await (key, documents) in group { result[key] = documents }
                return result
            }
        } catch { throw Self.classify(error) }
    }

    /// The ledger entry for this function and this event (docs/functions.md, "Exactly once"). A change is
    /// known by what it did, not by its event id, so one change delivered under two ids is still caught:
    /// a creation by the document and its create time (one creation has one, and later updates keep it,
    /// so it holds also when the event came without data and the document was read afterwards); an
    /// update or a deletion delivered with its data by the document's update time. An update or deletion
    /// delivered without data falls back on the event's id: the document as read now does not say which
    /// change it was (this function's own commit changes it). Hashed, so any of these makes a valid id.
    public func ledgerName(for event: DocumentChange) throws -> DocumentName {
        let identity: String
        let isCreation = event.dataWasOmitted ? event.kind == .created : event.effectiveKind == .created
        if isCreation, let created = event.newDocument?.createTime {
            identity = "\(functionName)\n\(event.document.resourceName)\ncreated\n\(created.rfc3339)"
        } else if !event.dataWasOmitted, let time = event.newDocument?.updateTime ?? event.oldDocument?.updateTime {
            identity = "\(functionName)\n\(event.document.resourceName)\n\(event.effectiveKind.rawValue)\n\(time.rfc3339)"
        } else {
            identity = "\(functionName)\n\(event.eventID)"
        }
        return try DocumentName(project: firestore.project, database: firestore.database, path: "\(ledgerCollection)/\(Digest.hex(identity))")
    }

    /// Carries out one delivery's plan (the contract: `DocumentGateway.execute`): the plan's writes and
    /// this event's ledger entry in one commit (or found committed by an earlier delivery), its further
    /// parts, then its pushes under this delivery's claim (`holder`), each token's result recorded, and
    /// badge-only corrections for devices whose count changed meanwhile (PushCounts.swift).
    public func execute(_ plan: Plan, for event: DocumentChange, delivery holder: String) async throws -> EffectsReport.Outcome {
        if isDryRun { return .applied }
        let ledger = EventLedger(main: try ledgerName(for: event))
        let started = ContinuousClock.now
        let first: FirstCommit
        if case .skipUnlessStarted(let reason) = plan.decision {
            // By this event's earlier delivery if its ledger entry exists: below, its pending ledger parts
            // are applied and the pushes this plan still offers sent (a message unsent since offers none).
            guard let state = try await readState(ledger) else { return .skipped(reason: reason) }
            first = FirstCommit(state: state, committed: false, holdsClaim: false)
        } else {
            // The plan's groups split between the first commit and ledger parts of their own, each group
            // applied whole in one commit.
            first = try await commitFirst(try ledger.layout(plan), ledger: ledger, event: event, holder: holder)
        }
        var state = first.state
        var didWork = first.committed
        var counts = first.counts
        do {
            didWork = try await applyPendingParts(&state, counts: &counts) || didWork
        } catch {
            if first.holdsClaim { await release(holder, ledger: ledger) }
            throw Self.classify(error)
        }
        let pending = plan.pushes.filter { state.isDue($0.token) }
        guard !pending.isEmpty else {
            if !didWork, state.main["countsChecked"] != .boolean(true) { try await sendBadgeCorrectionsAfterEarlierDelivery(plan.pushes, state: state) }
            return didWork ? .applied : .duplicate
        }
        var claimed = started
        if !first.holdsClaim {
            claimed = .now
            try await claim(state, holder: holder)
        }
        // Each push's badge as this delivery's commit produced it, else as stored now (an earlier delivery
        // committed): the plan's figure was its guess. The message sent carries it too.
        let counted = await withCommittedCounts(pending, committed: counts)
        // What an earlier delivery sent and did not get to check (it failed or died after its sends):
        // checked with this delivery's own pushes.
        let unchecked = state.main["countsChecked"] == .boolean(true) ? [] : sentBefore(plan.pushes.filter { !state.isDue($0.token) }, state: state)
        let (sent, retry, checked) = try await send(counted, state: state, holder: holder, claimedAt: claimed, eventID: event.eventID, alsoChecking: unchecked)
        if checked { return .applied }
        do { try await sendBadgeCorrections(sent + unchecked, state: state) } catch { throw retry ?? Self.classify(error) }
        if let retry { throw retry }
        await markCountsChecked(sent + unchecked, state: state)
        return .applied
    }

    struct FirstCommit {
        var state: LedgerState
        /// This delivery applied the plan's writes (else an earlier one did).
        var committed: Bool
        var holdsClaim: Bool
        /// What this delivery's commit produced for the counts its pushes carry.
        var counts = CommittedCounts()
    }

    /// Commits the plan's first writes with the ledger entries, or finds them committed before.
    func commitFirst(_ layout: EventLedger.Layout, ledger: EventLedger, event: DocumentChange, holder: String) async throws -> FirstCommit {
        let expireAt = Timestamp.now().adding(ledgerLifetime)
        // The plan's writes, then the ledger entry (with this holder's claim when there are pushes), then
        // its parts: the entries are the last `1 + partCount` writes.
        let writes = try ledger.firstCommit(layout, event: event, function: functionName, holder: holder, expireAt: expireAt)
        let hasPushes = !layout.pushShards.joined().isEmpty
        do {
            // A plan in one commit shares it with other events' writes to the same busy documents (merged
            // per document in the order of the events' times; counts add up), and gets its own writes'
            // results and its own outcome: a failure another event's writes met is not this one's. A plan
            // laid out in parts commits on its own (its parts are applied one commit each).
            let result = try await (layout.partCount == 0 ? commits.commit(writes, order: event.time) : firestore.commit(writes, transaction: nil))
            var counts = CommittedCounts()
            counts.record(writes, result)
            // The entries as written, with their versions (the parts' are the preconditions of their own commits).
            let entries = writes.suffix(1 + layout.partCount)
            let times = result.updateTimes.suffix(1 + layout.partCount)
            let documents = zip(entries, times).compactMap { write, time -> FirestoreDocument? in
                guard case .update(let name, let fields, _) = write.operation else { return nil }  // ledger entries are updates
                return FirestoreDocument(name: name, fields: fields, updateTime: time)
            }
            guard let main = documents.first else { throw DownstreamError.rejected("the commit answered without the ledger entry") }
            return FirstCommit(
                state: LedgerState(main: main, parts: Array(documents.dropFirst())), committed: true, holdsClaim: hasPushes, counts: counts)
        } catch let error as GoogleAPIError where error.status == .alreadyExists {
            // Applied before: carry on from what the ledger says. Without a ledger entry, another
            // document the plan creates exists now (a read's receipt another event made): plan again.
            guard let state = try await readState(ledger) else {
                throw DownstreamError.changedDuringPlanning("a document the plan creates exists now (\(error.message))")
            }
            // Applied by this very commit, if the entry names this holder: the client retried it after an
            // UNAVAILABLE whose commit had gone through.
            let ours = state.claims[holder] != nil
            return FirstCommit(state: state, committed: ours, holdsClaim: ours)
        } catch let error as GoogleAPIError where error.status == .notFound || error.status == .failedPrecondition {
            // A document the plan relied on changed between the read and the commit. Nothing was
            // written; the runtime reads again and plans again.
            throw DownstreamError.changedDuringPlanning("a document changed while the event was planned (\(error.message))")
        } catch let error as TransportError {
            // No answer: the commit may or may not have been applied. The ledger says whether, and that it
            // was this delivery's where the entry holds its claim (a plan with pushes); without pushes no
            // entry names its delivery, so one applied by this commit is reported a duplicate (its
            // effects the same).
            guard let state = try? await readState(ledger) else { throw Self.classify(error) }
            let ours = state.claims[holder] != nil
            logger.info("the first commit's answer was lost; the ledger shows it \(ours || !hasPushes ? "applied" : "applied by another delivery")")
            return FirstCommit(state: state, committed: ours, holdsClaim: ours)
        } catch {
            throw Self.classify(error)
        }
    }

    /// The ledger's main entry and parts as stored now, or nil if there is no entry.
    func readState(_ ledger: EventLedger) async throws -> LedgerState? {
        guard let main = try await read([ledger.main])[ledger.main] else { return nil }
        let count = Int(clamping: min(max(main["parts"]?.integerValue ?? 0, 0), 10_000))
        guard count > 0 else { return LedgerState(main: main, parts: []) }
        let names = try (1...count).map { index throws(DownstreamError) in try ledger.part(index) }
        let found = try await read(names)
        return LedgerState(main: main, parts: names.compactMap { found[$0] })
    }

    /// Applies the parts whose writes are still pending; true if this delivery applied any.
    func applyPendingParts(_ state: inout LedgerState, counts: inout CommittedCounts) async throws -> Bool {
        var applied = false
        for (index, part) in state.parts.enumerated() where part["state"] == PartState.pending.value {
            state.parts[index] = try await applyPart(part, counts: &counts)
            applied = true
        }
        return applied
    }

    /// One part's writes and its mark as applied, in one commit conditional on the part as read; a write
    /// to a document deleted since is left out (a group may only require that its documents exist).
    func applyPart(_ part: FirestoreDocument, counts: inout CommittedCounts) async throws -> FirestoreDocument {
        var writes = try LedgerState.writes(of: part)
        var current = part
        for attempt in 1...3 {
            guard let version = current.updateTime else { throw DownstreamError.rejected("ledger part \(part.name.path) has no version") }
            let done = Write(
                .update(part.name, fields: ["state": PartState.applied.value], mask: [FieldPath("state"), FieldPath("writes")]),
                precondition: .updateTime(version))
            do {
                let result = try await firestore.commit(writes + [done], transaction: nil)
                counts.record(writes, result)
                return FirestoreDocument(name: part.name, fields: ["state": PartState.applied.value, "pushes": part["pushes"] ?? .map([:])])
            } catch let error as GoogleAPIError where error.status == .notFound || error.status == .failedPrecondition || error.status == .alreadyExists {
                guard attempt < 3 else { throw DownstreamError.unavailable("ledger part \(part.name.path) could not be applied: \(error.message)") }
            } catch let error as TransportError where attempt < 3 {
                logger.info("a ledger part's commit got no answer (\(error)); reading it back")
            }
            // Applied by another delivery (or by this one, its answer lost)? Else drop writes to deleted documents and try again.
            guard let now = try await read([part.name])[part.name] else { throw DownstreamError.rejected("ledger part \(part.name.path) vanished") }
            if now["state"] == PartState.applied.value { return now }
            current = now
            let targets = try await read(Array(Set(writes.map(\.document))))
            writes = writes.filter { targets[$0.document] != nil || $0.precondition == nil }
        }
        throw DownstreamError.unavailable("ledger part \(part.name.path) could not be applied")
    }

    /// Google's answers, as what the trigger should do (`FailureKind`): retried later, throttled, or refused.
    static func classify(_ error: any Error) -> any Error {
        if let downstream = error as? DownstreamError { return downstream }
        if let json = error as? FirestoreJSONError { return DownstreamError.rejected("unreadable answer from Firestore: \(json)") }
        let api = error as? GoogleAPIError
        let transport = error as? TransportError
        let what = transport.map { "Firestore unreachable: \($0)" } ?? api.map { "Firestore: \($0)" } ?? "\(error)"
        let retryAfter = api?.retryAfterSeconds ?? transport?.retryAfterSeconds
        switch FailureKind(error) {
        case .throttled: return DownstreamError.throttled(what, retryAfterSeconds: retryAfter)
        case .unavailable, .outcomeUnknown, .contention, .notSent: return DownstreamError.unavailable(what, retryAfterSeconds: retryAfter)
        case .credentialsRefused:
            // Usually an IAM change away from working: let the trigger retry rather than drop the event.
            guard let api else { return DownstreamError.unavailable(what) }
            let fix = api.credentialsFix(api: "firestore.googleapis.com", role: "roles/datastore.user")
            return DownstreamError.unavailable("Firestore refused the credentials (\(api)): \(fix)")
        case .rejected: return api.map { DownstreamError.rejected("Firestore: \($0)") } ?? error
        }
    }
}
