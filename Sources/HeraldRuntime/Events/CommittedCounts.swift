import FirestoreModel
import GoogleClients
import HeraldCore
import HeraldHTTPClient
import PushTokens

/// The counts pushes carry (a user's badge), as Firestore committed them.
///
/// A plan computes a badge from what it read; when two events for one user run side by side, each read
/// before the other's commit and both would send a stale count. So a push carries the value its own
/// commit produced (`transformResults`), or, when another delivery made that commit, the value stored
/// now. And since pushes of different events can still leave in another order than their commits, the
/// executor reads the counts again once its pushes are out and sends a badge-only correction to every
/// device whose count changed meanwhile: whichever push a device gets last was checked against the
/// store after it left.
struct CommittedCounts: Sendable {
    private(set) var values: [CountSource: FirestoreValue] = [:]

    /// Records what each write's transforms produced (the last transform on a field is its final value).
    mutating func record(_ writes: [Write], _ result: FirestoreClient.CommitResult) {
        for (write, results) in zip(writes, result.transformResults) {
            for (transform, value) in zip(write.transforms, results) {
                values[CountSource(document: write.document, field: transform.field)] = value
            }
        }
    }
}

extension CountSource {
    /// Recorded for a device whose badge is not known (a correction not known to have gone out): no
    /// stored count is equal to it, so the next check corrects the device.
    static let unknownBadge = -1
}

extension ExactlyOnceExecutor {
    /// The pushes with the counts they carry as committed: from this delivery's commits, else as stored
    /// now (another delivery committed them, or its answer was lost). A read that fails leaves the
    /// plan's count; the correction after sending catches it.
    func withCommittedCounts(_ pushes: [PushMessage], committed: CommittedCounts) async -> [PushMessage] {
        let unknown = Set(pushes.compactMap(\.count).filter { committed.values[$0] == nil }.map(\.document))
        let stored = unknown.isEmpty ? DocumentsRead() : ((try? await read(Array(unknown))) ?? DocumentsRead())
        return pushes.map { push in
            guard let source = push.count else { return push }
            let value = committed.values[source] ?? stored[source.document]?.value(at: source.field)
            guard committed.values[source] != nil || stored[source.document] != nil else { return push }
            var counted = push
            counted.fcm = push.fcm.withBadge(CountSource.badge(value))
            return counted
        }
    }

    /// After pushes went out: each device whose stored count is no longer the one it was sent gets a
    /// badge-only push with the count as stored, checked again after each round (a few rounds: a count
    /// that keeps changing is left to the events changing it, which send their own).
    /// Each correction's count is recorded in the ledger before it is sent, so a delivery that takes over
    /// after this one died compares the store with what the device may have got.
    /// - sent: the pushes as sent, with the badge each carried.
    func sendBadgeCorrections(_ sent: [(push: PushMessage, badge: Int)], state: LedgerState) async throws {
        var shown: [String: (push: PushMessage, badge: Int)] = [:]
        for item in sent where item.push.count != nil { shown[item.push.token] = item }
        for _ in 0..<3 where !shown.isEmpty {
            let stored = try await read(Array(Set(shown.values.compactMap { $0.push.count?.document })))
            let corrections = Self.correctionsDue(shown.values, stored: stored).sorted { $0.push.token < $1.push.token }
            guard !corrections.isEmpty else { return }
            // Until a correction is known to have gone out, the device may show either count: recorded as
            // unknown, a later delivery corrects it whatever the store says (a correction that failed,
            // or a delivery that died sending it).
            try await record(corrections.map { ($0.push, CountSource.unknownBadge) }, in: state)
            let deadlines = LeaseBudget(lease: pushLease).sends(from: .now)
            let messages = corrections.map {
                PushMessage(
                    userID: $0.push.userID, token: $0.push.token, fcm: FCMMessage.badgeOnly(token: $0.push.token, badge: $0.badge, data: ["reason": "recount"]))
            }
            let results = await services.send(messages, deadlines: deadlines)
            var transient: String?
            for (correction, result) in zip(corrections, results) {
                switch result {
                case .sent: shown[correction.push.token] = correction
                case .failed(let reason, true, _): transient = reason
                default: shown[correction.push.token] = nil
                }
            }
            let delivered = zip(corrections, results).compactMap { correction, result in if case .sent = result { correction } else { nil } }
            for (service, count) in Dictionary(delivered.map { (PushToken.kind(of: $0.push.token).rawValue, 1) }, uniquingKeysWith: +) {
                metrics?.push(service: service, result: "corrected", count: count)
            }
            // What those devices show now; without this record, a redelivery only corrects them once more.
            if !delivered.isEmpty { try? await record(delivered, in: state) }
            if let transient {
                // The trigger delivers the event again; the ledger's record of the counts sent tells it what to correct.
                throw DownstreamError.unavailable("a push correcting a badge failed transiently (\(transient))", retryAfterSeconds: 1)
            }
        }
    }

