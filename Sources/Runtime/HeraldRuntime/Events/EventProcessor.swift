import FirestoreEvents
import FirestoreModel
import HeraldCore
import Logging
import Synchronization
import WireFormats

/// The answer to one delivered event: an HTTP status, a JSON body, and the report when there is one.
public struct EventResponse: Sendable {
    public var status: Int
    public var body: JSONValue
    public var report: EffectsReport?
    public var retryAfterSeconds: Int?

    public init(status: Int, body: JSONValue, report: EffectsReport? = nil, retryAfterSeconds: Int? = nil) {
        self.status = status
        self.body = body
        self.report = report
        self.retryAfterSeconds = retryAfterSeconds
    }
}

/// Runs one function on one request: decode → check the trigger → read → plan → execute.
/// Shared by `serve` and `invoke`, so both behave the same.
public struct EventProcessor<Function: EventFunction>: Sendable {
    /// Reads and plans again (after a pause of a few milliseconds) when a document changed under the plan,
    /// up to this many times in all.
    static var maximumPlanAttempts: Int { 5 }

    public let function: Function
    /// `function.trigger`, made once: its pattern is parsed when it is made.
    let trigger: Trigger
    public let gateway: any DocumentGateway
    public let project: String?
    /// What later read rounds asked for after the same first round, so a warm instance reads in one batch.
    let readAhead = ReadAhead()
    let metrics: RuntimeMetrics?

    public init(function: Function, gateway: any DocumentGateway, project: String? = nil, metrics: RuntimeMetrics? = nil) {
        self.function = function
        trigger = function.trigger
        self.gateway = gateway
        self.project = project
        self.metrics = metrics
    }

    public func process(_ request: EventRequest, logger baseLogger: Logger) async -> EventResponse {
        var logger = baseLogger
        let traceID = TraceContext.traceID(headers: request.headers)
        let event: DecodedEvent
        do {
            event = try EventDecoder.decode(request)
        } catch {
            if let id = error.eventID { logger[metadataKey: "eventId"] = "\(id)" }
            if let traceID, let project {
                logger[metadataKey: "logging.googleapis.com/trace"] = "\(TraceContext.loggingField(traceID: traceID, project: project))"
            }
            logger.error("refused event: \(error.reason)")
            return failure(400, "INVALID_ARGUMENT", error.reason)
        }
        let change = event.change
        logger[metadataKey: "eventId"] = "\(change.eventID)"
        logger[metadataKey: "document"] = "\(change.document.path)"
        if let traceID {
            logger[metadataKey: "logging.googleapis.com/trace"] = "\(TraceContext.loggingField(traceID: traceID, project: project ?? change.document.project))"
        }
        logger.debug("decoded \(event.envelope.encoding.rawValue) event \(event.envelope.type)")

        if let refusal = trigger.refusal(of: change) {
            logger.debug("skipped: \(refusal)")
            return finish(
                EffectsReport(
                    function: Function.name, event: event, outcome: .skipped(reason: refusal),
                    documentsRead: DocumentsRead(), plan: .skip(refusal), dryRun: gateway.isDryRun))
        }
        var failedWrites: [[Write]]?
        // This delivery's own name: its claim on the event's pushes in the ledger entry.
        let delivery = newDeliveryName()
        for attempt in 1...Self.maximumPlanAttempts {
            var planned: [[Write]] = []
            do {
                return try await readPlanAndExecute(event, delivery: delivery, logger: logger, planned: &planned)
            } catch DownstreamError.changedDuringPlanning(let reason) where attempt < Self.maximumPlanAttempts {
                if planned == failedWrites {
                    // Read again, the documents gave the same plan, and it failed again: it fails on a
                    // document the function did not read, and no later attempt will do better.
                    return responseToFailure(DownstreamError.rejected("\(reason), and again with the same plan after reading everything again"), logger: logger)
                }
                failedWrites = planned
                // Another event changed what this one read (two messages in one conversation): read and plan again.
                // Routine when events for one conversation arrive together: not news at the default level.
                logger.debug("\(reason); planning again (attempt \(attempt + 1))")
                metrics?.replan()
                try? await Task.sleep(for: .milliseconds(Int.random(in: 1...20) * attempt))
            } catch {
                return responseToFailure(error, logger: logger)
            }
        }
        return failure(503, "UNAVAILABLE", "documents kept changing while the event was planned")
    }

