import ChatFunctions
import FirestoreEvents
import FirestoreModel
import HeraldCore
import Testing
import WireFormats

/// A group (alice, bob, carol) and one message from alice, as onMessageCreated left it, just read by bob.
struct ReceiptWorld {
    var schema = Schema.presets["default"]!
    var message: [String: FirestoreValue] = [
        "senderId": .string("alice"), "text": .string("Dinner at 6pm"), "status": .string("sent"),
        "readBy": .array([.string("alice"), .string("bob")]),
        "heraldUnread": .map(["bob": .boolean(true), "carol": .boolean(true)]),
    ]
    /// The version before the event's write: by default the same message before bob read it.
    var previous: [String: FirestoreValue]? = nil
    /// The event carries both versions (else it reads the message as it is now, `message`).
    var withData = true
    /// Readers whose read another event already counted down.
    var receipts: Set<String> = []
    var conversation: [String: FirestoreValue] = [
        "members": .array([.string("alice"), .string("bob"), .string("carol")]), "isGroup": .boolean(true), "name": .string("Family"),
        "lastMessage": .map(["messageId": .string("m1"), "text": .string("Dinner at 6pm")]),
    ]
    var users: [String: [String: FirestoreValue]] = [
        "bob": ["fcmTokens": .array([.string("b-phone"), .string("b-ipad")]), "unreadTotal": .integer(3)],
        "carol": ["fcmTokens": .array([.string("c-phone")]), "unreadTotal": .integer(1)],
    ]

    func plan() throws -> Plan {
        let function = OnReadReceipt(schema: schema)
        let messageName = try DocumentName(project: "p", path: "conversations/family/messages/m1")
        let current = FirestoreDocument(name: messageName, fields: message, updateTime: Timestamp(seconds: 20))
        var before = message
        before["readBy"] = .array([.string("alice")])
        let old = FirestoreDocument(name: messageName, fields: previous ?? before, updateTime: Timestamp(seconds: 19))
        var change = DocumentChange(
            eventID: "e", kind: .updated, time: Timestamp(seconds: 20), document: messageName, oldDocument: old, newDocument: current)
        if !withData { (change.oldDocument, change.newDocument, change.dataWasOmitted) = (nil, nil, true) }
        var read = DocumentsRead()
        read.found[messageName] = current
        read.found[try DocumentName(project: "p", path: "conversations/family")] =
            FirestoreDocument(name: try DocumentName(project: "p", path: "conversations/family"), fields: conversation)
        for (id, fields) in users {
            let name = try DocumentName(project: "p", path: "users/\(id)")
            read.found[name] = FirestoreDocument(name: name, fields: fields, updateTime: Timestamp(seconds: 5))
        }
        for reader in ["bob", "carol"] {
            let receipt = try DocumentName(project: "p", path: "conversations/family/messages/m1/heraldReads/\(reader)")
            if receipts.contains(reader) { read.found[receipt] = FirestoreDocument(name: receipt, fields: [:]) } else { read.missing.insert(receipt) }
        }
        let (plan, steps) = function.plan(for: change, given: read)
        #expect(steps.flatMap(\.documents).isEmpty, "everything the plan reads is in this world")
        return plan
    }
}

@Suite struct OnReadReceiptTests {
    /// The status the plan writes on the message, if it writes one.
    static func statusWritten(_ plan: Plan) -> FirestoreValue? {
        guard case .update(_, let fields, _)? = plan.allWrites.first(where: { $0.document.path == "conversations/family/messages/m1" })?.operation
        else { return nil }
        return fields["status"]
    }

