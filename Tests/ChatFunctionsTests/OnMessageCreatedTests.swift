import ChatFunctions
import FirestoreEvents
import FirestoreModel
import Foundation
import HeraldCore
import HeraldRuntime
import HeraldTesting
import Logging
import Testing
import WireFormats

/// Plans from a preset's fixtures: the message event and the documents snapshot, through the runtime's
/// own read rounds (the snapshot gateway writes nothing).
func planFromFixtures(_ preset: String, scenario: String = "message-created") async throws -> (Plan, DocumentsRead) {
    let function = try OnMessageCreated(settings: FunctionSettings(schema: preset))
    let request = try Fixture.request(from: Array(Data(contentsOf: TestPaths.fixture("\(preset)/\(scenario).binary-protobuf.json"))))
    let gateway = try SnapshotGateway(contentsOf: TestPaths.fixture("\(preset)/documents.json").path)
    let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
    let report = try #require(await EventProcessor(function: function, gateway: gateway).process(request, logger: logger).report)
    return (report.plan, report.documentsRead)
}

extension PushMessage {
    var title: String? { content["notification"]?["title"]?.stringValue }
    var body: String? { content["notification"]?["body"]?.stringValue }
    var summary: String? { content["data"]?["summary"]?.stringValue }
    var badge: JSONValue? { content["apns"]?["payload"]?["aps"]?["badge"] }
}

extension Plan {
    func write(to path: String) -> Write? { allWrites.first { $0.document.path == path } }
}

@Suite struct OnMessageCreatedPresetTests {
    @Test func defaultGroupMessage() async throws {
        let (plan, read) = try await planFromFixtures("default")
        #expect(read.found.count == 5)  // the conversation, the message as it is now, and three members
        #expect(plan.pushes.map(\.token) == ["tok-bob-phone", "tok-bob-ipad", "tok-carol-phone"])
        for push in plan.pushes {
            #expect(push.title == nil)
            #expect(push.body == "Family • Alice: Dinner at 6pm")
            #expect(push.summary == "Family • Alice: Dinner at 6pm")
            #expect(push.content["data"]?["conversationId"] == "c-family")
            #expect(push.content["apns"]?["payload"]?["aps"]?["thread-id"] == "c-family")
            #expect(push.content["apns"]?["headers"]?["apns-collapse-id"] == "m-1001")
            #expect(push.content["android"]?["priority"] == "high")
        }
        let conversation = try #require(plan.write(to: "conversations/c-family")?.json)
        #expect(conversation["update"]?["fields"]?["lastMessage"]?["mapValue"]?["fields"]?["text"] == ["stringValue": "Dinner at 6pm"])
        #expect(
            conversation["updateTransforms"] == [
                ["fieldPath": "unreadCount.bob", "increment": ["integerValue": "1"]],
                ["fieldPath": "unreadCount.carol", "increment": ["integerValue": "1"]],
            ])
        #expect(plan.write(to: "users/alice") == nil)  // never the sender's badge
        #expect(plan.write(to: "badges/bob")?.transforms.map(\.operation) == [.maximum(.integer(0)), .increment(.integer(1))])
        #expect(plan.write(to: "users/bob") == nil)  // the badge is apart: no tokenCleanup for it
        let message = plan.write(to: "conversations/c-family/messages/m-1001")?.json["update"]?["fields"]
        #expect(message?["status"] == ["stringValue": "sent"])
        // Each recipient counted is marked on the message, for onReadReceipt to count the read exactly once.
        #expect(message?["heraldUnread"] == ["mapValue": ["fields": ["bob": ["booleanValue": true], "carol": ["booleanValue": true]]]])
    }

    @Test func prd000OneToOne() async throws {
        let (plan, _) = try await planFromFixtures("prd000")
        // PRD 000 keeps no push token on the server: the writes happen, no push goes.
        #expect(plan.pushes.isEmpty)
        #expect(plan.write(to: "conversations/c-42")?.json["updateTransforms"] == [["fieldPath": "unreadCount.`u-ben`", "increment": ["integerValue": "1"]]])
        // The message is already "sent": its status is left alone; only the unread mark is added.
        #expect(
            plan.write(to: "conversations/c-42/messages/m-7")?.json["update"]?["fields"] == [
                "heraldUnread": ["mapValue": ["fields": ["u-ben": ["booleanValue": true]]]]
            ])
    }

    @Test func prd001TopLevelMessages() async throws {
        let (plan, read) = try await planFromFixtures("prd001")
        #expect(read.found.keys.contains { $0.path == "conversations/conv-9" })
        let conversation = try #require(plan.write(to: "conversations/conv-9")?.json)
        #expect(conversation["update"]?["fields"]?["lastMessage"] == ["timestampValue": "2026-11-20T09:00:00Z"])
        #expect(conversation["update"]?["fields"]?["lastMessageText"] == ["stringValue": "Hey"])
        #expect(plan.write(to: "messages/msg-555")?.json["update"]?["fields"]?["status"] == ["stringValue": "sent"])
    }

    @Test func prd004GroupWithSingleTokens() async throws {
        let (plan, _) = try await planFromFixtures("prd004")
        #expect(plan.pushes.map(\.token) == ["tok-u2", "tok-u3"])
        #expect(plan.pushes.allSatisfy { $0.title == "Alice in Family" && $0.body == "Dinner at 6pm 🍝" })
        let fields = try #require(plan.write(to: "chats/chat-77")?.json["update"]?["fields"])
        #expect(fields["lastMessageText"] == ["stringValue": "Dinner at 6pm 🍝"])
        #expect(fields["lastMessageSenderID"] == ["stringValue": "u1"])
        #expect(fields["lastMessageTimestamp"] == ["timestampValue": "2026-11-20T09:00:00Z"])
        #expect(fields["updatedAt"] == ["timestampValue": "2026-11-20T09:00:00Z"])
        #expect(plan.write(to: "chats/chat-77/messages/msg-1")?.json["update"]?["fields"]?["deliveryStatus"] == ["stringValue": "sent"])
        // A dead single token is cleared only if the user document is unchanged since it was read.
        guard case .updateTime = plan.pushes.first?.removal?.precondition else {
            Issue.record("removal must be conditional")
            return
        }
    }
}

