import FirestoreModel
import Synchronization
import Testing

@testable import EmbeddedFirestore
@testable import LocalCloud

/// The commit feed behind Listen: what a slow subscriber is told, what a resuming one can get.
struct ChangeFeedTests {
    static func commit(_ second: Int64, _ path: String = "c/d") throws -> ChangeFeed.Commit {
        let name = try DocumentName(project: "p", path: path)
        return ChangeFeed.Commit(time: Timestamp(seconds: second), changes: [LocalFirestore.Change(name: name, before: nil, after: nil)])
    }

    /// A subscriber that does not keep up holds at most `maximumPending` commits, then is told it
    /// missed some (and starts over), and then hears new commits again.
    @Test func aSlowSubscriberIsToldItMissedCommitsInsteadOfQueueingThemAll() async throws {
        let feed = ChangeFeed(startedAt: Timestamp(seconds: 0))
        let subscription = feed.subscribe()
        defer { subscription.cancel() }
        for second in 1...Int64(ChangeFeed.maximumPending + 500) { feed.publish(try Self.commit(second)) }
        #expect(subscription.queue.withLock { $0.pending.count } <= ChangeFeed.maximumPending)
        guard case .missed? = await subscription.next() else {
            Issue.record("expected word of missed commits")
            return
        }
        feed.publish(try Self.commit(10_000))
        guard case .commit(let next)? = await subscription.next() else {
            Issue.record("expected the next commit")
            return
        }
        #expect(next.time == Timestamp(seconds: 10_000))
    }

    /// A subscriber that keeps up hears every commit, in order.
    @Test func aSubscriberThatKeepsUpHearsEveryCommitInOrder() async throws {
        let feed = ChangeFeed(startedAt: Timestamp(seconds: 0))
        let subscription = feed.subscribe()
        defer { subscription.cancel() }
        var heard: [Int64] = []
        for second in 1...Int64(50) {
            feed.publish(try Self.commit(second))
            if second % 7 == 0 || second == 50 {
                while heard.count < second, case .commit(let commit)? = await subscription.next() { heard.append(commit.time.seconds) }
            }
        }
        #expect(heard == Array(1...50))
    }

    /// Commits since a time are there while kept; older than the history, the answer is nil (the
    /// listener then resets its target).
    @Test func commitsSinceATimeAreKeptUpToTheHistorysSize() throws {
        let feed = ChangeFeed(startedAt: Timestamp(seconds: 0))
        for second in 1...Int64(ChangeFeed.keptChanges + 10) { feed.publish(try Self.commit(second)) }
        #expect(feed.commits(after: Timestamp(seconds: 5)) == nil)
        let recent = try #require(feed.commits(after: Timestamp(seconds: Int64(ChangeFeed.keptChanges))))
        #expect(recent.map(\.time.seconds) == Array(Int64(ChangeFeed.keptChanges + 1)...Int64(ChangeFeed.keptChanges + 10)))
    }

    /// A token from before the feed started (another process, before a restart) cannot be answered from it.
    @Test func aTokenFromBeforeTheFeedStartedIsNotAnsweredFromIt() throws {
        let feed = ChangeFeed(startedAt: Timestamp(seconds: 100))
        feed.publish(try Self.commit(101))
        #expect(feed.commits(after: Timestamp(seconds: 50)) == nil)
        #expect(feed.commits(after: Timestamp(seconds: 100))?.count == 1)
        // By default the feed starts now: a token of the previous run of herald dev resets the target.
        #expect(ChangeFeed().commits(after: Timestamp(seconds: 1_700_000_000)) == nil)
    }
}
