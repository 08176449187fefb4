import FirestoreModel
import HeraldHTTPClient
import Logging
import NIOCore
import NIOHTTP1
import Telemetry
import Tracing
import WireFormats

/// How often to retry a call that failed transiently, and for how long. A function answers its
/// trigger within seconds either way: a failure that outlasts the budget goes back to the trigger,
/// which retries with its own backoff (Eventarc: 10 s to 10 min), so long in-call retries only hold
/// instances and bill for them.
public struct RetryPolicy: Sendable {
    public var maximumAttempts: Int
    public var initialDelay: Duration
    public var maximumDelay: Duration
    /// No retry starts after this much time has passed since the first attempt.
    public var totalBudget: Duration

    public init(
        maximumAttempts: Int = 4, initialDelay: Duration = .milliseconds(100), maximumDelay: Duration = .seconds(1), totalBudget: Duration = .seconds(2)
    ) {
        self.maximumAttempts = maximumAttempts
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.totalBudget = totalBudget
    }

    public static let none = RetryPolicy(maximumAttempts: 1)

    /// Retries until `deadline` (with backoff up to `maximumDelay`), for a write that must not be given up early.
    public static func until(_ deadline: ContinuousClock.Instant, maximumDelay: Duration = .seconds(1)) -> RetryPolicy {
        RetryPolicy(
            maximumAttempts: .max, initialDelay: .milliseconds(50), maximumDelay: maximumDelay,
            totalBudget: max(.zero, deadline - ContinuousClock.now))
    }

    /// Full jitter: a random delay up to the exponential bound, but never less than Retry-After.
    public func delay(afterAttempt attempt: Int, retryAfterSeconds: Int?) -> Duration {
        let cap = min(maximumDelay, initialDelay * (1 << min(attempt - 1, 20)))
        let jittered = cap * Double.random(in: 0.5...1.0)
        if let after = retryAfterSeconds { return max(jittered, .seconds(min(max(after, 0), 3600))) }
        return jittered
    }
}

/// Told of every HTTP request a client sends (method and URL), e.g. to count requests per event.
/// One request to a Google API as an observer sees it, once it ended: answered with a status, or not.
public struct RequestRecord: Sendable {
    public var method: HTTPMethod
    public var url: String
    /// The HTTP status, or nil when no answer came (refused, reset, timed out).
    public var status: Int?
    public var duration: Duration

    public init(method: HTTPMethod, url: String, status: Int?, duration: Duration) {
        self.method = method
        self.url = url
        self.status = status
        self.duration = duration
    }
}

/// Told of every request a client makes (each attempt), after it ends: for metrics and tests.
public typealias RequestObserver = @Sendable (RequestRecord) -> Void

/// One JSON request to a Google API with auth, Google's error body, retries within a deadline and a
/// circuit breaker, shared by the clients.
struct GoogleHTTP: Sendable {
    static var shortestEssentialAttempt: Duration { .milliseconds(250) }

    let httpClient: HTTPTransport
    let credentials: any AccessTokenProvider
    /// How long one attempt may take (unless the caller gives a deadline that ends it sooner).
    let requestTimeout: Duration
    let observer: RequestObserver?
    let userAgent: String
    let breaker: CircuitBreaker

    init(
        httpClient: HTTPTransport, credentials: any AccessTokenProvider, requestTimeout: Duration = .seconds(4), observer: RequestObserver? = nil,
        userAgent: String = "herald", breaker: CircuitBreaker = CircuitBreaker()
    ) {
        self.httpClient = httpClient
        self.credentials = credentials
        self.requestTimeout = requestTimeout
        self.observer = observer
        self.userAgent = userAgent
        self.breaker = breaker
    }

    /// Sends, retrying what `isRetryable` allows within the policy. Each attempt may take `attemptTimeout`
    /// (default `requestTimeout`), and none goes on past `deadline`; no retry starts after `retryUntil`
    /// (default: in time to end by the deadline). Returns the 2xx body or throws `GoogleAPIError` /
    /// `TransportError` / `AuthError`.
    /// - essential: tried even while the breaker is open (a record that must not be given up while there is time).
    func call(
        _ method: HTTPMethod, _ url: String, body: JSONValue?, retry policy: RetryPolicy, isRetryable: (any Error) -> Bool,
        deadline: ContinuousClock.Instant? = nil, retryUntil: ContinuousClock.Instant? = nil, attemptTimeout: Duration? = nil,
        essential: Bool = false
    ) async throws -> [UInt8] {
        try await call(
            method, url, text: body.map { $0.serialized() }, retry: policy, isRetryable: isRetryable, deadline: deadline, retryUntil: retryUntil,
            attemptTimeout: attemptTimeout, essential: essential)
    }

    /// `call` with the body as JSON text already written.
    func call(
        _ method: HTTPMethod, _ url: String, text: String?, retry policy: RetryPolicy, isRetryable: (any Error) -> Bool,
        deadline: ContinuousClock.Instant? = nil, retryUntil: ContinuousClock.Instant? = nil, attemptTimeout: Duration? = nil,
        essential: Bool = false
    ) async throws -> [UInt8] {
        let serialized = text.map { ByteBuffer(string: $0) }
        let attemptTimeout = attemptTimeout ?? requestTimeout
        return try await Self.withRetries(policy, until: retryUntil ?? deadline, isRetryable: isRetryable) {
            // An essential write spreads its attempts over what is left before its deadline: one that
            // stalls (no answer) takes at most a third of it, so the next attempts still have time.
            var timeout = attemptTimeout
            if essential, let deadline { timeout = min(timeout, max(Self.shortestEssentialAttempt, (deadline - .now) / 3)) }
            return try await send(method, url, body: serialized, timeout: timeout, deadline: deadline, throughBreaker: !essential)
        }
    }