    /// Every device that was sent a count still shows the stored one (a count whose document is gone
    /// has nothing to correct); false when the read fails or has not answered by `deadline`, so the
    /// correction path reads again after the record (which must not wait for a slow check).
    func countsStillShown(_ sent: [(push: PushMessage, badge: Int)], until deadline: ContinuousClock.Instant) async -> Bool {
        let names = Array(Set(sent.compactMap { $0.push.count?.document }))
        let expired = DownstreamError.unavailable("the check of the counts sent ran out of the lease's time")
        guard let stored = try? await withDeadline(deadline, expired: expired, { try await read(names) }) else { return false }
        return Self.correctionsDue(sent, stored: stored).isEmpty
    }

    /// The devices whose stored count is no longer the one they were sent, each with the count stored; a
    /// count whose document is gone has nothing to correct.
    static func correctionsDue(_ shown: some Sequence<(push: PushMessage, badge: Int)>, stored: DocumentsRead) -> [(push: PushMessage, badge: Int)] {
        shown.compactMap { item in
            guard let source = item.push.count, let document = stored[source.document] else { return nil }
            let badge = CountSource.badge(document.value(at: source.field))
            return badge == item.badge ? nil : (item.push, badge)
        }
    }

    /// Records that the devices' counts were checked after this event's pushes (and corrected where they
    /// had changed), so a later delivery of the event does not correct them again: the events that
    /// changed the counts since sent their own. Best effort: without it, a redelivery sends the stored
    /// counts once more.
    func markCountsChecked(_ sent: [(push: PushMessage, badge: Int)], state: LedgerState) async {
        guard sent.contains(where: { $0.push.count != nil }) else { return }
        let write = Write(
            .update(state.main.name, fields: ["countsChecked": .boolean(true)], mask: [FieldPath("countsChecked")]), precondition: .exists(true))
        _ = try? await firestore.commitIdempotent(
            [write], retry: nil, deadline: LeaseBudget(lease: pushLease).deadline(LeaseBudget.checkedMark), essential: false)
    }

    /// A delivery of an event whose pushes went out before, and whose counts were not checked after: the
    /// devices whose recorded count is no longer the stored one are corrected (the delivery that sent
    /// them died before it checked).
    func sendBadgeCorrectionsAfterEarlierDelivery(_ pushes: [PushMessage], state: LedgerState) async throws {
        let sent = sentBefore(pushes, state: state)
        guard !sent.isEmpty else { return }
        do { try await sendBadgeCorrections(sent, state: state) } catch { throw Self.classify(error) }
        await markCountsChecked(sent, state: state)
    }

    /// The pushes carrying a count that the ledger records as sent, with the count each carried.
    func sentBefore(_ pushes: [PushMessage], state: LedgerState) -> [(push: PushMessage, badge: Int)] {
        pushes.compactMap { push in
            guard push.count != nil, let badge = state.sentCount(of: push.token) else { return nil }
            return (push, badge)
        }
    }

    /// The counts about to be sent, as the ledger's record of what each device was last sent.
    func record(_ counts: [(push: PushMessage, badge: Int)], in state: LedgerState) async throws {
        var byDocument: [DocumentName: [String: FirestoreValue]] = [:]
        for (push, badge) in counts {
            let key = EventLedger.key(push.token)
            byDocument[state.document(holding: key) ?? state.main.name, default: [:]][key] = .integer(Int64(badge))
        }
        let writes = byDocument.sorted { $0.key < $1.key }.map { name, counts in
            Write(.update(name, fields: ["counts": .map(counts)], mask: counts.keys.sorted().map { FieldPath("counts", $0) }), precondition: .exists(true))
        }
        _ = try await firestore.commitIdempotent(
            writes, retry: nil, deadline: LeaseBudget(lease: pushLease).deadline(LeaseBudget.countsRecord), essential: false)
    }
}
