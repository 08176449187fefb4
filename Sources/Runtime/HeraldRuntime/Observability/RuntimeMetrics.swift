import CoreMetrics
import GoogleClients
import NIOHTTP1
import Prometheus
import Synchronization

/// What one function process counts, through swift-metrics, kept in its own Prometheus registry (no
/// global bootstrap: every server, in a process or a test, has its own) and served as Prometheus text
/// at `GET /metrics`. Names follow Prometheus's conventions; every series carries `function`.
public final class RuntimeMetrics: Sendable {
    public let function: String
    let registry: PrometheusCollectorRegistry
    let factory: PrometheusMetricsFactory
    let inFlight: Meter
    let handles = Mutex(Handles())

    public init(function: String) {
        self.function = function
        registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
            .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5),
            .seconds(10), .seconds(30),
        ]
        self.factory = factory
        inFlight = Meter(label: "herald_events_in_flight", dimensions: [("function", function)], factory: factory)
    }

    /// The Prometheus text exposition (format 0.0.4) of everything counted so far.
    public func exposition() -> [UInt8] { registry.emitToBuffer() }

    /// An event answered: its encoding (`binaryProtobuf`, `structured`, … or `unknown` when it could not
    /// be decoded), what became of it (`applied`, `duplicate`, `skipped`, `refused` for a 4xx, `failed`
    /// for a 5xx or 429 the trigger retries) and how long it took.
    func event(encoding: String, outcome: String, duration: Duration) {
        let found = handles.withLock { $0.events.first { $0.encoding == encoding && $0.outcome == outcome } }
        let series =
            found
            ?? EventSeries(
                encoding: encoding, outcome: outcome,
                counter: handle("herald_events_total", [("encoding", encoding), ("outcome", outcome)], \.counters) {
                    Counter(label: $0, dimensions: $1, factory: factory)
                },
                timer: handle("herald_event_duration_seconds", [("outcome", outcome)], \.timers) { Timer(label: $0, dimensions: $1, factory: factory) })
        if found == nil { handles.withLock { $0.events.append(series) } }
        series.counter.increment()
        series.timer.recordNanoseconds(Self.nanoseconds(duration))
    }

    /// Events being handled now.
    func eventsInFlight(_ change: Int) {
        if change > 0 { inFlight.increment(by: Double(change)) } else { inFlight.decrement(by: Double(-change)) }
    }

    /// What became of each push a service was asked to deliver (`herald_fcm_sends_total`,
    /// `herald_expo_sends_total`, `herald_apns_sends_total`): `sent`, `dead` (the token is gone),
    /// `retried` (a transient failure, left for the trigger's retry), `failed` (refused for good),
    /// `unanswered`, `corrected` (a badge-only correction).
    func push(service: String = "fcm", result: String, count amount: Int = 1) {
        guard amount > 0 else { return }
        count("herald_\(service)_sends_total", [("result", result)], by: amount)
    }

    /// Tokens of a service this deployment has no credentials for, kept and not sent to (`expo`, `apns`).
    func tokensSkipped(kind: String, count amount: Int) {
        count("herald_push_tokens_skipped_total", [("kind", kind)], by: amount)
    }

    func tokenRemoved() { count("herald_tokens_removed_total", []) }
    /// Dead tokens kept because too many came back dead at once (the safety check).
    func tokenRemovalsRefused(_ amount: Int) {
        guard amount > 0 else { return }
        count("herald_token_removals_refused_total", [], by: amount)
    }
    /// A delivery took over pushes whose earlier holder's lease had expired.
    func leaseTakeover() { count("herald_ledger_lease_takeovers_total", []) }
    /// A document changed under a plan, and the event was read and planned again.
    func replan() { count("herald_replans_total", []) }

    /// A commit the coalescer sent (`CommitCoalescer`): how many events' writes it carried (`one` or
    /// `several`), and what became of it: `committed`, `conflict` (another writer committed one of its
    /// documents first; its events wait for their next turn) or `failed`.
    func documentCommit(events: Int, outcome: String) {
        count("herald_document_commits_total", [("events", events > 1 ? "several" : "one"), ("outcome", outcome)])
        if outcome == "committed" { count("herald_document_commit_events_total", [], by: events) }
    }

    /// A commit that could not go at once, answered after waiting for its documents' turn: `committed`,
    /// `gave_up` (its turn did not come within the coalescer's patience: 503), `stale` (planned again) or
    /// `failed`.
    func commitWaited(_ duration: Duration, outcome: String) { time("herald_commit_wait_seconds", [("outcome", outcome)], duration) }

    /// Records each request a client makes: Firestore by RPC (`batchGet`, `commit`, `runQuery`, … or the
    /// HTTP method for a document), FCM sends; by HTTP status (`none` when no answer came) and duration.
    func observer(api: String) -> RequestObserver {
        { [self] record in
            let method =
                switch api {
                case "firestore": Self.rpc(of: record)
                case "expo": record.url.split(separator: "/").last.map(String.init) ?? "send"
                default: "send"
                }
            count("herald_\(api)_requests_total", [("method", method), ("status", record.status.map(String.init) ?? "none")])
            time("herald_\(api)_request_duration_seconds", [("method", method)], record.duration)
        }
    }

    /// `…/documents:batchGet?…` → `batchGet`; a plain document URL → its HTTP method (`get`, `patch`, `delete`).
    static func rpc(of record: RequestRecord) -> String {
        let path = record.url.split(separator: "?", maxSplits: 1).first ?? ""
        let last = path.split(separator: "/").last ?? ""
        if let colon = last.lastIndex(of: ":") { return String(last[last.index(after: colon)...]) }
        return record.method.rawValue.lowercased()
    }

    func count(_ label: String, _ dimensions: [(String, String)], by amount: Int = 1) {
        handle(label, dimensions, \.counters) { Counter(label: $0, dimensions: $1, factory: factory) }.increment(by: amount)
    }

    func time(_ label: String, _ dimensions: [(String, String)], _ duration: Duration) {
        handle(label, dimensions, \.timers) { Timer(label: $0, dimensions: $1, factory: factory) }.recordNanoseconds(Self.nanoseconds(duration))
    }

    static func nanoseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
    }

    /// Each series' handle, made once: making one validates and looks up its name and labels in the
    /// registry, which cost more than the count itself on every event.
    func handle<Handle: Sendable>(
        _ label: String, _ dimensions: [(String, String)], _ cache: WritableKeyPath<Handles, [SeriesKey: Handle]>,
        make: (String, [(String, String)]) -> Handle
    ) -> Handle {
        let key = Self.key(label, dimensions)
        if let found = handles.withLock({ $0[keyPath: cache][key] }) { return found }
        let made = make(label, [("function", function)] + dimensions)
        handles.withLock { $0[keyPath: cache][key] = made }
        return made
    }

    struct Handles: Sendable {
        var counters: [SeriesKey: CoreMetrics.Counter] = [:]
        var timers: [SeriesKey: CoreMetrics.Timer] = [:]
        /// The per-event series, a few encodings by a few outcomes: found by comparing short strings,
        /// which costs less than hashing a key.
        var events: [EventSeries] = []
    }

    struct EventSeries: Sendable {
        let encoding: String
        let outcome: String
        let counter: CoreMetrics.Counter
        let timer: CoreMetrics.Timer
    }

    static func key(_ label: String, _ dimensions: [(String, String)]) -> SeriesKey {
        var flat: [String] = []
        flat.reserveCapacity(2 * dimensions.count)
        for (name, value) in dimensions {
            flat.append(name)
            flat.append(value)
        }
        return SeriesKey(label: label, dimensions: flat)
    }

    /// One series: its name and its dimensions' names and values, in order.
    struct SeriesKey: Hashable, Sendable {
        let label: String
        let dimensions: [String]
    }
}
