import FirestoreModel
import GoogleClients
import HeraldCore
import Logging
import PushTokens
import Synchronization

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
