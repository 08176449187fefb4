import FirestoreEvents
import FirestoreModel
import HeraldCore
import Testing

@testable import HeraldRuntime

/// How a plan too large for one commit is laid out in the ledger.
@Suite struct EventLedgerTests {
    let ledger = EventLedger(main: try! DocumentName(project: "p", path: "_herald/events/ledger/abc"))
    let conversation = try! DocumentName(project: "p", path: "conversations/town")
    let message = try! DocumentName(project: "p", path: "conversations/town/messages/m1")

    /// One group per recipient, as onMessageCreated plans them.
    func plan(recipients: Int) throws -> Plan {
        let core = [Write(.update(conversation, fields: ["last": .string("hi")], mask: [FieldPath("last")]), precondition: .updateTime(Timestamp(seconds: 5)))]
        let groups = try (1...recipients).map { i in
            [
                Write(
                    .transform(conversation), transforms: [FieldTransform(FieldPath("unreadCount", "u\(i)"), .increment(.integer(1)))],
                    precondition: .exists(true)),
                Write(
                    .update(message, fields: ["heraldUnread": .map(["u\(i)": .boolean(true)])], mask: [FieldPath("heraldUnread", "u\(i)")]),
                    precondition: .exists(true)),
                Write(
                    .transform(try DocumentName(project: "p", path: "users/u\(i)")), transforms: [FieldTransform(FieldPath("badge"), .increment(.integer(1)))],
                    precondition: .exists(true)),
            ]
        }
        let pushes = (1...recipients).map {
            PushMessage(userID: "u\($0)", token: "tok-\($0)-" + String(repeating: "x", count: 150), fcm: FCMMessage(token: ""))
        }
        return Plan(writes: core, groups: groups, pushes: pushes)
    }

    @Test func aSmallPlanIsOneCommitAsBefore() throws {
        let plan = try plan(recipients: 3)
        let layout = try ledger.layout(plan)
        #expect(layout.parts.isEmpty && layout.partCount == 0)
        #expect(layout.first == plan.allWrites)
        #expect(layout.first.count == 1 + 1 + 3)  // the conversation (last message and counts), the message, three badges
    }

    @Test(arguments: [3, 1000])
    func aPlansWriteCountIsItsMergedWrites(recipients: Int) throws {
        let plan = try plan(recipients: recipients)
        #expect(plan.allWritesCount == plan.allWrites.count)
        #expect(plan.allWritesCount == 1 + 1 + recipients)
    }

    /// A device named twice gets the first push only, whether the plan has a few pushes or many.
    @Test(arguments: [5, 40])
    func aPlanKeepsTheFirstPushPerToken(count: Int) {
        let pushes = (0..<count).map { i in PushMessage(userID: "u\(i)", token: "token-\(i % (count / 2))", fcm: FCMMessage(token: "")) }
        let kept = Plan(writes: [], pushes: pushes).pushes
        #expect(kept.map(\.token) == (0..<count / 2).map { "token-\($0)" })
        #expect(kept.map(\.userID) == (0..<count / 2).map { "u\($0)" })
    }

    /// A badge moving out of the user document is deleted there on the condition that the document is
    /// as read: in the first commit, a changed document plans the event again; in a later part it could
    /// never be applied (each retry meets the same stale version). Those groups go first, wherever they are in the plan.
    @Test func groupsThatRequireAVersionAreInTheFirstCommit() throws {
        var plan = try plan(recipients: 1000)
        let moved = try (990..<1000).map { try DocumentName(project: "p", path: "users/u\($0)") }
        for (index, user) in zip(990..<1000, moved) {
            plan.groups[index].append(Write(.update(user, fields: [:], mask: [FieldPath("badge")]), precondition: .updateTime(Timestamp(seconds: 7))))
        }
        let layout = try ledger.layout(plan)
        #expect(!layout.parts.isEmpty)
        #expect(Set(moved).isSubset(of: Set(layout.first.map(\.document))), "every move in the first commit")
        #expect(layout.parts.joined().allSatisfy { if case .updateTime = $0.precondition { false } else { true } })
        let badges = ([layout.first] + layout.parts).joined().filter { $0.document.path.hasPrefix("users/") && !$0.transforms.isEmpty }
        #expect(badges.count == 1000, "every group once")
    }

    @Test func aThousandRecipientsSpillIntoPartsWithinFirestoresLimits() throws {
        let plan = try plan(recipients: 1000)
        let layout = try ledger.layout(plan)
        let commits = [layout.first] + layout.parts
        #expect(layout.first.count + 1 + layout.partCount <= 500, "the first commit carries the ledger entry and every part")
        for commit in layout.parts { #expect(commit.count + 1 <= 500) }
        for commit in commits { #expect(commit.allSatisfy { $0.transforms.count <= 500 }) }
        // Every group is in exactly one commit: each user's badge once, each recipient's count and mark once.
        let badges = commits.joined().filter { $0.document.path.hasPrefix("users/") }
        #expect(badges.count == 1000 && Set(badges.map(\.document)).count == 1000)
        let counts = commits.joined().filter { $0.document == conversation }.flatMap(\.transforms)
        #expect(counts.count == 1000)
        // The pushes' states, ~160 KB of keys, fit the main entry; writes of the first commit name every part.
        #expect(layout.pushShards.count == 1)
        let first = try ledger.firstCommit(
            layout, event: DocumentChange(eventID: "e", kind: .created, time: Timestamp(seconds: 1), document: message),
            function: "f", holder: "h", expireAt: Timestamp(seconds: 9))
        #expect(first.count == layout.first.count + 1 + layout.partCount)
        #expect(first.suffix(layout.partCount).allSatisfy { $0.precondition == .exists(false) })
    }

    @Test func longTokensAreKeyedByTheirDigest() {
        #expect(EventLedger.key("short") == "short")
        let long = String(repeating: "t", count: 4000)
        #expect(EventLedger.key(long).hasPrefix("#") && EventLedger.key(long).utf8.count == 65)
        // A token no field name can be (a client stored it): `pushes.__x__` would make the ledger's commit fail.
        for hostile in ["__x__", ""] { #expect(EventLedger.key(hostile).hasPrefix("#"), "\(hostile)") }
    }
}
