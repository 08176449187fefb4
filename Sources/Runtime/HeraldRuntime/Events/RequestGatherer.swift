import Synchronization

/// Requests of one instance gathered into fewer when it is busy. A request goes at once while fewer than
/// `lanes` are out, so when nothing is busy nothing waits. Beyond that it waits for the next one, which
/// leaves the moment one of those returns and carries every part waiting then (up to `maximum` by
/// `size`): under load, events finishing together share one request instead of one each.
///
/// A part waits `patience` at most: a request out longer than that is slow (Firestore hanging, say), and
/// the parts behind it then go each on its own, as they would without gathering (so an outage is met as
/// before: every event's own request, each counted by the circuit breaker, none held behind another).
///
/// A gathered part never leaves before its caller asked, so it sees what the caller did before. The
/// request is made by the first of the gathered callers, in a task of its own so that its caller's
/// cancellation does not fail the others; `send` answers each part (a failure reaches every caller).
final class RequestGatherer<Part: Sendable, Answer: Sendable>: Sendable {
    let lanes: Int
    let maximum: Int
    let size: @Sendable (Part) -> Int
    let patience: Duration
    /// One request for these parts: an answer for each, in order.
    let send: @Sendable ([Part]) async throws -> [Answer]

    private enum Turn: Sendable {
        case answered(Answer)
        /// This caller sends for itself and for these others.
        case lead([Waiting])
    }

    private struct Waiting: Sendable {
        var part: Part
        var continuation: CheckedContinuation<Turn, any Error>
        var since: ContinuousClock.Instant
    }

    private struct State {
        var inFlight = 0
        /// In the order they came.
        var waiting: [Waiting] = []
        /// A timer will let go of the parts that waited `patience`.
        var timerSet = false
        /// Requests made, and the parts they carried (for tests and figures).
        var requests = 0
        var parts = 0
    }

    private let state = Mutex(State())

    init(
        lanes: Int, maximum: Int, patience: Duration = .milliseconds(250), size: @escaping @Sendable (Part) -> Int,
        send: @escaping @Sendable ([Part]) async throws -> [Answer]
    ) {
        self.lanes = lanes
        self.maximum = maximum
        self.patience = patience
        self.size = size
        self.send = send
    }

    /// Requests made so far, and the parts they carried.
    var counts: (requests: Int, parts: Int) { state.withLock { ($0.requests, $0.parts) } }

    /// Parts waiting for a lane now.
    var waitingCount: Int { state.withLock { $0.waiting.count } }

    func callAsFunction(_ part: Part) async throws -> Answer {
        let turn = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Turn, any Error>) in
            let (leads, setTimer) = state.withLock { state in
                guard state.inFlight < lanes else {
                    state.waiting.append(Waiting(part: part, continuation: continuation, since: .now))
                    defer { state.timerSet = true }
                    return (false, !state.timerSet)
                }
                state.inFlight += 1
                return (true, false)
            }
            if leads { continuation.resume(returning: .lead([])) }
            if setTimer { letGo(after: patience) }
        }
        switch turn {
        case .answered(let answer): return answer
        case .lead(let others): return try await lead(part, for: others)
        }
    }

    private func lead(_ part: Part, for others: [Waiting]) async throws -> Answer {
        state.withLock {
            $0.requests += 1
            $0.parts += 1 + others.count
        }
        let parts = [part] + others.map(\.part)
        let send = self.send
        let result: Result<[Answer], any Error>
        do {
            let answers = try await (others.isEmpty ? send(parts) : Task { try await send(parts) }.value)
            guard answers.count == parts.count else { throw GathererMismatch(parts: parts.count, answers: answers.count) }
            result = .success(answers)
        } catch {
            result = .failure(error)
        }
        for (index, other) in others.enumerated() { other.continuation.resume(with: result.map { Turn.answered($0[index + 1]) }) }
        let next = state.withLock { state in
            let batch = Self.nextBatch(of: &state.waiting, maximum: maximum, size: size)
            if batch.isEmpty { state.inFlight -= 1 }  // else the lane passes to the next request
            return batch
        }
        if let first = next.first { first.continuation.resume(returning: .lead(Array(next.dropFirst()))) }
        return try result.get()[0]
    }

    /// After `delay`, the parts that waited `patience` go each on its own; the timer is set again for the
    /// next part that will have waited so long.
    private func letGo(after delay: Duration) {
        Task {
            try? await Task.sleep(for: delay)
            let now = ContinuousClock.now
            let (overdue, next): ([Waiting], Duration?) = state.withLock { state in
                let count = state.waiting.prefix { now - $0.since >= patience }.count
                let overdue = Array(state.waiting.prefix(count))
                state.waiting.removeFirst(count)
                state.inFlight += count
                guard let oldest = state.waiting.first else {
                    state.timerSet = false
                    return (overdue, nil)
                }
                return (overdue, patience - (now - oldest.since))
            }
            for part in overdue { part.continuation.resume(returning: .lead([])) }
            if let next { letGo(after: next) }
        }
    }

    /// The next request's parts: the longest-waiting while they fit, and always the first.
    private static func nextBatch(of waiting: inout [Waiting], maximum: Int, size: (Part) -> Int) -> [Waiting] {
        var total = 0
        var taken = 0
        for item in waiting {
            let itemSize = size(item.part)
            guard taken == 0 || total + itemSize <= maximum else { break }
            total += itemSize
            taken += 1
        }
        defer { waiting.removeFirst(taken) }
        return Array(waiting.prefix(taken))
    }
}

struct GathererMismatch: Error, CustomStringConvertible {
    var parts: Int
    var answers: Int
    var description: String { "a gathered request answered \(answers) of \(parts) parts" }
}
