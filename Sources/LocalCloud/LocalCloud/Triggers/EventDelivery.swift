import EmbeddedFirestore
import FirestoreModel
import Foundation
import HeraldHTTPClient
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import Synchronization
import WireFormats

/// How the local cloud retries a delivery, and the faults it injects to prove exactly-once.
public struct DeliveryOptions: Sendable {
    /// Attempts before an event goes to the dead-letter table.
    public var maximumAttempts = 5
    public var minimumBackoff: Duration = .seconds(1)
    public var maximumBackoff: Duration = .seconds(60)
    public var timeout: Duration = .seconds(60)
    /// Deliveries in flight to one service whose trigger names no concurrency of its own.
    public var concurrency = 16
    /// Deliveries in flight at once in all.
    public var totalConcurrency = 1_000
    public var faults = DeliveryFaults()

    public init() {}
}

/// Test knobs: each delivery may be held back, sent twice, or have its answer dropped (the
/// function ran, but the local cloud acts as if it timed out and retries).
public struct DeliveryFaults: Sendable, Hashable {
    public var duplicateProbability = 0.0
    public var dropResponseProbability = 0.0
    /// Each delivery waits up to this long first, so events overtake each other.
    public var maximumDelay: Duration = .zero
    /// Events delivered without their data, as Eventarc sends one over its size limit; only to the
    /// triggers named (nil: any).
    public var omitDataProbability = 0.0
    public var omitDataTriggers: Set<String>?

    public init(
        duplicateProbability: Double = 0, dropResponseProbability: Double = 0, maximumDelay: Duration = .zero,
        omitDataProbability: Double = 0, omitDataTriggers: Set<String>? = nil
    ) {
        self.duplicateProbability = duplicateProbability
        self.dropResponseProbability = dropResponseProbability
        self.maximumDelay = maximumDelay
        self.omitDataProbability = omitDataProbability
        self.omitDataTriggers = omitDataTriggers
    }
}

/// One delivery attempt's outcome, for the live log and for tests.
public struct DeliveryReport: Sendable {
    public var deliveryID: Int64
    public var trigger: String
    public var eventType: String
    public var document: String
    public var attempt: Int
    /// HTTP status, or nil for a transport failure or timeout.
    public var status: Int?
    public var error: String?
    public var deadLettered: Bool
    public var injected: String?
    /// The CloudEvent id (`ce-id`), which the functions' log lines carry too.
    public var eventID: String?
    /// The function's 2xx answer (its first 2,000 characters): what it did, or why it did nothing.
    public var answer: String?
    /// Who wrote the change (a signed-in user: `ann@example.com (uid …)`), if a user did.
    public var writer: String? = nil
}

/// Delivers pending events (Eventarc's part): POSTs each to its trigger's URL, retries non-2xx and
/// timeouts with exponential backoff, and dead-letters after the last attempt.
public final class EventDelivery: Service, Sendable {
    let database: LocalDatabase
    let registry: TriggerRegistry
    let httpClient: HTTPTransport
    let options: Mutex<DeliveryOptions>
    let logger: Logger
    let onReport: @Sendable (DeliveryReport) -> Void
    let signal: AsyncStream<Void>
    let signalContinuation: AsyncStream<Void>.Continuation
    /// Deliveries in flight to each service (its first URL: a function's triggers and instances share it).
    let inFlight = Mutex<[String: Int]>([:])
    /// Claims made so far: which service claims first in the next.
    let claimRound = Mutex(0)
    /// Deliveries in flight to each instance (by URL), so each goes to one of the least busy.
    let instanceLoad = Mutex<[String: Int]>([:])
    /// The function each recent delivery's trace went to: who wrote what (DocumentWriteRates).
    private let traceFunctions = Mutex<[String: String]>([:])
    /// Signs the identity token each delivery carries, as Eventarc's trigger service account does.
    let identity: LocalIdentity

