import FirestoreModel
import Foundation
import Synchronization

/// Every commit's document changes, in commit order: the recent ones kept for listeners that resume
/// (a client reconnecting with a resume token gets what it missed), and each one handed to every
/// subscriber. A subscriber that falls more than `maximumPending` commits behind is told it missed
/// some (it then starts its targets over) rather than having them queue without bound.
public final class ChangeFeed: Sendable {
    public struct Commit: Sendable {
        public var time: Timestamp
        public var changes: [LocalFirestore.Change]
    }

    /// What a subscriber is handed next.
    enum Next: Sendable {
        case commit(Commit)
        /// Commits were dropped while the subscriber was behind.
        case missed
    }

    static let keptChanges = 20_000
    static let maximumPending = 2_000

    struct State: Sendable {
        var history: [Commit] = []
        var keptChanges = 0
        /// Commits before this time are no longer kept.
        var keptSince = Timestamp(seconds: 0)
        var latest = Timestamp(seconds: 0)
        var subscribers: [UInt64: Subscription] = [:]
        var nextID: UInt64 = 0
    }

    let state: Mutex<State>

    /// `startedAt`: commits before it were made by an earlier process (or another store) and are not
    /// here, so a resume token from before it is answered with a reset.
    /// Until the first commit, the store is consistent at `startedAt`: a read time of 0 would be
    /// SnapshotVersion.min() to the SDKs, which raise no snapshot at it (the web SDK's onSnapshot on a
    /// store nobody has written since the start would never fire).
    public init(startedAt: Timestamp = Timestamp.now()) {
        var state = State()
        state.keptSince = startedAt
        state.latest = startedAt
        self.state = Mutex(state)
    }

    /// Called on the database's writer queue after each commit, in commit order.
    func publish(_ commit: Commit) {
        guard !commit.changes.isEmpty else { return }
        let subscribers = state.withLock { state -> [Subscription] in
            state.history.append(commit)
            state.keptChanges += commit.changes.count
            state.latest = commit.time
            while state.keptChanges > Self.keptChanges, state.history.count > 1 {
                let dropped = state.history.removeFirst()
                state.keptChanges -= dropped.changes.count
                state.keptSince = dropped.time
            }
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.deliver(commit) }
    }

    /// The time of the latest commit published.
    var latest: Timestamp { state.withLock { $0.latest } }

    /// The commits after `time`, or nil when some of them are no longer kept.
    func commits(after time: Timestamp) -> [Commit]? {
        state.withLock { state in
            guard time >= state.keptSince else { return nil }
            return state.history.filter { $0.time > time }
        }
    }

    /// Hears every commit from now on, until cancelled.
    func subscribe() -> Subscription {
        let subscription = Subscription(feed: self)
        state.withLock { state in
            state.nextID += 1
            subscription.id = state.nextID
            state.subscribers[state.nextID] = subscription
        }
        return subscription
    }

    func remove(_ id: UInt64) { _ = state.withLock { $0.subscribers.removeValue(forKey: id) } }

    /// One listener's place in the feed.
    final class Subscription: @unchecked Sendable {
        // `id` is set once, before the subscription is shared.
        var id: UInt64 = 0
        weak var feed: ChangeFeed?
        let queue = Mutex<(pending: [Commit], missed: Bool, waiter: CheckedContinuation<Next?, Never>?, cancelled: Bool)>(([], false, nil, false))

        init(feed: ChangeFeed) { self.feed = feed }

        func deliver(_ commit: Commit) {
            let waiter = queue.withLock { queue -> CheckedContinuation<Next?, Never>? in
                if let waiter = queue.waiter {
                    queue.waiter = nil
                    return waiter
                }
                if queue.pending.count >= ChangeFeed.maximumPending {
                    queue.pending.removeAll()
                    queue.missed = true
                } else if !queue.missed {
                    queue.pending.append(commit)
                }
                return nil
            }
            waiter?.resume(returning: .commit(commit))
        }

        /// The next commit (or word that some were missed); nil once cancelled.
        func next() async -> Next? {
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Next?, Never>) in
                    let ready = queue.withLock { queue -> Next?? in
                        if queue.cancelled { return .some(nil) }
                        if queue.missed {
                            queue.missed = false
                            return .some(.missed)
                        }
                        if !queue.pending.isEmpty { return .some(.commit(queue.pending.removeFirst())) }
                        queue.waiter = continuation
                        return .none
                    }
                    if let ready { continuation.resume(returning: ready) }
                }
            } onCancel: {
                cancel()
            }
        }

        func cancel() {
            let waiter = queue.withLock { queue -> CheckedContinuation<Next?, Never>? in
                queue.cancelled = true
                defer { queue.waiter = nil }
                return queue.waiter
            }
            waiter?.resume(returning: nil)
            feed?.remove(id)
        }
    }
}
