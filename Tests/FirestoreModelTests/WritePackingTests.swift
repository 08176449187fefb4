import FirestoreModel
import Testing

/// `WritePacking`, the one place writes share a commit: whole groups or nothing, writes to a document
/// in their order, joined across separate commits only where both conditions hold, and Firestore's
/// limits (writes per commit, 500 transforms per document, each array element one).
@Suite struct WritePackingTests {
    static let conversation = try! DocumentName(project: "p", path: "conversations/c1")

    /// One message to a group of 50: 49 unread counts raised on the conversation.
    static func unreadCounts(_ recipients: Int) -> [Write] {
        [Write(.transform(conversation), transforms: (0..<recipients).map { FieldTransform(FieldPath("unreadCount", "u\($0)"), .increment(.integer(1))) })]
    }

    /// Eleven messages to a busy group of 50 would give the conversation 539 transforms in one commit,
    /// which Firestore refuses whole: the eleventh waits for a commit of its own.
    @Test func separateCommitsNeverGiveADocumentMoreThan500Transforms() {
        var shared = WritePacking(.separateCommits)
        for _ in 0..<10 {
            let fits = shared.add(Self.unreadCounts(49))
            #expect(fits)
        }
        let before = shared
        let fit1 = shared.add(Self.unreadCounts(49))
        #expect(!fit1)
        #expect(shared.writes == before.writes && shared.slots == before.slots, "a group that does not fit changes nothing")
        #expect(shared.writes.count == 1 && WritePacking.transformCount(shared.writes[0]) == 490)
        #expect(shared.slots == Array(repeating: [0], count: 10))
        var next = WritePacking(.separateCommits)
        let fit2 = next.add(Self.unreadCounts(49))
        #expect(fit2)
    }

    @Test func eachElementOfAnArrayTransformCounts() {
        let members = { (count: Int) in
            [
                Write(
                    .transform(Self.conversation),
                    transforms: [FieldTransform(FieldPath("members"), .appendMissingElements((0..<count).map { .string("u\($0)") }))])
            ]
        }
        var packing = WritePacking(.oneCommit)
        let fit3 = packing.add(members(500))
        #expect(fit3)
        let fit4 = packing.add(members(1))
        #expect(!fit4)
        #expect(!WritePacking(.oneCommit).adding(members(501)))
        #expect(WritePacking(.oneCommit, maximumTransforms: .max).adding(members(501)))
    }

    /// Across separate commits a second creation cannot be joined (one of the two would fail): the
    /// group does not fit. Within one commit, writes that cannot be one stay apart, in their order.
    @Test func writesThatCannotBeOneKeepTheirOrderOrWait() {
        let create = Write(.update(Self.conversation, fields: ["a": .integer(1)], mask: nil), precondition: .exists(false))
        let raise = Self.unreadCounts(1)[0]
        let delete = Write(.delete(Self.conversation))
        var shared = WritePacking(.separateCommits)
        let fit5 = shared.add([create])
        #expect(fit5)
        let fit6 = shared.add([create])
        #expect(!fit6)
        let fit7 = shared.add([raise])
        #expect(!fit7, "nothing joins a creation of another commit")
        #expect(shared.writes == [create] && shared.slots == [[0]])
        var one = WritePacking(.oneCommit)
        let fit8 = one.add([raise, delete, raise])
        #expect(fit8)
        #expect(one.writes.map(\.operation) == [.transform(Self.conversation), .delete(Self.conversation), .transform(Self.conversation)])
        #expect(one.slots == [[0, 1, 2]])
    }

    @Test func aGroupPastTheCapacityDoesNotFitAtAll() throws {
        let names = try (0..<5).map { try DocumentName(project: "p", path: "users/u\($0)") }
        let group = names.map { Write(.transform($0), transforms: [FieldTransform(FieldPath("badge"), .increment(.integer(1)))]) }
        var packing = WritePacking(.oneCommit)
        let fit9 = packing.add(Array(group.prefix(3)), capacity: 4)
        #expect(fit9)
        let fit10 = packing.add(Array(group.suffix(2)), capacity: 4)
        #expect(!fit10)
        #expect(packing.writes.count == 3)
        let fit11 = packing.add(Array(group.prefix(2)), capacity: 4)
        #expect(fit11, "writes to documents it holds merge and take no place")
        #expect(packing.writes.count == 3 && packing.slots == [[0, 1, 2], [0, 1]])
    }
}

extension WritePacking {
    fileprivate func adding(_ group: [Write]) -> Bool {
        var copy = self
        return copy.add(group)
    }
}