/// Hand-built worlds for the edge cases.
struct World {
    var schema = Schema.presets["default"]!
    var conversation: [String: FirestoreValue] = ["members": .array([.string("alice"), .string("bob")]), "isGroup": .boolean(false)]
    var users: [String: [String: FirestoreValue]] = [
        "alice": ["displayName": .string("Alice"), "fcmTokens": .array([.string("a1")])],
        "bob": ["displayName": .string("Bob"), "fcmTokens": .array([.string("b1")]), "unreadTotal": .integer(4)],
    ]
    var message: [String: FirestoreValue] = ["senderId": .string("alice"), "text": .string("Hey"), "timestamp": .timestamp(Timestamp(seconds: 1_795_165_200))]
    var now = Timestamp(seconds: 1_795_165_201)
    /// When the conversation document was last written, as Firestore keeps it (none: not checked).
    var conversationUpdateTime: Timestamp?
    var viewingStaleAfter = OnMessageCreated.viewingFreshness
    /// When Firestore recorded the users' documents' last writes: a minute before the message.
    var usersUpdateTime = Timestamp(seconds: 1_795_165_140)
    /// Token documents, for a schema that keeps tokens in a subcollection of the users.
    var tokenDocuments: [FirestoreDocument] = []

    func plan() throws -> Plan {
        let conversationName = try DocumentName(project: "p", path: "conversations/c1")
        let messageName = try DocumentName(project: "p", path: "conversations/c1/messages/m1")
        var read = DocumentsRead()
        read.found[conversationName] = FirestoreDocument(name: conversationName, fields: conversation, updateTime: conversationUpdateTime)
        for (id, fields) in users {
            let name = try DocumentName(project: "p", path: "users/\(id)")
            read.found[name] = FirestoreDocument(name: name, fields: fields, updateTime: usersUpdateTime)
        }
        let change = DocumentChange(
            eventID: "e", kind: .created, time: now, document: messageName,
            newDocument: FirestoreDocument(name: messageName, fields: message, createTime: now))
        read.found[messageName] = change.newDocument
        if let collection = (schema.tokens.layout as? TokenSubcollection)?.collection {
            for id in users.keys {
                let path = CollectionPath(parent: try DocumentName(project: "p", path: "users/\(id)"), collectionID: collection)
                read.collections[path] = tokenDocuments.filter { $0.name.parent == path.parent }
            }
        }
        return OnMessageCreated(schema: schema, viewingStaleAfter: viewingStaleAfter).plan(for: change, given: read).plan
    }
}