    @Test func aReadCountsDownOnceWithAReceiptAndLeavesTheMessageAlone() throws {
        let plan = try ReceiptWorld().plan()
        // Nothing written to the message (its readers keep writing it): the status stays, carol has not read it.
        #expect(plan.allWrites.first { $0.document.path == "conversations/family/messages/m1" } == nil)
        let receipt = try #require(plan.allWrites.first { $0.document.path == "conversations/family/messages/m1/heraldReads/bob" })
        #expect(receipt.precondition == .exists(false), "made once, by whichever event comes first")
        let conversation = try #require(plan.allWrites.first { $0.document.path == "conversations/family" })
        #expect(
            conversation.transforms == [
                FieldTransform(FieldPath("unreadCount", "bob"), .increment(.integer(-1))),
                FieldTransform(FieldPath("unreadCount", "bob"), .maximum(.integer(0))),
            ])
        // The badge is kept apart (every preset): it moves from the user document with its first count there.
        let badge = try #require(plan.allWrites.first { $0.document.path == "badges/bob" })
        let total = FieldPath("unreadTotal")
        #expect(
            badge.transforms == [
                FieldTransform(total, .maximum(.integer(3))), FieldTransform(total, .increment(.integer(-1))), FieldTransform(total, .maximum(.integer(0))),
            ])
        let moved = try #require(plan.allWrites.first { $0.document.path == "users/bob" })
        #expect(moved.operation == .update(moved.document, fields: [:], mask: [total]) && moved.precondition == .updateTime(Timestamp(seconds: 5)))
        #expect(plan.allWrites.first { $0.document.path == "badges/carol" } == nil)
        #expect(
            plan.allWrites.filter { $0.document != moved.document }.allSatisfy { if case .updateTime = $0.precondition { false } else { true } },
            "no write waits on a version but the badge's move (once per user)")
        // Bob's other devices hear the new badge silently.
        #expect(plan.pushes.map(\.token) == ["b-phone", "b-ipad"])
        for push in plan.pushes {
            #expect(push.content["notification"] == nil)
            #expect(push.content["apns"]?["payload"]?["aps"]?["badge"] == 2)
            #expect(push.content["apns"]?["payload"]?["aps"]?["content-available"] == 1)
            #expect(push.content["data"]?["badge"] == "2")
            // What the app needs to clear the conversation's notifications (the alerts' thread-id and tag).
            #expect(push.content["data"]?["reason"] == "read" && push.content["data"]?["threadId"] == "family")
            #expect(push.content["data"]?["conversationId"] == "family" && push.content["data"]?["messageId"] == "m1")
        }
    }

    /// Counted down before: by another event (then this one is a skip), or by this event's own earlier
    /// delivery, whose silent pushes the ledger may still hold pending. Nothing is written again; bob's
    /// pushes are planned for the executor to send only if this event's ledger says they are due.
    @Test func aReadCountedDownBeforeIsNotCountedAgainButItsPushesAreKept() throws {
        var world = ReceiptWorld()
        world.receipts = ["bob"]
        let plan = try world.plan()
        #expect(plan.decision == .skipUnlessStarted(reason: "its readers are counted down already"))
        #expect(plan.allWrites.isEmpty)
        #expect(plan.pushes.map(\.token) == ["b-phone", "b-ipad"])
        #expect(plan.pushes.allSatisfy { $0.content["notification"] == nil && $0.content["data"]?["reason"] == "read" })
    }

    @Test func aMarkLandingAfterTheReadCountsItDown() throws {
        var world = ReceiptWorld()
        var before = world.message
        before["heraldUnread"] = nil  // bob read before onMessageCreated's marks landed
        world.previous = before
        let plan = try world.plan()
        #expect(plan.allWrites.contains { $0.document.path == "conversations/family/messages/m1/heraldReads/bob" })
        #expect(plan.allWrites.contains { $0.document.path == "badges/bob" } && !plan.allWrites.contains { $0.document.path == "badges/carol" })
    }

    @Test func anEventWithoutDataCountsDownEveryReaderWithoutAReceipt() throws {
        var world = ReceiptWorld()
        world.withData = false
        world.message["readBy"] = .array([.string("alice"), .string("bob"), .string("carol")])
        world.receipts = ["bob"]
        let plan = try world.plan()
        #expect(plan.allWrites.contains { $0.document.path == "conversations/family/messages/m1/heraldReads/carol" })
        #expect(!plan.allWrites.contains { $0.document.path.hasSuffix("heraldReads/bob") || $0.document.path == "badges/bob" })
        #expect(plan.pushes.map(\.token) == ["c-phone"])
    }

    @Test func theLastReaderMakesItReadAndTheChatListShowsIt() throws {
        var world = ReceiptWorld()
        world.message["readBy"] = .array([.string("alice"), .string("bob"), .string("carol")])
        world.message["heraldUnread"] = .map(["carol": .boolean(true)])
        world.previous = world.message.merging(["readBy": .array([.string("alice"), .string("bob")])]) { _, new in new }
        let plan = try world.plan()
        #expect(Self.statusWritten(plan) == .string("read"))
        let message = try #require(plan.allWrites.first { $0.document.path == "conversations/family/messages/m1" })
        guard case .updateTime = message.precondition else {
            Issue.record("the status write must be conditional on the version it moves forward")
            return
        }
        let conversation = try #require(plan.allWrites.first { $0.document.path == "conversations/family" })
        guard case .update(_, let conversationFields, let mask) = conversation.operation else {
            Issue.record("not an update")
            return
        }
        #expect(mask == [FieldPath("lastMessage", "status")] && conversationFields["lastMessage"] == .map(["status": .string("read")]))
    }

    @Test func nothingNewIsANoOp() throws {
        var world = ReceiptWorld()
        world.previous = world.message  // bob read it before this version: an earlier event's
        #expect(try world.plan().decision == .skip(reason: "read and delivered state unchanged"))
    }

    /// onMessageCreated's marks and status, before anyone read: the event that write makes needs nothing read.
    @Test func aWriteThatChangesNoReadStateReadsNothing() throws {
        let world = ReceiptWorld()
        let name = try DocumentName(project: "p", path: "conversations/family/messages/m1")
        var old = world.message
        old["readBy"] = .array([.string("alice")])
        var new = old
        old["heraldUnread"] = nil
        new["status"] = .string("sent")
        let change = DocumentChange(
            eventID: "e", kind: .updated, time: Timestamp(seconds: 20), document: name,
            oldDocument: FirestoreDocument(name: name, fields: old), newDocument: FirestoreDocument(name: name, fields: new))
        let (plan, steps) = OnReadReceipt(schema: world.schema).plan(for: change, given: DocumentsRead())
        #expect(plan.decision == .skip(reason: "read and delivered state unchanged"))
        #expect(steps.isEmpty, "\(steps)")
    }

    /// onMessageCreated's "sent" landed after a receipt made the message "read" (the chaos test found
    /// c6/m36 left "sent", read by everyone): that write's event moves the status on again.
    @Test func aStatusSetBackUnderItsReadersIsMovedOnAgain() throws {
        var world = ReceiptWorld()
        world.message["readBy"] = .array([.string("alice"), .string("bob"), .string("carol")])
        world.message["heraldUnread"] = nil
        var before = world.message
        before["status"] = .string("read")
        world.previous = before
        #expect(Self.statusWritten(try world.plan()) == .string("read"))
    }

    @Test func aReadBeforeTheMessageWasCountedIsNotCountedDown() throws {
        var world = ReceiptWorld()
        world.message["heraldUnread"] = nil  // onMessageCreated has not run yet; it will not count bob
        #expect(try world.plan().decision == .skip(reason: "read and delivered state unchanged"))
    }

    @Test func statusNeverMovesBackAndDeliveredNeedsEveryRecipient() throws {
        var world = ReceiptWorld()
        world.message["status"] = .string("read")
        world.message["heraldUnread"] = nil
        #expect(try world.plan().decision == .skip(reason: "read and delivered state unchanged"))
        var delivered = ReceiptWorld()
        delivered.message["heraldUnread"] = nil
        delivered.message["deliveredTo"] = .array([.string("carol")])
        #expect(Self.statusWritten(try delivered.plan()) == .string("delivered"))
    }

    @Test func prd000KeepsAReadByCountForGroupsThatNeverGoesDown() throws {
        var world = ReceiptWorld()
        world.schema = Schema.presets["prd000"]!
        world.conversation = ["participants": .array([.string("alice"), .string("bob"), .string("carol")]), "isGroup": .boolean(true)]
        let plan = try world.plan()
        let message = try #require(plan.allWrites.first { $0.document.path.hasSuffix("/m1") })
        #expect(message.transforms == [FieldTransform(FieldPath("readCount"), .maximum(.integer(1)))])
        #expect(message.precondition == .exists(true), "an older version's count can only leave a newer one as it is")
    }
}

