import Foundation

/// Runs blocking work (a socket read, a sleep between raw writes) on a thread of its own. Swift's
/// cooperative pool has one thread per core, two in CI: a test that blocks one of them stalls every
/// in-process server and HTTP client of the run, and unrelated tests' requests then time out. Dispatch's
/// global queues are no way out: on Linux they share their few threads with that pool, so a handful of
/// blocked reads there stalls it just the same (seen: in-process servers' answers held for seconds).
public func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try work() }) }
        thread.stackSize = 1 << 20
        thread.start()
    }
}