@Suite struct OnMessageCreatedEdgeCaseTests {
    @Test func oneToOneLineNamesTheSender() throws {
        let plan = try World().plan()
        #expect(plan.pushes.map(\.body) == ["Alice: Hey"])
        #expect(plan.pushes.first?.content["data"]?["summary"] == "Alice: Hey")
        #expect(plan.pushes.first?.badge == 5)  // bob had 4 unread
        #expect(plan.pushes.first?.content["android"]?["notification"]?["notification_count"] == 5)
    }

    /// The presets keep the badge apart (`badgeCollection`): counted in the user's own document there,
    /// made with the first count, and the push carries what that commit leaves. A badge still in the user
    /// document from before moves in the same commit: the badge document starts from it, and the field is
    /// deleted on the condition that the user document is as read (a plan that saw it after another event
    /// moved it is planned again, so it is never counted twice).
    @Test func aBadgeKeptApartIsCountedInItsOwnDocumentAndMovesThere() throws {
        let badge = try DocumentName(project: "p", path: "badges/bob")
        let field = FieldPath("unreadTotal")
        var moved = World()  // bob's user document holds unreadTotal 4
        let movePlan = try moved.plan()
        let moveWrites = movePlan.writes + movePlan.groups.joined()
        let write = try #require(moveWrites.first { $0.document == badge })
        #expect(write.operation == .update(badge, fields: [:], mask: []))
        #expect(write.precondition == nil)
        #expect(
            write.transforms == [
                FieldTransform(field, .maximum(.integer(4))), FieldTransform(field, .maximum(.integer(0))), FieldTransform(field, .increment(.integer(1))),
            ])
        let user = try DocumentName(project: "p", path: "users/bob")
        let removal = try #require(moveWrites.first { $0.document == user })
        #expect(removal.operation == .update(user, fields: [:], mask: [field]))
        #expect(removal.precondition == .updateTime(World().usersUpdateTime))
        #expect(movePlan.pushes.map(\.count) == [CountSource(document: badge, field: field)])
        #expect(movePlan.pushes.first?.badge == 5)

