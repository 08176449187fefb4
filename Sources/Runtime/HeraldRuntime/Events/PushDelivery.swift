import FirestoreModel
import GoogleClients
import HeraldCore
import Logging
import PushTokens
import Synchronization

/// An event's pending pushes: claimed in its ledger entry, sent within the claim's lease, and what
/// became of each recorded, so that no delivery sends a push another has sent or is sending.
struct PushDelivery: Sendable {
    let firestore: any FirestoreAPI
    let services: PushServices
    let reads: DocumentReads
    let budget: LeaseBudget
    let deadTokens: DeadTokenGuard
    let badges: BadgeCorrections
    let logger: Logger
    let metrics: RuntimeMetrics?
    /// The records of pushes sent, several events' in one commit when the instance is busy.
    let records: RequestGatherer<PushRecord, Result<Void, any Error>>

    /// Takes the pending pushes of an event applied before, unless another delivery holds a live claim.
    /// The claim is conditional on the entry as read, so of two deliveries taking over at once one wins.
    /// A claim dated after the entry's version is not live: one kept would hold the pushes back until the
    /// event's dead letter.
    func claim(_ state: LedgerState, holder: String) async throws {
        let now = Timestamp.now()
        let lease = budget.lease / .seconds(1)
        guard let version = state.main.updateTime else { throw DownstreamError.unavailable("the ledger entry has no version") }
        // A claim carries the time of the commit that wrote it, so it is never later than the entry's
        // version (a second's leeway for the time's precision); one that is was written by something other
        // than a delivery, and is not live. No clock of this instance is involved.
        for (other, at) in state.claims where at <= version.adding(.seconds(1)) {
            let age = Double(now.seconds - at.seconds) + Double(now.nanos - at.nanos) / 1e9
            if age < lease {
                throw DownstreamError.unavailable(
                    "another delivery of this event is sending its pushes (claimed \(Int(max(age, 0))) s ago by \(other))",
                    retryAfterSeconds: Int(min(lease - age, lease)) + 1)
            }
        }
        // Expired claims (their holders died) go; this holder's is stamped with Firestore's time.
        let stale = state.claims.keys.map { FieldPath("claims", $0) }
        let write = Write(
            .update(state.main.name, fields: [:], mask: stale), transforms: [FieldTransform(FieldPath("claims", holder), .setToRequestTime)],
            precondition: .updateTime(version))
        do {
            _ = try await firestore.commit([write], transaction: nil)
        } catch let error as GoogleAPIError where error.status == .failedPrecondition || error.status == .notFound {
            throw DownstreamError.unavailable("another delivery of this event took its pushes over", retryAfterSeconds: 1)
        } catch let error as TransportError {
            // No answer: the claim holds if the entry now names this holder.
            guard let main = try? await reads([state.main.name])[state.main.name], main["claims"]?.mapValue?[holder] != nil else {
                throw DownstreamError.from(firestore: error)
            }
        } catch {
            throw DownstreamError.from(firestore: error)
        }
        if !state.claims.isEmpty { metrics?.leaseTakeover() }
    }

    /// Gives up this holder's claim (best effort: an unreleased claim expires with its lease).
    func release(_ holder: String, ledger: EventLedger) async {
        let write = Write(.update(ledger.main, fields: [:], mask: [FieldPath("claims", holder)]), precondition: .exists(true))
        _ = try? await firestore.commitIdempotent([write], retry: nil, deadline: nil, essential: false)
    }