/// An unsent (deleted) message: whoever it still counted as unread is uncounted, once, from its marks as it was.
@Suite struct MessageDeletionTests {
    func plan(of message: [String: FirestoreValue]?, _ world: ReceiptWorld = ReceiptWorld()) throws -> (Plan, [DocumentName]) {
        let function = OnReadReceipt(schema: world.schema)
        let messageName = try DocumentName(project: "p", path: "conversations/family/messages/m1")
        let conversationName = try DocumentName(project: "p", path: "conversations/family")
        let change = DocumentChange(
            eventID: "e", kind: .deleted, time: Timestamp(seconds: 30), document: messageName,
            oldDocument: message.map { FirestoreDocument(name: messageName, fields: $0, updateTime: Timestamp(seconds: 20)) })
        var read = DocumentsRead(found: [conversationName: FirestoreDocument(name: conversationName, fields: world.conversation)])
        let wanted = function.plan(for: change, given: read).steps.flatMap(\.documents)
        for (id, fields) in world.users {
            let name = try DocumentName(project: "p", path: "users/\(id)")
            read.found[name] = FirestoreDocument(name: name, fields: fields, updateTime: Timestamp(seconds: 5))
        }
        return (function.plan(for: change, given: read).plan, wanted)
    }

    @Test func theRecipientsStillCountedAreUncounted() throws {
        let world = ReceiptWorld()
        let (plan, wanted) = try plan(of: world.message)
        // Bob read it: his read's own event counts him down (with a receipt), whenever it comes; carol is uncounted here.
        #expect(wanted.map(\.path) == ["users/carol"])
        let conversation = try #require(plan.allWrites.first { $0.document.path == "conversations/family" })
        #expect(
            conversation.transforms == [
                FieldTransform(FieldPath("unreadCount", "carol"), .increment(.integer(-1))),
                FieldTransform(FieldPath("unreadCount", "carol"), .maximum(.integer(0))),
            ])
        #expect(plan.allWrites.filter { $0.document.path.hasPrefix("badges/") }.count == 1)
        #expect(plan.allWrites.first { $0.document.path.contains("/m1") } == nil, "the message is gone: nothing to write to it")
        #expect(plan.pushes.map(\.token) == ["c-phone"])
        #expect(plan.pushes.allSatisfy { $0.content["notification"] == nil })
        #expect(plan.pushes.allSatisfy { $0.content["data"]?["reason"] == "deleted" && $0.content["data"]?["messageId"] == "m1" })
    }

    /// A message unsent in a group of 300 that nobody had read: each of the 299 is uncounted in a group
    /// of their own (one write of 598 transforms on the conversation was refused as a whole, every retry).
    @Test func anUnreadMessageUnsentInALargeGroupIsUncountedPersonByPerson() throws {
        var world = ReceiptWorld()
        let members = (0..<300).map { "u\($0)" }
        world.conversation["members"] = .array(members.map { .string($0) })
        world.users = Dictionary(uniqueKeysWithValues: members.map { ($0, ["fcmTokens": .array([.string("tok-\($0)")]), "unreadTotal": .integer(1)]) })
        var message = world.message
        message["senderId"] = .string("u0")
        message["readBy"] = .array([.string("u0")])
        message["heraldUnread"] = .map(Dictionary(uniqueKeysWithValues: members.dropFirst().map { ($0, FirestoreValue.boolean(true)) }))
        let (plan, _) = try plan(of: message, world)
        #expect(plan.decision == .apply)
        #expect(plan.writes.count == 0)
        #expect(plan.groups.count == 299)
        #expect(plan.groups.joined().allSatisfy { $0.transforms.count <= 3 }, "no write grows with the group")
        #expect(plan.pushes.count == 299)
        let conversation = try #require(plan.allWrites.first { $0.document.path == "conversations/family" })
        #expect(conversation.transforms.count == 2 * 299)
    }

    /// The marks are any client's to write: one naming a stranger lowers no stranger's badge. Someone who
    /// left after being counted (the conversation still counts for them) is uncounted.
    @Test func aMarkNamingAStrangerUncountsNobodyButTheCounted() throws {
        var world = ReceiptWorld()
        world.conversation["unreadCount"] = .map(["dave": .integer(2), "carol": .integer(1)])
        world.users["victim"] = ["fcmTokens": .array([.string("v-phone")]), "unreadTotal": .integer(4)]
        world.users["dave"] = ["fcmTokens": .array([.string("d-phone")]), "unreadTotal": .integer(2)]
        var message = world.message
        message["heraldUnread"] = .map(["carol": .boolean(true), "victim": .boolean(true), "dave": .boolean(true)])
        let (plan, _) = try plan(of: message, world)
        #expect(Set(plan.allWrites.map(\.document.path)).isSuperset(of: ["badges/carol", "badges/dave"]))
        #expect(!plan.allWrites.contains { $0.document.path.contains("victim") })
        #expect(Set(plan.pushes.map(\.token)) == ["c-phone", "d-phone"])
    }

    @Test func aMessageNobodyStillCountedChangesNothing() throws {
        var message = ReceiptWorld().message
        message["heraldUnread"] = .map(["bob": .boolean(true)])
        message["senderId"] = .string("bob")  // a sender's own mark never counts
        #expect(try plan(of: message).0.decision == .skip(reason: "the deleted message counted nobody as unread"))
        message["heraldUnread"] = nil
        #expect(try plan(of: message).0.decision == .skip(reason: "the deleted message counted nobody as unread"))
        #expect(try plan(of: nil).0.decision == .skip(reason: "the deletion event carries no data: whom the message counted is unknown"))
    }
}
