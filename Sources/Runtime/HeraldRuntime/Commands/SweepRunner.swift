import FirestoreModel
import GoogleClients
import HeraldCore
import Logging
import PushTokens
import WireFormats

/// What one run of a scheduled function did, per sweep.
public struct SweepReport: Sendable, Hashable {
    public struct Counts: Sendable, Hashable {
        /// Documents the query found.
        public var checked = 0
        /// Writes applied (or, in a dry run, planned).
        public var written = 0
        /// Writes not applied because the document changed after the query read it: the client's write won.
        public var raced = 0
        /// Writes refused for another reason (logged).
        public var failed = 0
        /// Tokens checked with a validate-only send, and those FCM reported dead (removed).
        public var validated = 0
        public var dead = 0
        public init() {}

        public var json: JSONValue {
            [
                "checked": .integer(checked), "written": .integer(written), "raced": .integer(raced), "failed": .integer(failed),
                "validated": .integer(validated), "dead": .integer(dead),
            ]
        }
    }

    public var function: String
    public var at: Timestamp
    public var dryRun: Bool
    /// In the order the function named its sweeps.
    public var sweeps: [(label: String, counts: Counts)]
    /// In a dry run, the writes and checks that would be made (the first `maximumListed`), as Firestore's REST JSON.
    public var planned: [JSONValue] = []
    public static let maximumListed = 200

    public init(function: String, at: Timestamp, dryRun: Bool, sweeps: [(label: String, counts: Counts)] = []) {
        self.function = function
        self.at = at
        self.dryRun = dryRun
        self.sweeps = sweeps
    }

    mutating func record(_ steps: [SweepStep]) {
        for step in steps where planned.count < Self.maximumListed {
            planned += step.writes.map(\.json) + step.checks.map { ["validateOnly": $0.requestBody] }
        }
    }

    public subscript(label: String) -> Counts { sweeps.first { $0.label == label }?.counts ?? Counts() }

    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "function": .string(function), "at": .string(at.rfc3339), "dryRun": .bool(dryRun),
            "sweeps": .object(Dictionary(sweeps.map { ($0.label, $0.counts.json) }, uniquingKeysWith: { a, _ in a })),
        ]
        if dryRun { members["planned"] = .array(planned) }
        return .object(members)
    }

    public static func == (a: SweepReport, b: SweepReport) -> Bool { a.json == b.json }
    public func hash(into hasher: inout Hasher) { hasher.combine(json) }
}

/// Runs a scheduled function once: pages through each of its queries, plans each document, applies the
/// writes with `batchWrite` (at most 500 per request, each on its own precondition) and sends the
/// validate-only checks. Safe to run twice at once: a write planned from a version that has changed fails
/// its precondition and is counted as raced.
public struct SweepRunner<Function: ScheduledFunction>: Sendable {
    public let function: Function
    public let firestore: any FirestoreAPI
    public let pushes: PushServices
    /// Where the functions' ledger entries keep Expo's tickets, for a function that reads their receipts.
    public let ledgerCollection: String
    public let dryRun: Bool
    public var pageSize: Int

    /// Tokens checked by the daily pass are doubtful already (unrefreshed for weeks), so many may be
    /// dead; only when nearly all of a page's (20 or more) are is it taken for a misconfiguration. Judged
    /// by devices: a page holds mostly one token per person, and one active person's live tokens must
    /// not make a page of dormant people's dead ones look like a misconfiguration.
    let deadTokens: DeadTokenGuard

    public init(
        function: Function, firestore: any FirestoreAPI, pushes: PushServices, ledgerCollection: String = "_herald/events/ledger", dryRun: Bool = false,
        pageSize: Int = 300, logger: Logger = Logger(label: "herald.sweep")
    ) {
        self.function = function
        self.ledgerCollection = ledgerCollection
        self.firestore = firestore
        self.pushes = pushes
        self.dryRun = dryRun
        self.pageSize = pageSize
        self.deadTokens = DeadTokenGuard(threshold: 0.9, minimumBatch: 20, judgesPeople: false, logger: logger)
    }

    /// A runner that checks tokens with FCM alone (and reads no Expo receipts).
    public init(function: Function, firestore: any FirestoreAPI, fcm: FCMClient?, dryRun: Bool = false, pageSize: Int = 300) {
        let logger = Logger(label: "herald.sweep")
        self.init(function: function, firestore: firestore, pushes: PushServices(fcm: fcm, logger: logger), dryRun: dryRun, pageSize: pageSize, logger: logger)
    }