    /// Sends the pushes and records their outcome, all within the lease taken at `claimedAt`: no send
    /// starts after 40% of the lease (those stay pending for a later attempt); a send FCM has not answered
    /// by 60% is recorded unanswered and sent once more by the next delivery (the event answers 503 for
    /// it), with the same collapse identifiers, so a device that got it shows one alert; and the
    /// record is retried until 95%, so that losing it, which would send the pushes again, takes Firestore
    /// failing from the sends' end (or the counts' check, by 75%) until then: a fifth of the lease at least.
    /// Returns the pushes sent, each with the badge it carried, the failure to hand back to the trigger
    /// when some failed transiently (they stay pending for a redelivery), and whether the counts were
    /// checked: every push went out and every device's count was still the stored one when read after
    /// the sends, by 75% of the lease (those of `alsoChecking` too: an earlier delivery's), recorded in
    /// the same commit (else `BadgeCorrections.correct` follows).
    func send(
        _ pushes: [PushMessage], state: LedgerState, holder: String, claimedAt: ContinuousClock.Instant, eventID: String,
        alsoChecking earlier: [(push: PushMessage, badge: Int)] = []
    ) async throws -> (
        sent: [(push: PushMessage, badge: Int)], retry: DownstreamError?, checked: Bool
    ) {
        let results = await services.send(pushes, deadlines: budget.sends(from: claimedAt))
        var eventLogger = logger
        eventLogger[metadataKey: "eventId"] = "\(eventID)"
        let outcome = deadTokens.judge(Array(zip(pushes, results)), before: state.state(of:), logger: eventLogger)
        if let metrics {
            let serviceOf = { (token: String) in PushToken.kind(of: token).rawValue }
            let marked = outcome.marks.filter { $0.value != .skipped }.map { (serviceOf($0.key), $0.value.rawValue) }
            for (pair, count) in Dictionary(marked.map { ("\($0.0) \($0.1)", 1) }, uniquingKeysWith: +) {
                let parts = pair.split(separator: " ")
                metrics.push(service: String(parts[0]), result: String(parts[1]), count: count)
            }
            for (service, count) in Dictionary(outcome.retryable.map { (serviceOf($0.token), 1) }, uniquingKeysWith: +) {
                metrics.push(service: service, result: "retried", count: count)
            }
            metrics.tokenRemovalsRefused(outcome.refusedRemovals)
        }

        // With each push sent (or perhaps sent: FCM did not answer in time), the count it carried: a
        // later delivery corrects the device if the count changed.
        let sent = pushes.compactMap { push -> (push: PushMessage, badge: Int)? in
            outcome.marks[push.token]?.wentOut == true ? (push, push.fcm.badge ?? 0) : nil
        }
        var marksByDocument = state.byDocument(outcome.marks.map { ($0.key, $0.value.value) })
        let countsByDocument = state.byDocument(sent.filter { $0.push.count != nil }.map { ($0.push.token, FirestoreValue.integer(Int64($0.badge))) })
        if marksByDocument[state.main.name] == nil { marksByDocument[state.main.name] = [:] }
        // The usual case, in one commit with the record: every push out and no count changed since.
        var checked = false
        if outcome.retryable.isEmpty, (sent + earlier).contains(where: { $0.push.count != nil }) {
            // Given up in time to leave the record a fifth of the lease.
            checked = await badges.countsStillShown(sent + earlier, until: budget.deadline(LeaseBudget.countsCheckedBy, from: claimedAt))
        }
        // The record: what became of each push, and this holder's claim released (masked and absent:
        // deleted), so a redelivery for the transient failures may send them at once. The pushes are out:
        // losing this record would send them again, so it is retried until shortly before the lease ends,
        // even when a failure leaves unknown whether it was applied (writing it twice is harmless).
        // Expo's tickets, for their receipts (ExpoReceipts.swift), with the main entry's record.
        let tickets = ExpoReceipts.record(Array(zip(pushes, results)), at: .now())
        let writes = marksByDocument.sorted { $0.key < $1.key }.map { name, marks in
            let counts = countsByDocument[name] ?? [:]
            let isMain = name == state.main.name
            let mask =
                marks.keys.sorted().map { FieldPath("pushes", $0) } + counts.keys.sorted().map { FieldPath("counts", $0) }
                + (isMain ? [FieldPath("claims", holder)] + tickets.mask : []) + (isMain && checked ? [FieldPath("countsChecked")] : [])
            var fields: [String: FirestoreValue] = isMain ? tickets.fields : [:]
            if !marks.isEmpty { fields["pushes"] = .map(marks) }
            if !counts.isEmpty { fields["counts"] = .map(counts) }
            if isMain && checked { fields["countsChecked"] = .boolean(true) }
            return Write(.update(name, fields: fields, mask: mask), precondition: .exists(true))
        }
        let recordBy = budget.deadline(LeaseBudget.recordedBy, from: claimedAt)
        do {
            try await records(PushRecord(writes: writes, deadline: recordBy)).get()
        } catch {
            let sent = outcome.marks.values.filter(\.wentOut).count
            logger.error(
                "\(sent) pushes were sent but their record could not be written before the lease ended (\(error)); a redelivery after the lease may send them again"
            )
            throw DownstreamError.from(firestore: error)
        }
        for removal in outcome.removals {
            // One at a time and best effort: a token changed since it was read must not be removed,
            // and its precondition failing must not fail the event.
            do {
                _ = try await firestore.commit([removal], transaction: nil)
                metrics?.tokenRemoved()
            } catch {
                logger.info("kept a dead token that changed since it was read: \(error)")
            }
        }
        guard let reason = outcome.retryable.first?.reason else { return (sent, nil, checked) }
        let after = outcome.retryable.compactMap(\.after).max()
        let message = "\(outcome.retryable.count) of \(pushes.count) pushes failed transiently (\(reason))"
        return (
            sent, after.map { DownstreamError.throttled(message, retryAfterSeconds: $0) } ?? DownstreamError.unavailable(message, retryAfterSeconds: 1),
            false
        )
    }
}

/// What became of one event's pushes, to be written by `deadline` (its claim's lease).
struct PushRecord: Sendable {
    var writes: [Write]
    var deadline: ContinuousClock.Instant
}

extension PushDelivery {
    /// The records of several events' pushes in one commit (each writes only its own event's ledger
    /// entries); one alone, or each of them when the shared commit fails, in a commit of its own retried
    /// until its deadline.
    static func commit(_ records: [PushRecord], _ firestore: any FirestoreAPI) async -> [Result<Void, any Error>] {
        if records.count > 1, let deadline = records.map(\.deadline).min() {
            do {
                _ = try await firestore.commitIdempotent(records.flatMap(\.writes), retry: RetryPolicy.none, deadline: deadline, essential: true)
                return records.map { _ in .success(()) }
            } catch {
                // Each as it would have gone alone (writing a record twice is harmless).
            }
        }
        return await withTaskGroup(of: (Int, Result<Void, any Error>).self) { group in
            for (index, record) in records.enumerated() {
                group.addTask {
                    do {
                        _ = try await firestore.commitIdempotent(record.writes, retry: .until(record.deadline), deadline: record.deadline, essential: true)
                        return (index, .success(()))
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            var results = [Result<Void, any Error>](repeating: .success(()), count: records.count)
            for await (index, result) in group { results[index] = result }
            return results
        }
    }
}
