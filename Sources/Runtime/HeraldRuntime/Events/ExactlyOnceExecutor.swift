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
    /// The executor's parts, in the order an event meets them.
    let reads: DocumentReads
    let ledgerCommits: LedgerCommits
    let delivery: PushDelivery
    let badges: BadgeCorrections

    public init(
        firestore: any FirestoreAPI, fcm: FCMClient?, expo: ExpoPushClient? = nil, apns: APNsClient? = nil, functionName: String, dryRun: Bool,
        logger: Logger,
        ledgerCollection: String = "_herald/events/ledger", ledgerLifetime: Duration = .seconds(7 * 86_400), pushLease: Double = 60,
        metrics: RuntimeMetrics? = nil
    ) {
        self.firestore = firestore
        let services = PushServices(fcm: fcm, expo: expo, apns: apns, logger: logger, metrics: metrics)
        self.services = services
        self.isDryRun = dryRun
        self.functionName = functionName
        self.ledgerCollection = ledgerCollection
        self.ledgerLifetime = ledgerLifetime
        self.pushLease = .milliseconds(Int64(pushLease * 1000))
        let commits = CommitCoalescer(firestore: firestore, metrics: metrics)
        let reads = DocumentReads(firestore, commits: commits)
        let budget = LeaseBudget(lease: self.pushLease)
        let badges = BadgeCorrections(firestore: firestore, services: services, reads: reads, budget: budget, metrics: metrics)
        self.reads = reads
        self.badges = badges
        self.ledgerCommits = LedgerCommits(
            firestore: firestore, commits: commits, reads: reads, functionName: functionName, ledgerLifetime: ledgerLifetime, logger: logger)
        self.delivery = PushDelivery(
            firestore: firestore, services: services, reads: reads, budget: budget, deadTokens: DeadTokenGuard(logger: logger), badges: badges,
            logger: logger, metrics: metrics,
            records: RequestGatherer(lanes: 1, maximum: 200, size: { $0.writes.count }, send: { records in await PushDelivery.commit(records, firestore) }))
    }

    public func read(_ names: [DocumentName]) async throws -> DocumentsRead { try await reads(names) }

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
        } catch { throw DownstreamError.from(firestore: error) }
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
    /// badge-only corrections for devices whose count changed meanwhile (`BadgeCorrections`).
    public func execute(_ plan: Plan, for event: DocumentChange, delivery holder: String) async throws -> EffectsReport.Outcome {
        if isDryRun { return .applied }
        let ledger = EventLedger(main: try ledgerName(for: event))
        let started = ContinuousClock.now
        let first: LedgerCommits.FirstCommit
        if case .skipUnlessStarted(let reason) = plan.decision {
            // By this event's earlier delivery if its ledger entry exists: below, its pending ledger parts
            // are applied and the pushes this plan still offers sent (a message unsent since offers none).
            guard let state = try await ledgerCommits.readState(ledger) else { return .skipped(reason: reason) }
            first = LedgerCommits.FirstCommit(state: state, committed: false, holdsClaim: false)
        } else {
            // The plan's groups split between the first commit and ledger parts of their own, each group
            // applied whole in one commit.
            first = try await ledgerCommits.commitFirst(try ledger.layout(plan), ledger: ledger, event: event, holder: holder)
        }
        var state = first.state
        var didWork = first.committed
        var counts = first.counts
        do {
            didWork = try await ledgerCommits.applyPendingParts(&state, counts: &counts) || didWork
        } catch {
            if first.holdsClaim { await delivery.release(holder, ledger: ledger) }
            throw DownstreamError.from(firestore: error)
        }
        let pending = plan.pushes.filter { state.isDue($0.token) }
        guard !pending.isEmpty else {
            if !didWork, state.main["countsChecked"] != .boolean(true) { try await badges.correctAfterEarlierDelivery(plan.pushes, state: state) }
            return didWork ? .applied : .duplicate
        }
        var claimed = started
        if !first.holdsClaim {
            claimed = .now
            try await delivery.claim(state, holder: holder)
        }
        // Each push's badge as this delivery's commit produced it, else as stored now (an earlier delivery
        // committed): the plan's figure was its guess. The message sent carries it too.
        let counted = await badges.withCommittedCounts(pending, committed: counts)
        // What an earlier delivery sent and did not get to check (it failed or died after its sends):
        // checked with this delivery's own pushes.
        let unchecked = state.main["countsChecked"] == .boolean(true) ? [] : badges.sentBefore(plan.pushes.filter { !state.isDue($0.token) }, state: state)
        let (sent, retry, checked) = try await delivery.send(
            counted, state: state, holder: holder, claimedAt: claimed, eventID: event.eventID, alsoChecking: unchecked)
        if checked { return .applied }
        do { try await badges.correct(sent + unchecked, state: state) } catch { throw retry ?? DownstreamError.from(firestore: error) }
        if let retry { throw retry }
        await badges.markCountsChecked(sent + unchecked, state: state)
        return .applied
    }
}
