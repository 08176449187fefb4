import Synchronization

/// Stops calling a service that keeps failing to answer. After `threshold` requests in a row got no
/// answer (refused or reset connections, timeouts, 502-504, no token), the breaker opens: requests
/// fail at once with a `TransportError` carrying Retry-After, so an outage costs each event
/// milliseconds instead of a timeout. When the open period ends, one request goes through as a probe:
/// an answer closes the breaker, another failure opens it again for twice as long (up to `maximumOpen`).
public final class CircuitBreaker: Sendable {
    public enum Outcome: Sendable { case answered, unreachable, neutral }

    struct State {
        var failuresInARow = 0
        var openUntil: ContinuousClock.Instant?
        var openFor: Duration = .zero
        var probing = false
    }

    public let name: String
    let threshold: Int
    let firstOpen: Duration
    let maximumOpen: Duration
    let state = Mutex(State())

    public init(name: String = "Google API", threshold: Int = 5, firstOpen: Duration = .seconds(5), maximumOpen: Duration = .seconds(30)) {
        self.name = name
        self.threshold = max(1, threshold)
        self.firstOpen = firstOpen
        self.maximumOpen = maximumOpen
    }

    /// Lets a request through, or throws while the breaker is open (or a probe is out).
    public func admit() throws(TransportError) {
        let refusal: Duration? = state.withLock { state in
            guard let until = state.openUntil else { return nil }
            let now = ContinuousClock.now
            if now < until { return until - now }
            if state.probing { return .seconds(1) }
            state.probing = true
            return nil
        }
        if let wait = refusal {
            let seconds = max(1, Int((wait / .seconds(1)).rounded(.up)))
            throw TransportError("\(name) unreachable for the last \(threshold)+ requests; not calling it for \(seconds) s", retryAfterSeconds: seconds)
        }
    }

    public func record(_ outcome: Outcome) {
        state.withLock { state in
            switch outcome {
            case .neutral:
                state.probing = false
            case .answered:
                state = State()
            case .unreachable:
                state.failuresInARow += 1
                if state.probing || (state.openUntil == nil && state.failuresInARow >= threshold) {
                    state.openFor = state.probing ? min(maximumOpen, state.openFor * 2) : firstOpen
                    state.openUntil = .now + state.openFor
                }
                state.probing = false
            }
        }
    }
}
