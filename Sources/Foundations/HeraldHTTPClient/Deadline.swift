import Synchronization

/// Waits for `operation` until `deadline`: its result, or `expired()` thrown at the deadline. Not a task
/// group: a group waits for every child, so an operation that missed its cancellation (a request waiting
/// its turn behind another) would hold the caller past the deadline. Here the caller gets its answer at
/// the deadline, and the operation is cancelled and left to end on its own. A request's time limit, and
/// a caller's that must stop waiting for a request at a time of its own.
public func withDeadline<T: Sendable>(
    _ deadline: ContinuousClock.Instant, expired: @autoclosure @escaping @Sendable () -> any Error, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let outcome = FirstOutcome<T>()
    let work = Task {
        do { outcome.settle(.success(try await operation())) } catch { outcome.settle(.failure(error)) }
    }
    let timer = Task {
        try await Task.sleep(until: deadline, clock: .continuous)
        outcome.settle(.failure(expired()))
    }
    defer {
        work.cancel()
        timer.cancel()
    }
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { outcome.wait(with: $0) }
    } onCancel: {
        outcome.settle(.failure(CancellationError()))
    }
}

/// The first of several results, handed to one waiter whichever comes first: the result or the waiter.
private final class FirstOutcome<T: Sendable>: Sendable {
    private enum State {
        case open
        case waiting(CheckedContinuation<T, any Error>)
        case settled(Result<T, any Error>)
        case done
    }
    private let state = Mutex(State.open)

    func settle(_ result: Result<T, any Error>) {
        let waiter = state.withLock { state -> CheckedContinuation<T, any Error>? in
            switch state {
            case .open:
                state = .settled(result)
                return nil
            case .waiting(let continuation):
                state = .done
                return continuation
            case .settled, .done:
                return nil
            }
        }
        waiter?.resume(with: result)
    }

    func wait(with continuation: CheckedContinuation<T, any Error>) {
        let ready = state.withLock { state -> Result<T, any Error>? in
            switch state {
            case .open:
                state = .waiting(continuation)
                return nil
            case .settled(let result):
                state = .done
                return result
            case .waiting, .done:
                return nil
            }
        }
        if let ready { continuation.resume(with: ready) }
    }
}
