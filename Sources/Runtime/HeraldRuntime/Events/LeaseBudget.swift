import GoogleClients

/// How an event's push lease (`HERALD_PUSH_LEASE`) is spent, from the moment a delivery claims the
/// event's pushes. A second delivery takes the pushes over only once the claim is a lease old, so every
/// step that could send or lose a push ends inside it:
/// - the sends start by 40% of the lease and are over, answered or not, by 60%;
/// - the check that the counts sent are still the stored ones gives up at 75%;
/// - the record of the sends is retried until 95%: losing it (which would send the pushes again)
///   takes Firestore failing for a fifth of the lease at least.
/// Bookkeeping after the sends, which a redelivery can redo, gets a share of the lease from when it starts:
/// half for the record of the counts about to be corrected, a fifth for the mark that the counts were checked.
struct LeaseBudget: Sendable {
    let lease: Duration

    static let sendsStartBy = 0.4, sendsOverBy = 0.6, countsCheckedBy = 0.75, recordedBy = 0.95
    static let countsRecord = 0.5, checkedMark = 0.2

    /// The sends' deadlines for a claim (or a correction) made at `start`.
    func sends(from start: ContinuousClock.Instant) -> FCMClient.Deadlines {
        FCMClient.Deadlines(lastStart: start + lease * Self.sendsStartBy, finish: start + lease * Self.sendsOverBy)
    }

    /// `start` plus `share` of the lease.
    func deadline(_ share: Double, from start: ContinuousClock.Instant = .now) -> ContinuousClock.Instant { start + lease * share }
}
