import Synchronization

/// Turns at something costly, one at a time: a caller takes a turn (waiting in a line of at most
/// `waitingLimit`) or is told no at once, and releases it when done. Holds: at most one holder, at most
/// `waitingLimit` waiting, and each release hands the turn to the longest waiting.
final class HashTurns: Sendable {
    let waitingLimit: Int
    private let state = Mutex<(busy: Bool, waiting: [CheckedContinuation<Bool, Never>])>((false, []))

    init(waitingLimit: Int) { self.waitingLimit = waitingLimit }

    /// How many wait in line.
    var waitingCount: Int { state.withLock { $0.waiting.count } }

    /// True once it is the caller's turn; false at once when the line is full.
    func take() async -> Bool {
        await withCheckedContinuation { (turn: CheckedContinuation<Bool, Never>) in
            let answer: Bool? = state.withLock { state in
                if !state.busy {
                    state.busy = true
                    return true
                }
                guard state.waiting.count < waitingLimit else { return false }
                state.waiting.append(turn)
                return nil
            }
            if let answer { turn.resume(returning: answer) }
        }
    }

    /// Ends the holder's turn: the next in line has it, or no one.
    func release() {
        let next = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard !state.waiting.isEmpty else {
                state.busy = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume(returning: true)
    }
}
