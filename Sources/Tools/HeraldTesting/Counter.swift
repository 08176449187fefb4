import Synchronization

/// A count shared between concurrent tasks or threads: requests seen, connections accepted.
public final class Counter: Sendable {
    private let count = Mutex(0)
    public init() {}
    /// Adds one and returns the new count.
    @discardableResult public func increment() -> Int {
        count.withLock {
            $0 += 1
            return $0
        }
    }
    /// Adds one and returns the count before.
    public func take() -> Int {
        count.withLock {
            $0 += 1
            return $0 - 1
        }
    }
    public var value: Int { count.withLock { $0 } }
}

/// A yes/no shared between concurrent tasks: set once, read by many.
public final class Flag: Sendable {
    private let state = Mutex(false)
    public init() {}
    public func set() { state.withLock { $0 = true } }
    public var isSet: Bool { state.withLock { $0 } }
}

/// Values gathered by concurrent tasks under their keys: the messages the chaos writers unsent.
public final class SharedTable<Value: Sendable>: Sendable {
    private let table = Mutex([String: Value]())
    public init() {}
    public subscript(key: String) -> Value? {
        get { table.withLock { $0[key] } }
        set { table.withLock { $0[key] = newValue } }
    }
    public var all: [String: Value] { table.withLock { $0 } }
}
