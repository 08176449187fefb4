import FirestoreModel
import GoogleClients
import HeraldCore
import Logging
import PushTokens
import Synchronization

/// The send phase of `ExactlyOnceExecutor`: claiming an event's pending pushes, sending them within the
/// claim's lease, and recording what became of each.
extension ExactlyOnceExecutor {
    /// Takes the pending pushes of an event applied before, unless another delivery holds a live claim.
    /// The claim is conditional on the entry as read, so of two deliveries taking over at once one wins.
    /// A claim dated after the entry's version is not live: one kept would hold the pushes back until the
    /// event's dead letter.
    func claim(_ state: LedgerState, holder: String) async throws {
        let now = Timestamp.now()
        let lease = pushLease / .seconds(1)
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
            guard let main = try? await read([state.main.name])[state.main.name], main["claims"]?.mapValue?[holder] != nil else {
                throw Self.classify(error)
            }
        } catch {
            throw Self.classify(error)
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
    /// the same commit (else `sendBadgeCorrections` follows).
    func send(
        _ pushes: [PushMessage], state: LedgerState, holder: String, claimedAt: ContinuousClock.Instant, eventID: String,
        alsoChecking earlier: [(push: PushMessage, badge: Int)] = []
    ) async throws -> (
        sent: [(push: PushMessage, badge: Int)], retry: DownstreamError?, checked: Bool
    ) {
        let budget = LeaseBudget(lease: pushLease)
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
        var marksByDocument: [DocumentName: [String: FirestoreValue]] = [:]
        var countsByDocument: [DocumentName: [String: FirestoreValue]] = [:]
        for (token, mark) in outcome.marks {
            let key = EventLedger.key(token)
            marksByDocument[state.document(holding: key) ?? state.main.name, default: [:]][key] = mark.value
        }
        for (push, badge) in sent where push.count != nil {
            let key = EventLedger.key(push.token)
            countsByDocument[state.document(holding: key) ?? state.main.name, default: [:]][key] = .integer(Int64(badge))
        }
        if marksByDocument[state.main.name] == nil { marksByDocument[state.main.name] = [:] }
        // The usual case, in one commit with the record: every push out and no count changed since.
        var checked = false
        if outcome.retryable.isEmpty, (sent + earlier).contains(where: { $0.push.count != nil }) {
            // Given up in time to leave the record a fifth of the lease.
            checked = await countsStillShown(sent + earlier, until: budget.deadline(LeaseBudget.countsCheckedBy, from: claimedAt))
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
            throw Self.classify(error)
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

extension ExactlyOnceExecutor {
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

/// Decides what FCM's answers mean for the tokens, and refuses to remove tokens when too many come back
/// dead at once: that is a misconfiguration (the wrong project, an endpoint that is not FCM), not a
/// crowd of uninstalled apps, and removing them would lose every device. Such a batch removes nothing
/// and logs an ERROR naming the likely cause.
/// A batch reaching two people or more is judged by people, not devices: one person who uninstalled the
/// app from two devices of three in a conversation is no misconfiguration (judged by devices, their
/// tokens were kept for ever, with an ERROR on every message to them).
final class DeadTokenGuard: Sendable {
    /// Share above which nothing is removed: of the people answered in one batch of at least
    /// `minimumBatch` answers whose every device came back dead (of the devices, for a batch reaching
    /// one person while the window is short of `minimumWindow`), or of the dead answers over the last
    /// `window` once there are at least `minimumWindow`.
    let threshold: Double
    let minimumBatch: Int
    static let window = 200
    static let minimumWindow = 10
    let logger: Logger
    let recent = Mutex<[Bool]>([])
    /// What the guard raises an ERROR about, each at most once a minute (one must not silence the other).
    enum Complaint: Hashable { case deadTokens, refusedCredentials }
    let lastComplaint = Mutex<[Complaint: ContinuousClock.Instant]>([:])

    /// Whether a batch reaching several people is judged by people (an event's pushes) or by devices
    /// (the token sweep's pages: tokens unrefreshed for weeks, mostly one per person).
    let judgesPeople: Bool

    init(threshold: Double = 0.5, minimumBatch: Int = 3, judgesPeople: Bool = true, logger: Logger) {
        self.threshold = threshold
        self.minimumBatch = minimumBatch
        self.judgesPeople = judgesPeople
        self.logger = logger
    }

    struct Outcome {
        /// Token → what became of its push. Transient failures have no mark: they stay pending.
        var marks: [String: PushState] = [:]
        var removals: [Write] = []
        var retryable: [(token: String, reason: String, after: Int?)] = []
        /// Dead tokens kept because too many came back dead at once.
        var refusedRemovals = 0
    }

    /// - before: each token's state before this send (an unanswered push is sent once more, not twice).
    /// - logger: the event's, for the lines about its pushes (the guard's own by default).
    func judge(_ results: [(PushMessage, SendResult)], before: (String) -> PushState? = { _ in nil }, logger: Logger? = nil) -> Outcome {
        let logger = logger ?? self.logger
        var outcome = Outcome()
        var dead: [PushMessage] = []
        for (push, result) in results {
            switch result {
            case .sent: outcome.marks[push.token] = .sent
            case .dead(let reason):
                outcome.marks[push.token] = .dead
                dead.append(push)
                logger.info("token of \(push.userID) is dead (\(reason))")
            case .failed(let reason, true, let after):
                outcome.retryable.append((push.token, reason, after))
                // Retried until the dead letter, and every push waits on it: loud, as a permanent failure was.
                if SendResult.isCredentialsRefusal(reason) { complain(.refusedCredentials, reason) }
            case .failed(let reason, false, _):
                // Not transient: the message is already in the app; a push that can never go is not retried.
                outcome.marks[push.token] = .failed
                logger.error("push to a device of \(push.userID) failed for good: \(reason)")
            case .skipped:
                // A service this deployment cannot send to: the token stays, and the push is not tried again.
                outcome.marks[push.token] = .skipped
            case .unanswered(let reason) where before(push.token) == .unanswered:
                outcome.marks[push.token] = .unansweredAgain
                logger.warning(
                    "\(PushToken.kind(of: push.token).serviceName) had not answered a push to a device of \(push.userID) when the lease's deadline came, a second time; it may have been delivered and is not sent a third time (\(reason))"
                )
            case .unanswered(let reason):
                // It may have been delivered; sent once more by the next delivery, under the same collapse
                // identifiers (apns-collapse-id, Android's tag and collapse key, data.messageId).
                outcome.marks[push.token] = .unanswered
                outcome.retryable.append((push.token, "\(PushToken.kind(of: push.token).serviceName) did not answer in time", nil))
                logger.warning(
                    "\(PushToken.kind(of: push.token).serviceName) had not answered a push to a device of \(push.userID) when the lease's deadline came; it may have been delivered and is sent once more on the next delivery, with the same collapse identifiers (\(reason))"
                )
            }
        }
        let answered = results.filter {
            switch $0.1 {
            case .failed(_, true, _), .unanswered, .skipped: false
            default: true
            }
        }
        let (windowDead, windowCount) = recent.withLock { window in
            window += answered.map { if case .dead = $0.1 { true } else { false } }
            if window.count > Self.window { window.removeFirst(window.count - Self.window) }
            return (window.filter { $0 }.count, window.count)
        }
        let people = Set(answered.map(\.0.userID))
        let reached = Set(answered.filter { if case .dead = $0.1 { false } else { true } }.map(\.0.userID))
        let gone = people.subtracting(reached).count
        let mostDevicesDead = Double(dead.count) > threshold * Double(answered.count)
        let batchSuspect =
            if answered.count < minimumBatch {
                false
            } else if !judgesPeople {
                mostDevicesDead
            } else if people.count >= 2 {
                Double(gone) > threshold * Double(people.count)
            } else {
                // One person alone (a direct message, a receipt to one's own devices) says nothing of
                // people: judged by devices until the window has seen enough answers to judge instead.
                windowCount < Self.minimumWindow && mostDevicesDead
            }
        let windowSuspect = windowCount >= Self.minimumWindow && Double(windowDead) > threshold * Double(windowCount)
        if !dead.isEmpty, batchSuspect || windowSuspect {
            complain(
                .deadTokens,
                "The push services answered \(dead.count) of \(answered.count) sends (every device of \(gone) of \(people.count) people, and \(windowDead) of the last \(windowCount) sends) with a dead token: "
                    + "more than a crowd of uninstalled apps. Likely FCM_ENDPOINT is not FCM, the credentials are another project's, or APNs's environment (sandbox or production) is not the app's. No token removed."
            )
            outcome.refusedRemovals = dead.count
            return outcome
        }
        outcome.removals = dead.compactMap(\.removal)
        return outcome
    }

    /// An ERROR at most once a minute for each kind of complaint.
    func complain(_ complaint: Complaint, _ message: String) {
        let due = lastComplaint.withLock { last in
            if let previous = last[complaint], ContinuousClock.now - previous < .seconds(60) { return false }
            last[complaint] = .now
            return true
        }
        if due { logger.error("\(message)") }
    }
}
