import FirestoreModel
import GoogleClients
import HeraldCore
import HeraldHTTPClient
import PushTokens

/// The badges devices show, kept equal to the stored counts: each push carries its count as committed,
/// and once the pushes are out, every device whose count changed meanwhile gets a badge-only push with
/// the count as stored (`CommittedCounts` says why).
struct BadgeCorrections: Sendable {
    let firestore: any FirestoreAPI
    let services: PushServices
    let reads: DocumentReads
    let budget: LeaseBudget
    let metrics: RuntimeMetrics?

    /// The pushes with the counts they carry as committed: from this delivery's commits, else as stored
    /// now (another delivery committed them, or its answer was lost). A read that fails leaves the
    /// plan's count; the correction after sending catches it.
    func withCommittedCounts(_ pushes: [PushMessage], committed: CommittedCounts) async -> [PushMessage] {
        let unknown = Set(pushes.compactMap(\.count).filter { committed.values[$0] == nil }.map(\.document))
        let stored = unknown.isEmpty ? DocumentsRead() : ((try? await reads(Array(unknown))) ?? DocumentsRead())
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
    func correct(_ sent: [(push: PushMessage, badge: Int)], state: LedgerState) async throws {
        var shown: [String: (push: PushMessage, badge: Int)] = [:]
        for item in sent where item.push.count != nil { shown[item.push.token] = item }
        for _ in 0..<3 where !shown.isEmpty {
            let stored = try await reads(Array(Set(shown.values.compactMap { $0.push.count?.document })))
            let corrections = Self.correctionsDue(shown.values, stored: stored).sorted { $0.push.token < $1.push.token }
            guard !corrections.isEmpty else { return }
            // Until a correction is known to have gone out, the device may show either count: recorded as
            // unknown, a later delivery corrects it whatever the store says (a correction that failed,
            // or a delivery that died sending it).
            try await record(corrections.map { ($0.push, CountSource.unknownBadge) }, in: state)
            let deadlines = budget.sends(from: .now)
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
    /// correction reads again after the record (which must not wait for a slow check).
    func countsStillShown(_ sent: [(push: PushMessage, badge: Int)], until deadline: ContinuousClock.Instant) async -> Bool {
        let names = Array(Set(sent.compactMap { $0.push.count?.document }))
        let expired = DownstreamError.unavailable("the check of the counts sent ran out of the lease's time")
        guard let stored = try? await withDeadline(deadline, expired: expired, { try await reads(names) }) else { return false }
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
            [write], retry: nil, deadline: budget.deadline(LeaseBudget.checkedMark), essential: false)
    }

    /// A delivery of an event whose pushes went out before, and whose counts were not checked after: the
    /// devices whose recorded count is no longer the stored one are corrected (the delivery that sent
    /// them died before it checked).
    func correctAfterEarlierDelivery(_ pushes: [PushMessage], state: LedgerState) async throws {
        let sent = sentBefore(pushes, state: state)
        guard !sent.isEmpty else { return }
        do { try await correct(sent, state: state) } catch { throw DownstreamError.from(firestore: error) }
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
        let writes = state.byDocument(counts.map { ($0.push.token, FirestoreValue.integer(Int64($0.badge))) }).sorted { $0.key < $1.key }.map { name, counts in
            Write(.update(name, fields: ["counts": .map(counts)], mask: counts.keys.sorted().map { FieldPath("counts", $0) }), precondition: .exists(true))
        }
        _ = try await firestore.commitIdempotent(
            writes, retry: nil, deadline: budget.deadline(LeaseBudget.countsRecord), essential: false)
    }
}
