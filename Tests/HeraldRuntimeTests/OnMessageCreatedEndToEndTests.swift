import AsyncHTTPClient
import ChatFunctions
import FirestoreEvents
import FirestoreModel
import Foundation
import GoogleClients
import HeraldCore
import HeraldHTTPClient
import HeraldRuntime
import HeraldTesting
import Logging
import Synchronization
import Testing

/// onMessageCreated against Google's Firestore emulator and a stand-in FCM, with every preset's
/// fixtures: redelivered, renamed and reordered events change nothing twice.
@Suite(.serialized) struct OnMessageCreatedEndToEndTests {
    let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }

    func deliver(_ fixture: String, id: String? = nil, to processor: EventProcessor<OnMessageCreated>) async throws -> EventResponse {
        var request = try Fixture.request(from: Array(Data(contentsOf: TestPaths.fixture(fixture))))
        if let id { request.headers["ce-id"] = id }
        return await processor.process(request, logger: logger)
    }

    @Test(arguments: ["default", "prd001", "prd004"])
    func redeliveriesWriteAndPushExactlyOnce(_ preset: String) async throws {
        guard GoogleFirestoreEmulator.isInstalled else {
            try skipTest("Google's Firestore emulator is not installed at \(GoogleFirestoreEmulator.launcher)")
        }
        let fake = FakeFCM()
        let logger = self.logger
        let (unread, badges) = try await GoogleFirestoreEmulator.run { host in
            try await withTestHTTPServer(fake.router) { fcmPort in
                let firestore = FirestoreClient(project: "herald-demo", endpoint: "http://\(host)", credentials: EmulatorCredentials(), httpClient: .shared)
                let fcm = FCMClient(project: "herald-demo", endpoint: "http://127.0.0.1:\(fcmPort)", credentials: EmulatorCredentials(), httpClient: .shared)
                let seed = try SnapshotGateway(contentsOf: TestPaths.fixture("\(preset)/documents.json").path)
                _ = try await firestore.commit(seed.documents.values.map { Write(.update($0.name, fields: $0.fields, mask: nil)) })
                let function = try OnMessageCreated(settings: FunctionSettings(schema: preset))
                let gateway = ExactlyOnceExecutor(firestore: firestore, fcm: fcm, functionName: OnMessageCreated.name, dryRun: false, logger: logger)
                let processor = EventProcessor(function: function, gateway: gateway)
                let fixture = "\(preset)/message-created.binary-protobuf.json"
                #expect(try await deliver(fixture, to: processor).report?.outcome == .applied)
                #expect(try await deliver(fixture, to: processor).report?.outcome == .duplicate)
                #expect(try await deliver("\(preset)/message-created.legacy.json", to: processor).report?.outcome == .duplicate)
                // The same write under another event id (Eventarc may do that) is caught too.
                #expect(try await deliver(fixture, id: "another-id", to: processor).report?.outcome == .duplicate)
                let conversationPath = seed.documents.keys.first { $0.segments.count == 2 && $0.collectionID != "users" && $0.collectionID != "messages" }!
                let conversation = try await firestore.get(conversationPath)
                let users = try await firestore.runQuery(StructuredQuery(collectionID: "users"))
                var badges: [String: FirestoreValue?] = [:]
                for user in users { badges[user.name.documentID] = try await firestore.storedBadge(of: user.name.documentID, schema: function.schema) }
                return (conversation?["unreadCount"]?.mapValue ?? [:], badges)
            }
        }
        let sender = ["default": "alice", "prd001": "john", "prd004": "u1"][preset]!
        #expect(!unread.isEmpty)
        for (user, count) in unread where user != sender {
            let before = ["default": ["carol": 2]][preset]?[user] ?? 0
            #expect(count == .integer(Int64(before + 1)), "\(preset) \(user)")
        }
        #expect(unread[sender] == nil || unread[sender] == .integer(0))
        for (user, badge) in badges where user != sender { #expect(badge == .integer(1), "\(preset) badge of \(user)") }
        // Every device got exactly one push.
        #expect(fake.attempts.withLock { $0 }.values.allSatisfy { $0 == 1 })
        let expectedTokens = ["default": 3, "prd001": 0, "prd004": 2][preset]!
        #expect(fake.attempts.withLock { $0.count } == expectedTokens)
    }

    @Test func eventsDeliveredOutOfOrderLeaveTheNewestMessageLast() async throws {
        guard GoogleFirestoreEmulator.isInstalled else { return }
        let fake = FakeFCM()
        let logger = self.logger
        try await GoogleFirestoreEmulator.run { host in
            try await withTestHTTPServer(fake.router) { fcmPort in
                let db = FirestoreClient(project: "p", endpoint: "http://\(host)", credentials: EmulatorCredentials(), httpClient: .shared)
                let fcm = FCMClient(project: "p", endpoint: "http://127.0.0.1:\(fcmPort)", credentials: EmulatorCredentials(), httpClient: .shared)
                let conversation = try db.name("conversations/c1")
                var seed = [
                    Write(.update(conversation, fields: ["members": .array([.string("a"), .string("b")])], mask: nil)),
                    Write(.update(try db.name("users/b"), fields: ["fcmTokens": .array([.string("tok-b")])], mask: nil)),
                ]
                var changes: [DocumentChange] = []
                for (i, text) in ["older", "newer"].enumerated() {
                    let name = try db.name("conversations/c1/messages/m\(i)")
                    let at = Timestamp(seconds: 1_795_165_200 + Int64(i) * 10)
                    let doc = FirestoreDocument(
                        name: name, fields: ["senderId": .string("a"), "text": .string(text), "timestamp": .timestamp(at)],
                        createTime: at, updateTime: at)
                    seed.append(Write(.update(name, fields: doc.fields, mask: nil)))
                    changes.append(DocumentChange(eventID: "e\(i)", kind: .created, time: at, document: name, newDocument: doc))
                }
                _ = try await db.commit(seed)
                let gateway = ExactlyOnceExecutor(firestore: db, fcm: fcm, functionName: OnMessageCreated.name, dryRun: false, logger: logger)
                let processor = EventProcessor(function: OnMessageCreated(schema: Schema.presets["default"]!), gateway: gateway)
                for change in [changes[1], changes[0], changes[0], changes[1]] {
                    let http = try Rooms.httpRequest(change)
                    #expect(await processor.process(EventRequest(headers: http.headers, body: http.body), logger: logger).status == 200)
                }
                let stored = try #require(try await db.get(conversation))
                #expect(stored.value(at: ["lastMessage", "text"]) == .string("newer"))
                #expect(stored.value(at: ["lastMessage", "messageId"]) == .string("m1"))
                #expect(stored["unreadCount"] == .map(["b": .integer(2)]))
                #expect(try await db.storedBadge(of: "b", schema: Schema.presets["default"]!) == .integer(2))
            }
        }
        #expect(fake.attempts.withLock { $0 } == ["tok-b": 2])
    }
}