        moved.users["bob"]?["unreadTotal"] = nil  // already moved: the user document is not written
        let plan = try moved.plan()
        let writes = plan.writes + plan.groups.joined()
        #expect(!writes.contains { $0.document.path.hasPrefix("users/") }, "\(writes)")
        #expect(
            writes.first { $0.document == badge }?.transforms == [FieldTransform(field, .maximum(.integer(0))), FieldTransform(field, .increment(.integer(1)))])
    }

    /// With `"badgeCollection": null` the badge is a field of the user document, which must exist.
    @Test func aBadgeInTheUserDocumentIsCountedThere() throws {
        var world = World()
        world.schema.badgeCollection = nil
        let plan = try world.plan()
        let user = try DocumentName(project: "p", path: "users/bob")
        let write = try #require((plan.writes + plan.groups.joined()).first { $0.document == user })
        #expect(write.operation == .transform(user) && write.precondition == .exists(true))
        #expect(write.transforms.map(\.operation) == [.maximum(.integer(0)), .increment(.integer(1))])
        #expect(plan.pushes.map(\.count) == [CountSource(document: user, field: FieldPath("unreadTotal"))])
        #expect(plan.pushes.first?.badge == 5)
    }

    @Test func skipsWithReasons() throws {
        var noConversation = World()
        noConversation.conversation = [:]
        #expect(try noConversation.plan().decision == .skipUnlessStarted(reason: "suspicious: sender alice is not a member of conversations/c1"))
        var stranger = World()
        stranger.message["senderId"] = .string("mallory")
        #expect(try stranger.plan().decision == .skipUnlessStarted(reason: "suspicious: sender mallory is not a member of conversations/c1"))
        var anonymous = World()
        anonymous.message["senderId"] = nil
        #expect(try anonymous.plan().decision == .skipUnlessStarted(reason: "the message has no senderId"))
    }

    @Test func tokensInASubcollectionAreListedAndPushedTo() async throws {
        var schema = Schema.presets["default"]!
        schema.tokens = .subcollection(collection: "tokens")
        func document(_ path: String, _ fields: [String: FirestoreValue] = [:]) throws -> FirestoreDocument {
            FirestoreDocument(name: try DocumentName(project: "p", path: path), fields: fields, updateTime: Timestamp(seconds: 7))
        }
        let message = try document("conversations/c1/messages/m1", ["senderId": .string("alice"), "text": .string("Hey")])
        let gateway = SnapshotGateway(documents: [
            message,
            try document("conversations/c1", ["members": .array([.string("alice"), .string("bob"), .string("carol")]), "isGroup": .boolean(false)]),
            try document("users/alice"), try document("users/bob"), try document("users/carol"),
            try document("users/alice/tokens/tok-a"),
            try document("users/bob/tokens/tok-b1"), try document("users/bob/tokens/entry", ["token": .string("tok-b2")]),
            try document("users/bob/settings/tok-not-a-token"),
        ])
        let event = DecodedEvent(
            change: DocumentChange(eventID: "e", kind: .created, time: Timestamp(seconds: 9), document: message.name, newDocument: message),
            envelope: EventEnvelope(encoding: .binaryProtobuf, type: "google.cloud.firestore.document.v1.created"))
        let request = try Fixture.request(from: Array(Fixture.binary(event, json: false).serialized().utf8))
        let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        let report = try #require(await EventProcessor(function: OnMessageCreated(schema: schema), gateway: gateway).process(request, logger: logger).report)
        // Bob's two tokens (one by document id, one by its `token` field); Carol has none; never the sender's.
        #expect(report.plan.pushes.map(\.token).sorted() == ["tok-b1", "tok-b2"])
        #expect(report.plan.pushes.first { $0.token == "tok-b2" }?.removal?.document.path == "users/bob/tokens/entry")
        #expect(report.documentsRead.collections.count == 2)  // bob's and carol's, not alice's
    }

    @Test func aMissingConversationIsSkipped() throws {
        let messageName = try DocumentName(project: "p", path: "conversations/gone/messages/m1")
        let change = DocumentChange(
            eventID: "e", kind: .created, time: Timestamp(seconds: 1), document: messageName,
            newDocument: FirestoreDocument(name: messageName, fields: ["senderId": .string("a")]))
        let plan = OnMessageCreated(schema: Schema.presets["default"]!).plan(
            for: change, given: DocumentsRead(found: [messageName: change.newDocument!], missing: [messageName.parent!])
        ).plan
        #expect(plan.decision == .skipUnlessStarted(reason: "conversation conversations/gone does not exist"))
    }

    @Test func recipientsWithoutTokensOrUserDocumentsStillGetTheirWrites() throws {
        var world = World()
        world.conversation["members"] = .array([.string("alice"), .string("bob"), .string("ghost")])
        world.users["bob"]?["fcmTokens"] = nil
        let plan = try world.plan()
        #expect(plan.pushes.isEmpty)
        #expect(plan.write(to: "conversations/c1")?.transforms.count == 2)  // bob and ghost both unread
        #expect(plan.write(to: "badges/bob") != nil)
        #expect(plan.write(to: "badges/ghost") == nil)  // no user document: no badge to raise
    }

    /// Tokens are any client's to write: a user document holding 600 makes no more than ten sends per
    /// message, to the last listed (the newest).
    @Test func aUserWithThousandsOfTokensGetsTenPushes() throws {
        var world = World()
        let tokens = (0..<600).map { "tok-\($0)" }
        world.users["bob"]?["fcmTokens"] = .array(tokens.map { .string($0) })
        let plan = try world.plan()
        #expect(plan.pushes.map(\.token) == Array(tokens.suffix(10)))
    }

    /// Tokens kept as documents of a subcollection: the ten pushes go to the documents written last
    /// (their update time), not the last ten by name.
    @Test func tokensInASubcollectionArePushedNewestFirst() throws {
        var world = World()
        world.schema.tokens = .subcollection(collection: "devices")
        // device 0 written last, device 11 first: names sort the other way.
        world.tokenDocuments = try (0..<12).map { index in
            FirestoreDocument(
                name: try DocumentName(project: "p", path: "users/bob/devices/d\(index < 10 ? "0" : "")\(index)"),
                fields: ["token": .string("tok-\(index)")], updateTime: Timestamp(seconds: 100 - Int64(index)))
        }
        let plan = try world.plan()
        #expect(plan.pushes.map(\.token) == (0..<10).reversed().map { "tok-\($0)" }, "\(plan.pushes.map(\.token))")
        #expect(plan.pushes.allSatisfy { $0.userID == "bob" })
    }

    /// A badge a client stored as a double (increments keep it one) counts its whole part, in the plan
    /// and in the badge the executor reads back from the commit: never 0, never a crash for 1e300.
    @Test func aBadgeStoredAsADoubleCountsItsWholePart() throws {
        var world = World()
        world.schema.badgeCollection = nil
        world.users["bob"]?["unreadTotal"] = .double(2.5)
        #expect(try world.plan().pushes.first?.badge == 3)
        #expect(CountSource.badge(.double(3.5)) == 3)
        #expect(CountSource.badge(.double(1e300)) == Int(Int32.max))
        #expect(CountSource.badge(.double(-1e300)) == 0 && CountSource.badge(.double(.nan)) == 0)
        #expect(CountSource.badge(.string("7")) == 0)
    }

    /// PRD 000: a group without a name is "Group Chat".
    @Test func aGroupWithoutANameIsCalledGroupChat() throws {
        var world = World()
        world.conversation["isGroup"] = .boolean(true)
        #expect(try world.plan().pushes.map(\.body) == ["Group Chat • Alice: Hey"])
    }

    /// A message its client left "pending" (PRD 001's name for it) or "sending" is marked sent; one
    /// already further along is left alone.
    @Test func aPendingOrSendingMessageIsMarkedSent() throws {
        for (status, marked) in [("pending", true), ("sending", true), ("delivered", false)] {
            var world = World()
            world.message["status"] = .string(status)
            let write = try world.plan().write(to: "conversations/c1/messages/m1")?.json["update"]?["fields"]?["status"]
            #expect((write == ["stringValue": "sent"]) == marked, "\(status)")
        }
    }

    @Test func viewingRecipientsGetNoPushAndMutedOnesOnlyTheirBadge() throws {
        var viewing = World()
        viewing.users["bob"]?["viewingConversationId"] = .string("c1")
        viewing.users["bob"]?["viewingAt"] = .timestamp(Timestamp(seconds: viewing.now.seconds - 30))
        #expect(try viewing.plan().pushes.isEmpty)
        #expect(try viewing.plan().write(to: "badges/bob") != nil)  // still unread: the badge goes up
        var stale = viewing
        stale.users["bob"]?["viewingAt"] = .timestamp(Timestamp(seconds: viewing.now.seconds - 61))
        #expect(try stale.plan().pushes.count == 1)
        // An app that marks the conversation only when it opens it sets a longer HERALD_VIEWING_STALE_AFTER.
        stale.viewingStaleAfter = try OnMessageCreated(settings: FunctionSettings(environment: ["HERALD_VIEWING_STALE_AFTER": "600"])).viewingStaleAfter
        #expect(stale.viewingStaleAfter == 600)
        #expect(try stale.plan().pushes.isEmpty)
        var muted = World()
        muted.conversation["mutedBy"] = .array([.string("bob")])
        let silent = try #require(try muted.plan().pushes.first)
        #expect(silent.content["notification"] == nil && silent.content["data"]?["reason"] == "muted" && silent.badge == 5)
    }

    @Test func anOlderMessageArrivingLateNeverMovesTheLastMessageBack() throws {
        var world = World()
        world.conversation["lastMessage"] = .map(["text": .string("newer"), "timestamp": .timestamp(Timestamp(seconds: 1_795_165_300))])
        let write = try #require(try world.plan().write(to: "conversations/c1"))
        guard case .transform = write.operation else {
            Issue.record("only the unread count may change: \(write.json.serialized())")
            return
        }
        #expect(write.transforms.count == 1)
    }

    /// A time a client invents is bounded by when Firestore recorded the write: a message dated year 9999
    /// shows as sent a minute after it was stored, with a warning, and later messages still replace it.
    @Test func aMessageDatedInTheFutureIsTakenAsSentWhenStored() throws {
        var world = World()
        world.message["timestamp"] = .timestamp(Timestamp(seconds: 253_402_300_000))
        let plan = try world.plan()
        let fields = try #require(plan.write(to: "conversations/c1")?.json["update"]?["fields"]?["lastMessage"]?["mapValue"]?["fields"])
        #expect(fields["timestamp"] == ["timestampValue": .string(world.now.adding(.seconds(60)).rfc3339)])
        #expect(plan.warnings.contains { $0.contains("conversations/c1/messages/m1 timestamp") && $0.contains("after Firestore recorded") }, "\(plan.warnings)")
        // A last message some client already wrote in the future (later than the conversation's own last
        // write) is not kept over a real message.
        var forged = World()
        forged.conversationUpdateTime = Timestamp(seconds: 1_795_165_100)
        forged.conversation["lastMessage"] = .map(["text": .string("forever"), "timestamp": .timestamp(Timestamp(seconds: 253_402_300_000))])
        let replaced = try #require(try forged.plan().write(to: "conversations/c1")?.json["update"]?["fields"]?["lastMessage"]?["mapValue"]?["fields"])
        #expect(replaced["text"] == ["stringValue": "Hey"])
        // A newer last message within the clock's skew still wins over an older one arriving late.
        var newer = World()
        newer.conversationUpdateTime = Timestamp(seconds: 1_795_165_290)
        newer.conversation["lastMessage"] = .map(["text": .string("newer"), "timestamp": .timestamp(Timestamp(seconds: 1_795_165_300))])
        #expect(try newer.plan().write(to: "conversations/c1")?.json["update"]?["fields"]?["lastMessage"] == nil)
    }

    @Test func largeGroupsStayWithinOneCommit() throws {
        var world = World()
        let ids = (0..<256).map { "u\($0)" }
        world.conversation = ["members": .array(ids.map { .string($0) }), "isGroup": .boolean(true), "name": .string("Big")]
        world.users = Dictionary(uniqueKeysWithValues: ids.map { ($0, ["fcmTokens": .array([.string("t-\($0)")])]) })
        world.message["senderId"] = .string("u0")
        let plan = try world.plan()
        #expect(plan.allWrites.count == 1 + 255 + 1)
        #expect(plan.allWrites.count + 1 <= 500)  // with the ledger: one commit
        #expect(plan.pushes.count == 255)
        #expect(plan.pushes.first?.summary?.hasPrefix("Big • Someone: ") == true)
    }

    @Test func previewsCutAtEightyUserPerceivedCharacters() throws {
        let family = String(repeating: "👩‍👩‍👧", count: 100)
        let preview = Preview.of(text: family, type: nil)
        #expect(preview.count == 81)
        #expect(preview.hasSuffix("…"))
        #expect(preview.dropLast().count == 80 && preview.dropLast().allSatisfy { $0 == "👩‍👩‍👧" })
        let accents = String(repeating: "e\u{301}", count: 85)
        #expect(Preview.of(text: accents, type: nil) == String(repeating: "e\u{301}", count: 80) + "…")
        #expect(Preview.of(text: String(repeating: "a", count: 80), type: nil) == String(repeating: "a", count: 80))
        #expect(Preview.of(text: String(repeating: "a", count: 81), type: nil) == String(repeating: "a", count: 80) + "…")
        #expect(Preview.of(text: "line one\nline two", type: nil) == "line one line two")
        #expect(Preview.of(text: "", type: "image") == "📷 Photo")
        #expect(Preview.of(text: "   ", type: "voice") == "🎤 Voice message")
        #expect(Preview.of(text: nil, type: nil) == "New message")
    }
}