    /// Reads what the function asks for (in rounds), plans, and has the gateway carry the plan out.
    /// - planned: the writes of the plan it tried to carry out (its writes, then each group).
    func readPlanAndExecute(_ event: DecodedEvent, delivery: String, logger: Logger, planned: inout [[Write]]) async throws -> EventResponse {
        var change = event.change
        var read = DocumentsRead()
        if change.isDataMissing {
            // Eventarc drops data over its size limit: read the document as it is now.
            logger.info("event carries no document data; reading \(change.document.path)")
            let current = try await gateway.read([change.document])
            read = current
            // `effectiveKind`: what happened to the document (`kind` is the trigger's, `written` for all three).
            if change.effectiveKind != .deleted { change.newDocument = current[change.document] }
            change.dataWasOmitted = true
        }
        var steps = PlanSteps(function, for: change, startingWith: Reads(read))
        let madePlan: Plan
        // The first step's documents without the event's own (new every time, a message): the key of
        // what the next steps asked for, next time's prediction.
        var firstStep: (asked: [DocumentName], key: [DocumentName], learn: Bool)?
        var laterStepsAskedForDocuments = false
        planning: while true {
            switch steps.next() {
            case .planned(let plan):
                madePlan = plan
                break planning
            case .read(var wanted):
                if firstStep == nil, !wanted.documents.isEmpty {
                    let key = wanted.documents.filter { $0 != change.document }
                    let predicted = readAhead.prediction(after: key)
                    firstStep = (wanted.documents, key, predicted?.due ?? true)
                    wanted.documents += (predicted?.names ?? []).filter { !wanted.documents.contains($0) }
                } else if !wanted.documents.isEmpty {
                    laterStepsAskedForDocuments = true
                }
                steps.add(try await readAll(wanted), asked: wanted)
            case .gaveUp:
                throw PlanningError("\(Function.name) kept asking for more documents after \(steps.asked.count) reads")
            }
        }
        let reads = steps.reads
        // A write that would take a document past Firestore's size limit is left out here, with a
        // WARNING, rather than having Firestore refuse the whole commit on every retry.
        var plan = madePlan.fittingDocumentLimits(reads.read)
        // A dry run keeps no ledger: nothing of an earlier delivery can be pending.
        if gateway.isDryRun, case .skipUnlessStarted(let reason) = plan.decision { plan = .skip(reason) }
        // Learnt when there was no prediction, when it fell short (a later step still asked for documents)
        // or is due to be checked: a plan run costs as much as the rest of a warm event.
        if let firstStep, firstStep.learn || laterStepsAskedForDocuments {
            let firstOnly = Reads(
                DocumentsRead(
                    found: reads.read.found.filter { firstStep.asked.contains($0.key) },
                    missing: reads.read.missing.intersection(firstStep.asked)))
            do {
                _ = try function.plan(for: change, reading: firstOnly)
                readAhead.remember([], after: firstStep.key)
            } catch {
                readAhead.remember(Set(error.documents), after: firstStep.key)
            }
        }
        for warning in plan.warnings { logger.warning("\(warning)") }
        let outcome: EffectsReport.Outcome
        var writeCount = 0
        switch plan.decision {
        case .skip(let reason):
            logger.debug("skipped: \(reason)")
            outcome = .skipped(reason: reason)
        case .apply, .skipUnlessStarted:
            planned = [plan.writes] + plan.groups
            writeCount = plan.allWritesCount
            // The ledger is keyed on the event as delivered, not on the document as read now, except a
            // creation delivered without data: keyed by the create time its read found (`ExactlyOnceExecutor.ledgerName`).
            outcome = try await gateway.execute(plan, for: change.dataWasOmitted && change.kind == .created ? change : event.change, delivery: delivery)
            switch outcome {
            case .duplicate: logger.info("duplicate delivery: already applied")
            case .skipped(let reason):
                // No earlier delivery of this event had started: the pushes the plan offered are not sent.
                logger.debug("skipped: \(reason)")
                (plan, writeCount) = (.skip(reason), 0)
            default: logger.info("\(gateway.isDryRun ? "planned" : "applied") \(writeCount) writes, \(plan.pushes.count) pushes")
            }
        }
        return finish(
            EffectsReport(
                function: Function.name, event: DecodedEvent(change: change, envelope: event.envelope),
                outcome: outcome, documentsRead: reads.read, plan: plan, dryRun: gateway.isDryRun), writes: writeCount)
    }

    /// The documents, collections and lookups `wanted` names, read at once (documents alone without a
    /// child task: a plan's steps mostly ask for documents only).
    func readAll(_ wanted: NotReadYet) async throws -> DocumentsRead {
        let documents = wanted.documents
        let lists = wanted.collections
        let lookups = wanted.lookups
        guard !lists.isEmpty || !lookups.isEmpty else { return documents.isEmpty ? DocumentsRead() : try await gateway.read(documents) }
        async let listed = lists.isEmpty ? [:] : gateway.list(lists)
        async let looked = lookups.isEmpty ? [:] : gateway.lookUp(lookups)
        var more = documents.isEmpty ? DocumentsRead() : try await gateway.read(documents)
        more.collections = try await listed
        more.lookups = try await looked
        return more
    }

