import Dispatch

/// Runs blocking work (a socket read, a sleep between raw writes) on a
/// dispatch thread. Swift's cooperative pool has one thread per core, two in CI: a test that blocks
/// one of them stalls every in-process server and HTTP client of the run, and unrelated tests' requests
/// then time out. Tests never block in an async function; they hand the blocking part to this.
public func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
    }
}