    /// Sends once (through the breaker), for at most `timeout` once it has a token, and not past `deadline`;
    /// on 401 refreshes the token and sends once more.
    func send(
        _ method: HTTPMethod, _ url: String, body: ByteBuffer?, timeout: Duration, deadline: ContinuousClock.Instant?,
        throughBreaker: Bool = true
    ) async throws -> [UInt8] {
        if throughBreaker { try breaker.admit() }
        var outcome = CircuitBreaker.Outcome.neutral
        defer { breaker.record(outcome) }
        let (span, traceparent) = OutboundTrace.call("\(method) \(Self.operation(url))")
        span?.updateAttributes { attributes in
            attributes["http.request.method"] = method.rawValue
            attributes["url.full"] = HTTPURL.redacted(url)
        }
        defer { span?.end() }
        for attempt in 1...2 {
            // A token that cannot be had says nothing of this API (the token endpoint is another service,
            // and one failed fetch fails every request waiting for it): the breaker does not count it.
            let token = try await credentials.token()
            var request = HTTPRequest(url: url)
            request.method = method
            request.headers.add(name: "authorization", value: "Bearer \(token)")
            request.headers.add(name: "user-agent", value: userAgent)
            if let traceparent { request.headers.add(name: "traceparent", value: traceparent) }
            if let body {
                request.headers.add(name: "content-type", value: "application/json")
                request.body = (body)
            }
            let remaining = min(timeout, (deadline ?? .now + timeout) - .now)
            guard remaining > .milliseconds(1) else { throw TransportError("\(method) \(HTTPURL.redacted(url)): no time left before the deadline") }
            let started = ContinuousClock.now
            let response: HTTPResponse
            let bytes: ByteBuffer
            do {
                response = try await httpClient.execute(request, timeout: remaining, maximumBodySize: 64 << 20)
                bytes = response.body
            } catch {
                // A caller that stopped waiting (its task cancelled) says nothing of the service.
                outcome = Task.isCancelled ? .neutral : .unreachable
                span?.setStatus(SpanStatus(code: .error, message: "no answer"))
                observer?(RequestRecord(method: method, url: url, status: nil, duration: .now - started))
                throw TransportError("\(method) \(HTTPURL.redacted(url)): \(error)", timedOut: (error as? HTTPTransportError)?.timedOut == true)
            }
            observer?(RequestRecord(method: method, url: url, status: Int(response.status.code), duration: .now - started))
            span?.attributes["http.response.status_code"] = Int64(response.status.code)
            if response.status.code >= 400 { span?.setStatus(SpanStatus(code: .error, message: "HTTP \(response.status.code)")) }
            // An answer from the service itself (4xx included) means it is up; 502-504 come from a proxy or an overload.
            outcome = (502...504).contains(response.status.code) ? .unreachable : .answered
            if (200..<300).contains(response.status.code) { return Array(buffer: bytes) }
            if response.status.code == 401, attempt == 1 {
                await credentials.invalidate(token)
                continue
            }
            throw GoogleAPIError(httpStatus: Int(response.status.code), body: Array(buffer: bytes), retryAfter: response.headers.first(name: "retry-after"))
        }
        throw GoogleAPIError(httpStatus: 401, status: .unauthenticated, message: "refused after a token refresh")
    }

    /// Retries `operation` while `isRetryable` says so, within the policy's attempts and budget; no
    /// retry starts whose wait would reach `deadline`.
    static func withRetries<T: Sendable>(
        _ policy: RetryPolicy, until deadline: ContinuousClock.Instant? = nil, isRetryable: (any Error) -> Bool, _ operation: () async throws -> T
    ) async throws -> T {
        let clock = ContinuousClock()
        let start = clock.now
        var attempt = 1
        while true {
            do {
                return try await operation()
            } catch {
                let retryAfter = (error as? GoogleAPIError)?.retryAfterSeconds ?? (error as? TransportError)?.retryAfterSeconds
                let delay = policy.delay(afterAttempt: attempt, retryAfterSeconds: retryAfter)
                let resumes = clock.now + delay
                guard isRetryable(error), attempt < policy.maximumAttempts, resumes - start <= policy.totalBudget,
                    deadline.map({ resumes + .milliseconds(50) < $0 }) ?? true
                else { throw error }
                try await Task.sleep(for: delay)
                attempt += 1
            }
        }
    }

    /// A call's span name: host and method (`documents:commit`, `messages:send`), or `documents/…` for
    /// one document, without project names or document ids, so spans of one kind group together.
    static func operation(_ url: String) -> String {
        let parts = HTTPURL.redacted(url).split(separator: "/")
        let host = parts.dropFirst().first.map(String.init) ?? ""
        guard let last = parts.last, parts.count > 2 else { return host }
        return "\(host) " + (last.contains(":") ? String(last) : "documents/…")
    }

}
