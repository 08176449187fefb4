import FirestoreModel
import GoogleClients
import Testing

@testable import HeraldRuntime

/// Commits gathered into one keep within Firestore's limits, which refuse a commit whole.
@Suite struct SharedCommitTests {
    /// Messages to a group of 50 each raise 49 unread counts on the conversation: eleven in one commit
    /// would give it 539 transforms (Firestore allows 500), so the eleventh waits for the next commit.
    @Test func aSharedCommitGivesNoDocumentMoreThan500Transforms() throws {
        let conversation = try DocumentName(project: "p", path: "conversations/busy")
        let message = [
            Write(.transform(conversation), transforms: (0..<49).map { FieldTransform(FieldPath("unreadCount", "u\($0)"), .increment(.integer(1))) })
        ]
        var shared = SharedCommit()
        var taken = 0
        while taken < 20, shared.add(message, limit: CommitCoalescer.maximumWrites) { taken += 1 }
        #expect(taken == 10)
        #expect(shared.writes.count == 1 && shared.writes.allSatisfy { WritePacking.transformCount($0) <= 500 })
        // Each message reads its own count's committed total back from the one shared write.
        let totals = (1...10).map { FirestoreValue.integer(Int64($0)) }
        let result = FirestoreClient.CommitResult(
            commitTime: Timestamp(seconds: 1), updateTimes: [Timestamp(seconds: 1)],
            transformResults: [(0..<490).map { totals[$0 / 49] }])
        #expect(shared.result(of: 3, from: result).transformResults == [Array(repeating: .integer(10), count: 49)])
    }
}