    init(
        database: LocalDatabase, registry: TriggerRegistry, httpClient: HTTPTransport, options: DeliveryOptions,
        identity: LocalIdentity, logger: Logger, onReport: @escaping @Sendable (DeliveryReport) -> Void
    ) {
        self.identity = identity
        self.database = database
        self.registry = registry
        self.httpClient = httpClient
        self.options = Mutex(options)
        self.logger = logger
        self.onReport = onReport
        (signal, signalContinuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Looks for due deliveries now rather than at the next tick.
    public func wake() { signalContinuation.yield() }

    public var faults: DeliveryFaults {
        get { options.withLock { $0.faults } }
        set { options.withLock { $0.faults = newValue } }
    }

    public func run() async throws {
        // Deliveries a previous process was sending when it stopped are due again.
        try await database.write { db in try db.execute(sql: "UPDATE deliveries SET state = 'pending' WHERE state = 'in_flight'") }
        let signalContinuation = self.signalContinuation
        await withDiscardingTaskGroup { group in
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(100))
                    signalContinuation.yield()
                }
            }
            for await _ in signal.cancelOnGracefulShutdown() {
                guard let due = try? await claim() else { continue }
                for (service, delivery) in due {
                    group.addTask {
                        await self.deliver(delivery)
                        self.inFlight.withLock { $0[service, default: 1] -= 1 }
                        self.wake()
                    }
                }
            }
            group.cancelAll()
        }
        signalContinuation.finish()
    }

    struct Claimed: Sendable {
        var id: Int64
        var trigger: String
        var eventType: String
        var document: String
        var headers: [String: String]
        var body: Data
        var attempts: Int
        var traceID: String?
        var writer: String? = nil
    }

    /// The service a trigger's deliveries count against, and how many it takes at once: as Cloud Run,
    /// its concurrency per instance times its instances.
    func service(of trigger: String, options: DeliveryOptions) -> (key: String, limit: Int) {
        guard let registration = registry[trigger] else { return ("", 0) }
        let limit = registration.concurrency.map { $0 * (1 + registration.instances.count) } ?? options.concurrency
        return (registration.url, max(1, limit))
    }

    /// Due deliveries, as many of each service's as it has room for (its triggers in turn, each's oldest
    /// first) and as the total allows; each is counted in flight to its service before it is returned.
    /// The total is charged only with what is claimed, and the services take their turn from a
    /// different one each round: a service whose own room alone is the whole total (five instances of
    /// concurrency 200) leaves it to the others when it has nothing due, and when the total binds, every
    /// service's deliveries still go in their turn.
    func claim() async throws(LocalAPIError) -> [(service: String, delivery: Claimed)] {
        let now = Date().timeIntervalSince1970
        let options = self.options.withLock { $0 }
        // A trigger not registered (yet) keeps its events pending until it is.
        let triggers = registry.all.map(\.name).map { ($0, service(of: $0, options: options)) }
        // Only this loop claims, so the room seen here is there when the claim is counted below.
        let (room, total): ([String: Int], Int) = inFlight.withLock { inFlight in
            var room: [String: Int] = [:]
            for (_, (service, limit)) in triggers where room[service] == nil && limit > inFlight[service, default: 0] {
                room[service] = limit - inFlight[service, default: 0]
            }
            return (room, options.totalConcurrency - inFlight.values.reduce(0, +))
        }
        guard !room.isEmpty, total > 0 else { return [] }
        let byService = Dictionary(grouping: triggers, by: \.1.key).mapValues { $0.map(\.0) }
        let services = room.keys.sorted()
        let first = claimRound.withLock { round in
            round += 1
            return round % services.count
        }
        let claimed = try await database.write { db in
            var left = total
            var claimed: [(service: String, delivery: Claimed)] = []
            for service in services[first...] + services[..<first] where left > 0 {
                let found = try Self.claim(triggers: byService[service] ?? [], limit: min(room[service] ?? 0, left), dueBy: now, in: db)
                left -= found.count
                claimed += found.map { (service: service, delivery: $0) }
            }
            return claimed
        }
        inFlight.withLock { inFlight in
            for (service, _) in claimed { inFlight[service, default: 0] += 1 }
        }
        return claimed
    }

    /// The oldest due deliveries of a service's triggers, `limit` at most, marked in flight: each
    /// trigger's oldest from its index, then the oldest of those.
    static func claim(triggers: [String], limit: Int, dueBy now: Double, in db: Database) throws -> [Claimed] {
        var candidates: [(at: Double, id: Int64)] = []
        for trigger in triggers {
            for row in try Row.fetchAll(
                db,
                sql:
                    "SELECT id, next_attempt_at FROM deliveries WHERE state = 'pending' AND trigger = ? AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?",
                arguments: [trigger, now, limit])
            {
                candidates.append((row["next_attempt_at"], row["id"]))
            }
        }
        var rows: [Row] = []
        for candidate in candidates.sorted(by: { ($0.at, $0.id) < ($1.at, $1.id) }).prefix(limit) {
            if let row = try Row.fetchOne(db, sql: "SELECT * FROM deliveries WHERE id = ?", arguments: [candidate.id]) { rows.append(row) }
        }
        var claimed: [Claimed] = []
        for row in rows {
            let id: Int64 = row["id"]
            try db.execute(sql: "UPDATE deliveries SET state = 'in_flight' WHERE id = ?", arguments: [id])
            let headersText: String = row["headers"]
            let headers = (try? JSONValue(parsing: headersText))?.objectValue?.compactMapValues(\.stringValue) ?? [:]
            claimed.append(
                Claimed(
                    id: id, trigger: row["trigger"], eventType: row["event_type"], document: row["document"],
                    headers: headers, body: row["body"], attempts: row["attempts"], traceID: row["trace_id"], writer: row["writer"]))
        }
        return claimed
    }

    /// Posts to one of the service's instances with the fewest deliveries in flight (ties at random), as
    /// Cloud Run routes a request to an instance with a free slot: with at most concurrency × instances
    /// in flight (`claim`), no instance takes more than its concurrency.
    func post(_ delivery: Claimed, toAnInstanceOf trigger: TriggerRegistration, audience: String, timeout: Duration) async -> PostResult {
        let instances = [trigger.url] + trigger.instances
        let chosen = instanceLoad.withLock { load in
            let fewest = instances.map { load[$0, default: 0] }.min() ?? 0
            let url = instances.filter { load[$0, default: 0] == fewest }.randomElement() ?? trigger.url
            load[url, default: 0] += 1
            return url
        }
        defer {
            instanceLoad.withLock { load in
                load[chosen, default: 1] -= 1
                if load[chosen] == 0 { load[chosen] = nil }
            }
        }
        return await post(delivery, to: chosen, audience: audience, timeout: timeout)
    }

    func deliver(_ delivery: Claimed) async {
        let options = self.options.withLock { $0 }
        guard let trigger = registry[delivery.trigger] else {
            // Not registered (yet): keep the event, look again shortly, and don't count an attempt.
            try? await database.write { db in
                try db.execute(
                    sql: "UPDATE deliveries SET state = 'pending', next_attempt_at = ? WHERE id = ?",
                    arguments: [Date().timeIntervalSince1970 + 1, delivery.id])
            }
            return
        }
        let faults = options.faults
        if faults.maximumDelay > .zero {
            try? await Task.sleep(for: faults.maximumDelay * Double.random(in: 0...1))
        }
        var sent = delivery
        var injected: String?
        // Decided per event, not per attempt: Eventarc leaves out the data of an event that is too large, every time.
        if faults.omitDataProbability > 0, faults.omitDataTriggers?.contains(delivery.trigger) ?? true,
            Double((UInt64(bitPattern: delivery.id) &* 0x9E37_79B9_7F4A_7C15) >> 11) / Double(UInt64(1) << 53) < faults.omitDataProbability
        {
            sent.body = Data()
            injected = "data omitted"
        }
        let started = ContinuousClock.now
        let audience = trigger.tokenAudience
        var status = await post(sent, toAnInstanceOf: trigger, audience: audience, timeout: options.timeout)
        let latency = ContinuousClock.now - started
        if Double.random(in: 0..<1) < faults.duplicateProbability {
            // The copy's answer is not the delivery's, but is told: a copy cut off by a dying function
            // may have sent pushes it never recorded.
            let copy: String =
                switch await post(sent, toAnInstanceOf: trigger, audience: audience, timeout: options.timeout) {
                case .success(let code, _), .rejected(let code, _): "duplicate, answered \(code)"
                case .failure(let reason): "duplicate, which got no answer: \(reason.prefix(300))"
                }
            injected = injected.map { "\($0); \(copy)" } ?? copy
        }
        if case .success = status, Double.random(in: 0..<1) < faults.dropResponseProbability {
            injected = "response dropped"
            status = .failure("response dropped (injected)")
        }
        let attempt = delivery.attempts + 1
        var report = DeliveryReport(
            deliveryID: delivery.id, trigger: delivery.trigger, eventType: delivery.eventType, document: delivery.document,
            attempt: attempt, status: nil, error: nil, deadLettered: false, injected: injected,
            eventID: delivery.headers["ce-id"], writer: delivery.writer)
        let now = Date().timeIntervalSince1970
        if let injected {
            try? await database.write { db in
                try db.execute(
                    sql: "UPDATE deliveries SET injected = COALESCE(injected || '; ', '') || ? WHERE id = ?",
                    arguments: ["attempt \(attempt): \(injected.prefix(300))", delivery.id])
            }
        }
        switch status {
        case .success(let code, let answer):
            report.status = code
            report.answer = String(answer.prefix(2000))
            try? await database.write { db in
                try db.execute(
                    sql: """
                        UPDATE deliveries SET state = 'delivered', attempts = ?, finished_at = ?, last_error = NULL, response = ?, latency_ms = ?
                        WHERE id = ?
                        """,
                    arguments: [attempt, now, String(answer.prefix(2000)), Self.milliseconds(latency), delivery.id])
            }
        case .rejected(let code, let body):
            report.status = code
            report.error = body
        case .failure(let reason):
            report.error = reason
        }
        if report.error != nil {
            let dead = attempt >= options.maximumAttempts
            report.deadLettered = dead
            let backoff = min(options.minimumBackoff * Int(1 << min(attempt - 1, 20)), options.maximumBackoff)
            let next = now + Double(backoff.components.seconds) + Double(backoff.components.attoseconds) / 1e18
            let reason = report.status.map { "HTTP \($0): \(report.error ?? "")" } ?? (report.error ?? "")
            try? await database.write { db in
                try db.execute(
                    sql: """
                        UPDATE deliveries SET state = ?, attempts = ?, next_attempt_at = ?, finished_at = ?, last_error = ?, latency_ms = ?
                        WHERE id = ?
                        """,
                    arguments: [
                        dead ? "dead" : "pending", attempt, next, dead ? now : nil, String(reason.prefix(2000)), Self.milliseconds(latency), delivery.id,
                    ])
            }
        }
        onReport(report)
    }

    static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    }

    /// The function (trigger) an event's trace was delivered to, if this cloud delivered it lately.
    public func function(ofTrace traceID: String) -> String? { traceFunctions.withLock { $0[traceID] } }

    enum PostResult {
        case success(Int, String)
        case rejected(Int, String)
        case failure(String)
    }

    func post(_ delivery: Claimed, to url: String, audience: String? = nil, timeout: Duration) async -> PostResult {
        var headers = HTTPHeaders(delivery.headers.map { ($0.key, $0.value) })
        // Eventarc calls Cloud Run with an OIDC token whose audience is the destination service's URL.
        if let token = try? await identity.pushToken(audience: audience ?? TriggerRegistration.audience(of: url)) {
            headers.add(name: "authorization", value: "Bearer \(token)")
        }
        if let traceID = delivery.traceID {
            headers.add(name: "traceparent", value: TraceParent.header(traceID: traceID))
            traceFunctions.withLock { traces in
                if traces.count > 50_000 { traces.removeAll(keepingCapacity: true) }
                traces[traceID] = delivery.trigger
            }
        }
        let request = HeraldHTTPClient.HTTPRequest(method: .POST, url: url, headers: headers, body: ByteBuffer(bytes: delivery.body))
        do {
            let response = try await httpClient.execute(request, timeout: timeout, maximumBodySize: 1 << 20)
            let code = Int(response.status.code)
            let answer = String(buffer: response.body)
            return (200..<300).contains(code) ? .success(code, answer) : .rejected(code, answer)
        } catch {
            return .failure("\(error)")
        }
    }
}
