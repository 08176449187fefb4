import Synchronization

/// A value several closures share and change (a clock a test moves, the statuses a client saw).
final class Shared<Value: Sendable>: Sendable {
    let state: Mutex<Value>
    init(_ value: Value) { state = Mutex(value) }
    var value: Value { state.withLock { $0 } }
    func change(_ body: (inout Value) -> Void) { state.withLock { body(&$0) } }
}

struct Failure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