    /// The HTTP answer is a summary; the whole report is for `invoke` and tests.
    func finish(_ report: EffectsReport, writes: Int? = nil) -> EventResponse {
        var outcome = [String: JSONValue](minimumCapacity: 5)
        outcome["eventId"] = .string(report.event.change.eventID)
        switch report.outcome {
        case .applied: outcome["outcome"] = "applied"
        case .duplicate: outcome["outcome"] = "duplicate"
        case .skipped(let reason):
            outcome["outcome"] = "skipped"
            outcome["reason"] = .string(reason)
        }
        outcome["writes"] = .integer(writes ?? report.plan.allWritesCount)
        outcome["pushes"] = .integer(report.plan.pushes.count)
        return EventResponse(status: 200, body: .object(outcome), report: report)
    }
}

/// A function that misbehaves on this event (it asks for documents without end): it will again, so the
/// event is refused with the reason (400), and waits in the dead letters once the function is mended.
struct PlanningError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The answer to a failure: 503/429 when the trigger should retry, 400 when it never can succeed.
func responseToFailure(_ failed: any Error, logger: Logger) -> EventResponse {
    let error: DownstreamError
    switch failed {
    case let known as DownstreamError: error = known
    case let planning as PlanningError: error = .rejected(planning.description)
    case is CancellationError: error = .unavailable("the instance stopped before the event was done")
    default:
        // Unclassified: not known to be permanent, so the trigger retries; its dead-letter policy bounds the attempts.
        logger.error("unexpected failure, the trigger will retry: \(failed)")
        var response = failure(503, "UNAVAILABLE", "\(failed)")
        response.retryAfterSeconds = 1
        return response
    }
    let (status, code, retryAfter): (Int, String, Int?)
    switch error {
    case .unavailable(_, let after), .throttled(_, let after):
        let throttled = if case .throttled = error { true } else { false }
        logger.warning("\(throttled ? "throttled" : "transient failure"), the trigger will retry: \(error.description)")
        (status, code, retryAfter) = throttled ? (429, "RESOURCE_EXHAUSTED", after) : (503, "UNAVAILABLE", after)
    case .changedDuringPlanning:
        logger.warning("transient failure, the trigger will retry: \(error.description)")
        (status, code, retryAfter) = (503, "UNAVAILABLE", nil)
    case .rejected:
        logger.error("cannot handle event: \(error.description)")
        (status, code, retryAfter) = (400, "FAILED_PRECONDITION", nil)
    }
    var response = failure(status, code, error.description)
    // A trigger may wait longer (Eventarc backs off from 10 s); a caller that honours Retry-After waits at least this.
    response.retryAfterSeconds = status == 400 ? nil : max(1, retryAfter ?? 1)
    return response
}

func failure(_ status: Int, _ code: String, _ message: String) -> EventResponse {
    EventResponse(status: status, body: ["error": ["code": .integer(status), "status": .string(code), "message": .string(message)]])
}

/// Remembers which documents a function asked for in its later read rounds after a given first
/// round (a conversation → its members' user documents), and predicts them next time, so that a
/// warm instance reads everything in one batch. A wrong prediction costs a few extra documents in
/// that batch, never a wrong plan: the function still says what it needs from what was read.
final class ReadAhead: Sendable {
    struct Learnt {
        var names: Set<DocumentName>
        /// `names` in order, sorted once when learnt rather than on every use.
        var ordered: [DocumentName]
        var uses = 0
    }

    let memory = Mutex<[Set<DocumentName>: Learnt]>([:])
    static let capacity = 10_000
    /// A prediction that was complete is checked again after this many uses, so one grown too big
    /// (a member who left) does not stay.
    static let checkEvery = 64

    /// What was learnt after this first round (nil when nothing yet), and whether it is due to be checked.
    func prediction(after firstRound: [DocumentName]) -> (names: [DocumentName], due: Bool)? {
        let key = Set(firstRound)
        return memory.withLock { table in
            guard let index = table.index(forKey: key) else { return nil }
            table.values[index].uses += 1
            let learnt = table.values[index]
            return (learnt.ordered, learnt.uses % Self.checkEvery == 0)
        }
    }

    func remember(_ names: Set<DocumentName>, after firstRound: [DocumentName]) {
        let key = Set(firstRound)
        memory.withLock { table in
            guard table[key]?.names != names else { return }
            if table.count >= Self.capacity { table.removeAll(keepingCapacity: true) }
            table[key] = Learnt(names: names, ordered: names.sorted())
        }
    }
}
