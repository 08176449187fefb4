import ChatFunctions
import FirestoreEvents
import FirestoreModel
import HeraldCore
import Testing
import WireFormats

/// A group (alice, bob, carol) and one message from alice, as onMessageCreated left it.
struct ReceiptWorld {
    var schema = Schema.presets["default"]!
    var message: [String: FirestoreValue] = [
        "senderId": .string("alice"), "text": .string("Dinner at 6pm"), "status": .string("sent"),
        "readBy": .array([.string("alice"), .string("bob")]),
        "heraldUnread": .map(["bob": .boolean(true), "carol": .boolean(true)]),
    ]
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
        let change = DocumentChange(
            eventID: "e", kind: .updated, time: Timestamp(seconds: 20), document: messageName,
            oldDocument: current, newDocument: current)
        var read = DocumentsRead()
        read.found[messageName] = current
        read.found[try DocumentName(project: "p", path: "conversations/family")] =
            FirestoreDocument(name: try DocumentName(project: "p", path: "conversations/family"), fields: conversation)
        for (id, fields) in users {
            let name = try DocumentName(project: "p", path: "users/\(id)")
            read.found[name] = FirestoreDocument(name: name, fields: fields)
        }
        let (plan, steps) = function.plan(for: change, given: read)
        #expect(steps.flatMap(\.documents).isEmpty, "everything the plan reads is in this world")
        return plan
    }
}

@Suite struct OnReadReceiptTests {
    @Test func aReadCountsOnceAndClearsTheMark() throws {
        let plan = try ReceiptWorld().plan()
        let message = try #require(plan.writes.first { $0.document.path == "conversations/family/messages/m1" })
        // Bob's mark goes (masked, absent); the status stays: carol has not read it, and a group is read only when all have.
        guard case .update(_, let fields, let mask) = message.operation else {
            Issue.record("not an update")
            return
        }
        #expect(mask == [FieldPath("heraldUnread", "bob")] && fields.isEmpty)
        guard case .updateTime = message.precondition else {
            Issue.record("the message write must be conditional on its version")
            return
        }
        let conversation = try #require(plan.writes.first { $0.document.path == "conversations/family" })
        #expect(
            conversation.transforms == [
                FieldTransform(FieldPath("unreadCount", "bob"), .increment(.integer(-1))),
                FieldTransform(FieldPath("unreadCount", "bob"), .maximum(.integer(0))),
            ])
        let badge = try #require(plan.writes.first { $0.document.path == "users/bob" })
        #expect(badge.transforms.first == FieldTransform(FieldPath("unreadTotal"), .increment(.integer(-1))))
        #expect(plan.writes.first { $0.document.path == "users/carol" } == nil)
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

    @Test func theLastReaderMakesItReadAndTheChatListShowsIt() throws {
        var world = ReceiptWorld()
        world.message["readBy"] = .array([.string("alice"), .string("bob"), .string("carol")])
        world.message["heraldUnread"] = .map(["carol": .boolean(true)])
        let plan = try world.plan()
        let message = try #require(plan.writes.first { $0.document.path == "conversations/family/messages/m1" })
        guard case .update(_, let fields, _) = message.operation else {
            Issue.record("not an update")
            return
        }
        #expect(fields["status"] == .string("read"))
        let conversation = try #require(plan.writes.first { $0.document.path == "conversations/family" })
        guard case .update(_, let conversationFields, let mask) = conversation.operation else {
            Issue.record("not an update")
            return
        }
        #expect(mask == [FieldPath("lastMessage", "status")] && conversationFields["lastMessage"] == .map(["status": .string("read")]))
    }

    @Test func nothingNewIsANoOp() throws {
        var world = ReceiptWorld()
        world.message["heraldUnread"] = .map(["carol": .boolean(true)])  // bob's read already counted
        #expect(try world.plan().decision == .skip(reason: "read and delivered state unchanged"))
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
        let plan = try delivered.plan()
        guard case .update(_, let fields, _)? = plan.writes.first?.operation else {
            Issue.record("no message write")
            return
        }
        #expect(fields["status"] == .string("delivered"))
    }

    @Test func prd000KeepsAReadByCountForGroups() throws {
        var world = ReceiptWorld()
        world.schema = Schema.presets["prd000"]!
        world.conversation = ["participants": .array([.string("alice"), .string("bob"), .string("carol")]), "isGroup": .boolean(true)]
        let plan = try world.plan()
        guard case .update(_, let fields, _)? = plan.writes.first?.operation else {
            Issue.record("no message write")
            return
        }
        #expect(fields["readCount"] == .integer(1))
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
            read.found[name] = FirestoreDocument(name: name, fields: fields)
        }
        return (function.plan(for: change, given: read).plan, wanted)
    }

    @Test func theRecipientsStillCountedAreUncounted() throws {
        let world = ReceiptWorld()
        let (plan, wanted) = try plan(of: world.message)
        // Bob read it but onReadReceipt had not counted it yet (his mark is there): both marks go down.
        #expect(wanted.map(\.path) == ["users/bob", "users/carol"])
        let conversation = try #require(plan.writes.first { $0.document.path == "conversations/family" })
        #expect(
            conversation.transforms
                == ["bob", "carol"].flatMap {
                    [
                        FieldTransform(FieldPath("unreadCount", $0), .increment(.integer(-1))),
                        FieldTransform(FieldPath("unreadCount", $0), .maximum(.integer(0))),
                    ]
                })
        #expect(plan.writes.filter { $0.document.path.hasPrefix("users/") }.count == 2)
        #expect(plan.writes.first { $0.document.path.hasSuffix("/m1") } == nil, "the message is gone: nothing to write to it")
        #expect(plan.pushes.map(\.token) == ["b-phone", "b-ipad", "c-phone"])
        #expect(plan.pushes.allSatisfy { $0.content["notification"] == nil })
        #expect(plan.pushes.allSatisfy { $0.content["data"]?["reason"] == "deleted" && $0.content["data"]?["messageId"] == "m1" })
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
