import FirestoreModel

/// What every Herald function has: a name for its executable and a one-line summary.
public protocol HeraldFunction: Sendable {
    /// The executable's name, e.g. `onMessageCreated`.
    static var name: String { get }
    static var summary: String { get }
}

/// A function run on a schedule: Cloud Scheduler calls it (`POST /`, or `POST /sweep` on a function that
/// also takes events), and cron can run it once (`NAME sweep`). It names the queries to page through, and
/// plans what to do about each document found from that document alone. Its writes are applied one by
/// one, each conditional on the version found, so a client's write during the sweep wins over the sweep.
public protocol ScheduledFunction: HeraldFunction {
    /// The queries to sweep at this moment.
    func sweeps(at now: Timestamp) -> [Sweep]
    /// What to do about one document a sweep found: nothing, writes, or validate-only checks.
    func plan(_ sweep: Sweep, for document: FirestoreDocument, at now: Timestamp) -> SweepStep
    /// Whether a run also reads the receipts of the pushes Expo took since the last (a day's worth:
    /// Expo keeps them that long), removing the tokens they name dead.
    var readsPushReceipts: Bool { get }
}

extension ScheduledFunction {
    public var readsPushReceipts: Bool { false }
}

/// One query of a sweep, over the whole database (a collection group reaches subcollections).
public struct Sweep: Sendable, Hashable {
    /// A short name for counts and logs, e.g. `offline`.
    public var label: String
    public var query: StructuredQuery

    public init(_ label: String, query: StructuredQuery) {
        self.label = label
        self.query = query
    }
}

/// What a sweep does about one document.
public struct SweepStep: Sendable, Hashable {
    /// Applied independently (Firestore's `batchWrite`), each with its own precondition.
    public var writes: [Write]
    /// Sent to FCM with `validate_only`: nothing reaches the device; a token FCM reports dead gets its `removal`.
    public var checks: [PushMessage]
    /// What the runner logs as a warning: a value a client wrote that the plan did not trust.
    public var warnings: [String]

    public init(writes: [Write] = [], checks: [PushMessage] = [], warnings: [String] = []) {
        self.writes = writes
        self.checks = checks
        self.warnings = warnings
    }

    public static let nothing = SweepStep()
    public var isEmpty: Bool { writes.isEmpty && checks.isEmpty }
}
