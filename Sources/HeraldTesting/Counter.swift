import Synchronization

/// A count shared between concurrent tasks or threads: requests seen, connections accepted.
public final class Counter: Sendable {
    private let count = Mutex(0)
    public init() {}
    /// Adds one and returns the new count.
    @discardableResult public func increment() -> Int { count.withLock { $0 += 1; return $0 } }
    public var value: Int { count.withLock { $0 } }
}