@Suite struct SchemaTests {
    @Test func aSchemaFileExtendsAPresetAndBadKeysAreNamed() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-schema-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        func load(_ text: String) throws -> Schema {
            let file = dir.appendingPathComponent("s\(text.hashValue).json")
            try text.write(to: file, atomically: true, encoding: .utf8)
            return try Schema.load(FunctionSettings.reading(schema: file.path))
        }
        let custom = try load(#"{"extends": "prd004", "badgeField": "badge", "tokens": {"mapKeys": "notificationTokens"}}"#)
        #expect(custom.senderIDField == "senderID")
        #expect(custom.badgeField == "badge")
        #expect(custom.tokens == .mapKeys(field: "notificationTokens"))
        #expect(custom.badgeCollection == "badges" && custom.badgePath(of: "bob") == "badges/bob")  // as in every preset
        let inUser = try load(#"{"badgeCollection": null}"#)
        #expect(inUser.badgeCollection == nil && inUser.badgePath(of: "bob") == "users/bob")
        for (text, fragment) in [
            (#"{"senderIdField": "x"}"#, "unknown key \"senderIdField\""), (#"{"textField": 3}"#, "key \"textField\""),
            (#"{"extends": "prd999"}"#, "key \"extends\""), (#"{"messagePattern": "messages/{id}"}"#, "conversationIDField"),
            (#"{"tokens": {"carrier": "x"}}"#, "key \"tokens\""), ("[]", "JSON object"),
            (#"{"badgeCollection": "users"}"#, "key \"badgeCollection\" names \"users\""), (#"{"badgeCollection": "a/b"}"#, "key \"badgeCollection\""),
            (#"{"badgeCollection": 3}"#, "a collection id (a string) or null"),
        ] {
            #expect { _ = try load(text) } throws: { "\($0)".contains(fragment) }
        }
        #expect { _ = try Schema.load("prd999") } throws: { "\($0)".contains("unknown schema") }
    }
}