    public func run(at date: Timestamp = .now(), logger: Logger) async throws -> SweepReport {
        let now = date
        var report = SweepReport(function: Function.name, at: now, dryRun: dryRun)
        for sweep in function.sweeps(at: now) {
            var counts = SweepReport.Counts()
            do {
                try await firestore.forEachPage(of: sweep.query, parent: nil, pageSize: pageSize) { page in
                    counts.checked += page.count
                    let steps = page.map { function.plan(sweep, for: $0, at: now) }
                    if dryRun { report.record(steps) }
                    for warning in steps.flatMap(\.warnings) { logger.warning("\(sweep.label): \(warning)") }
                    try await apply(steps.flatMap(\.writes), to: &counts, logger: logger)
                    try await check(steps.flatMap(\.checks), counts: &counts, logger: logger)
                }
            } catch {
                throw DownstreamError.from(firestore: error)
            }
            // A dry run writes nothing: it says what it would have written.
            logger.info(
                "\(sweep.label): checked \(counts.checked), \(dryRun ? "would write" : "wrote") \(counts.written), raced \(counts.raced), failed \(counts.failed)\(counts.validated > 0 ? ", validated \(counts.validated), dead \(counts.dead)" : "")"
            )
            report.sweeps.append((sweep.label, counts))
        }
        if function.readsPushReceipts, let expo = pushes.expo {
            do {
                let receipts = try await ExpoReceipts.pass(
                    ledger: ledgerCollection, firestore: firestore, expo: expo, deadTokens: deadTokens, at: now, dryRun: dryRun, logger: logger)
                var counts = SweepReport.Counts()
                counts.checked = receipts.asked
                counts.validated = dryRun ? 0 : receipts.asked
                counts.dead = receipts.dead
                logger.info("\(ExpoReceipts.sweepLabel): asked \(receipts.asked), dead \(receipts.dead), forgotten \(receipts.forgotten)")
                report.sweeps.append((ExpoReceipts.sweepLabel, counts))
            } catch {
                // The receipts are kept for a day: the next pass asks again.
                logger.warning("Expo's receipts could not be read (\(error)); the next pass asks again")
            }
        }
        return report
    }

    func apply(_ writes: [Write], to counts: inout SweepReport.Counts, logger: Logger) async throws {
        if dryRun {
            counts.written += writes.count
            return
        }
        for (write, outcome) in zip(writes, try await firestore.batchWrite(writes)) {
            switch outcome {
            case .applied: counts.written += 1
            case .failed(let error) where error.status == .failedPrecondition || error.status == .notFound:
                counts.raced += 1
            case .failed(let error):
                counts.failed += 1
                logger.error("write to \(write.document.path) refused: \(error)")
            }
        }
    }

    func check(_ checks: [PushMessage], counts: inout SweepReport.Counts, logger: Logger) async throws {
        guard !checks.isEmpty else { return }
        // Only FCM has a validate-only send: Expo's tokens are judged by their receipts, APNs's by the next send.
        let checks = checks.filter { PushToken.kind(of: $0.token) == .fcm }
        guard !checks.isEmpty else { return }
        guard pushes.fcm != nil else { throw DownstreamError.rejected("the sweep has token checks but no FCM client is configured") }
        counts.validated += checks.count
        if dryRun { return }
        let results = await pushes.validate(checks)
        for case (let check, .failed(let reason, true, let after)) in zip(checks, results) {
            // Checked again at the next run; the run as a whole still succeeds.
            logger.warning("a token check of \(check.userID) failed transiently (\(reason))\(after.map { ", retry after \($0) s" } ?? "")")
        }
        let outcome = deadTokens.judge(Array(zip(checks, results)))
        counts.dead += outcome.marks.values.filter { $0 == .dead }.count
        var ignored = SweepReport.Counts()
        try await apply(outcome.removals, to: &ignored, logger: logger)
    }
}

/// A scheduled function over a snapshot of documents, fully offline (`sweep --documents FILE`): each
/// document of the queried collection is planned (the plans check their own conditions), nothing is
/// written, and the report lists what would be.
public struct SnapshotSweeper<Function: ScheduledFunction>: SweepRunning {
    public let function: Function
    public let documents: [FirestoreDocument]

    public init(function: Function, documents: [FirestoreDocument]) {
        self.function = function
        self.documents = documents.sorted { $0.name < $1.name }
    }

    public func run(at date: Timestamp, logger: Logger) async throws -> SweepReport {
        let now = date
        var report = SweepReport(function: Function.name, at: now, dryRun: true)
        // A document written by an earlier sweep of this run has a new version: a later write planned from
        // the snapshot would fail its precondition, so it is not planned.
        var written = Set<DocumentName>()
        for sweep in function.sweeps(at: now) {
            let candidates = documents.filter {
                $0.name.collectionID == sweep.query.collectionID && (sweep.query.allDescendants || $0.name.segments.count == 2)
                    && !written.contains($0.name)
            }
            let steps = candidates.map { function.plan(sweep, for: $0, at: now) }.filter { !$0.isEmpty }
            var counts = SweepReport.Counts()
            counts.checked = steps.count
            counts.written = steps.map(\.writes.count).reduce(0, +)
            counts.validated = steps.map(\.checks.count).reduce(0, +)
            report.record(steps)
            written.formUnion(steps.flatMap(\.writes).map(\.document))
            report.sweeps.append((sweep.label, counts))
        }
        return report
    }
}
