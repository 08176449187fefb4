import EmbeddedFirestore
import FirestoreModel
import Synchronization
import WireFormats

/// Faults the local cloud injects on its Google APIs (Firestore, FCM, the OAuth token endpoint) to
/// prove that functions lose nothing and do nothing twice when Google misbehaves.
public struct APIFaultPlan: Sendable, Hashable {
    public enum API: String, Sendable, CaseIterable { case firestore, fcm, token }

    public enum Kind: String, Sendable, CaseIterable {
        /// 503 UNAVAILABLE with Retry-After, before anything is done.
        case unavailable
        /// 429 RESOURCE_EXHAUSTED with Retry-After, before anything is done.
        case rateLimited
        /// The connection closes without an answer, before anything is done.
        case reset
        /// The request is carried out, then the connection closes without an answer: the caller
        /// cannot tell whether it happened.
        case resetAfterApplying
        /// No answer for `hangFor`, then the connection closes: the caller's timeout fires first.
        case timeout
        /// The request is carried out, and answered only after `slowFor`: beyond a caller's deadline, it
        /// looks undone although it was done (an FCM that delivers but answers late).
        case slow
    }

    /// Probability that a request to an API with faults gets one.
    public var rate: Double
    /// The faults each API gets, one chosen uniformly per fault; an API not named gets none.
    public var kinds: [API: [Kind]]
    public var hangFor: Duration
    public var slowFor: Duration
    /// Requests whose user-agent starts with this are spared (the apps' own writes, not Herald's).
    public var sparedUserAgent: String?

    public init(rate: Double = 0, kinds: [API: [Kind]] = [:], hangFor: Duration = .seconds(3), slowFor: Duration = .seconds(12), sparedUserAgent: String? = nil)
    {
        self.rate = rate
        self.kinds = kinds
        self.hangFor = hangFor
        self.slowFor = slowFor
        self.sparedUserAgent = sparedUserAgent
    }

    /// The JSON form the admin API takes and gives back:
    /// `{"rate": 0.1, "kinds": {"firestore": ["unavailable", "reset"]}, "hangMilliseconds": 3000, "slowMilliseconds": 12000, "sparedUserAgent": "app"}`.
    public init(json: JSONValue) throws(LocalAPIError) {
        func number(_ key: String) -> Double? { json.member(key).flatMap { Double($0.serialized()) } }
        let rate = number("rate") ?? 0
        guard (0...1).contains(rate) else { throw .invalidArgument("rate is a probability between 0 and 1") }
        var kinds: [API: [Kind]] = [:]
        for (name, list) in json.member("kinds")?.objectValue ?? [:] {
            guard let api = API(rawValue: name) else { throw .invalidArgument("kinds: each key is firestore, fcm or token") }
            for item in list.arrayValue ?? [] {
                guard let kind = item.stringValue.flatMap(Kind.init(rawValue:)) else {
                    throw .invalidArgument("kinds.\(name): each is one of \(Kind.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                kinds[api, default: []].append(kind)
            }
        }
        let hang = number("hangMilliseconds") ?? 3000
        guard (0...600_000).contains(hang) else { throw .invalidArgument("hangMilliseconds is from 0 to 600000") }
        let slow = number("slowMilliseconds") ?? 12_000
        guard (0...600_000).contains(slow) else { throw .invalidArgument("slowMilliseconds is from 0 to 600000") }
        self.init(
            rate: rate, kinds: kinds, hangFor: .milliseconds(Int64(hang)), slowFor: .milliseconds(Int64(slow)),
            sparedUserAgent: json.member("sparedUserAgent")?.stringValue)
    }

    public var json: JSONValue {
        let kinds = self.kinds.map { ($0.key.rawValue, JSONValue.array($0.value.map { .string($0.rawValue) })) }
        return [
            "rate": .number(String(rate)), "kinds": .object(Dictionary(uniqueKeysWithValues: kinds)),
            "hangMilliseconds": .integer(Int64(hangFor / .milliseconds(1))), "slowMilliseconds": .integer(Int64(slowFor / .milliseconds(1))),
            "sparedUserAgent": sparedUserAgent.map(JSONValue.string) ?? .null,
        ]
    }
}

/// The plan in force, what it has injected so far, and how many requests each API has had.
public final class APIFaults: Sendable {
    struct State {
        var plan = APIFaultPlan()
        var injected: [String: Int] = [:]
        var requests: [String: Int] = [:]
        /// Per trace (one event's calls): requests by API, and the faults injected into them.
        var traces: [String: TraceRequests] = [:]
    }

    public struct TraceRequests: Sendable, Hashable {
        public var requests: [String: Int] = [:]
        public var injected: [String] = []
    }

    /// How many traces are remembered; past it the oldest are forgotten all at once (memory stays bounded).
    static let rememberedTraces = 5000
    let state = Mutex(State())

    public var plan: APIFaultPlan {
        get { state.withLock { $0.plan } }
        set { state.withLock { $0.plan = newValue } }
    }

    /// Injected faults so far, by `api.kind`.
    public var injected: [String: Int] { state.withLock { $0.injected } }

    /// Requests so far, by API (benchmarks count Firestore requests per event with it).
    public var requests: [String: Int] { state.withLock { $0.requests } }

    /// Requests and injected faults of the calls made under each of `traces`.
    public func requests(traces: [String]) -> [String: TraceRequests] {
        state.withLock { state in traces.reduce(into: [:]) { result, trace in result[trace] = state.traces[trace] } }
    }

    /// Counts the request (under its trace too, if it has one), and gives the fault for it, if one is due.
    func draw(for api: APIFaultPlan.API, userAgent: String?, trace: String? = nil) -> APIFaultPlan.Kind? {
        state.withLock { state in
            state.requests[api.rawValue, default: 0] += 1
            if let trace {
                if state.traces[trace] == nil, state.traces.count >= Self.rememberedTraces { state.traces.removeAll(keepingCapacity: true) }
                state.traces[trace, default: TraceRequests()].requests[api.rawValue, default: 0] += 1
            }
            let plan = state.plan
            guard plan.rate > 0, let kinds = plan.kinds[api], !kinds.isEmpty else { return nil }
            if let spared = plan.sparedUserAgent, userAgent?.hasPrefix(spared) == true { return nil }
            guard Double.random(in: 0..<1) < plan.rate, let kind = kinds.randomElement() else { return nil }
            state.injected["\(api.rawValue).\(kind.rawValue)", default: 0] += 1
            if let trace { state.traces[trace]?.injected.append("\(api.rawValue): \(kind.rawValue)") }
            return kind
        }
    }
}
