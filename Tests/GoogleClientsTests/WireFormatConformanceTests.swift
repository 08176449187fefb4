import AsyncHTTPClient
import FirestoreModel
import Foundation
import GoogleClients
import HeraldCore
import HeraldHTTPClient
import HeraldTesting
import Hummingbird
import Synchronization
import Testing
import WireFormats

/// Captures every request a client sends and answers like the API would, so the bodies can be
/// checked against Google's own descriptions of them.
final class CapturingAPI: Sendable {
    let requests = Mutex<[(path: String, body: JSONValue)]>([])

    var router: Router<BasicRequestContext> {
        let router = Router()
        router.post("**") { request, _ -> Response in
            var request = request
            let body = try JSONValue(parsing: Array(buffer: try await request.collectBody(upTo: 1 << 24)))
            let path = request.uri.path
            self.requests.withLock { $0.append((path, body)) }
            let answer: String
            switch path.split(separator: ":").last ?? "" {
            case "batchGet", "runQuery", "runAggregationQuery": answer = "[]"
            case "beginTransaction": answer = #"{"transaction": "dHg="}"#
            case "commit": answer = #"{"commitTime": "2026-11-20T09:00:00Z", "writeResults": []}"#
            case "send": answer = #"{"name": "projects/p/messages/1"}"#
            default: answer = "{}"
            }
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: answer)))
        }
        return router
    }
}

@Suite struct WireFormatConformanceTests {
    static func python(_ module: String) async throws -> URL { try await PythonReference.forTest(importing: module) }

    static let script = TestPaths.packageRoot.appendingPathComponent("Tests/Python/google_api_reference.py").path

    static let fullMessage = FCMMessage(
        token: "tok-1", notification: .init(title: "Family • Alice", body: "Dinner at 6pm"),
        data: ["conversationId": "c1", "messageId": "m1", "type": "text"],
        android: .init(priority: .high, collapseKey: "m1", tag: "m1", channelID: "messages", notificationCount: 3, clickAction: "OPEN_CHAT"),
        apns: .init(
            priority: 10, pushType: .alert, collapseID: "m1", alert: .init(title: "Family • Alice", body: "Dinner at 6pm"),
            badge: 3, sound: "default", threadID: "c1", mutableContent: true),
        analyticsLabel: "new_message")

    static let localizedMessage: FCMMessage = {
        let localization = FCMMessage.Localization(titleKey: "herald_mention_title", titleArguments: ["Alice", "Family"], bodyKey: "herald_body_photo")
        return FCMMessage(
            token: "tok-2", notification: .init(title: "Alice mentioned you in Family", body: "📷 Photo"),
            android: .init(priority: .high, tag: "c1", localization: localization),
            apns: .init(
                priority: 10, pushType: .alert, alert: .init(title: "Alice mentioned you in Family", body: "📷 Photo"), threadID: "c1",
                category: "HERALD_MESSAGE", localization: localization))
    }()

    @Test func everyRequestBodyConformsToGooglesDiscoveryDocuments() async throws {
        let python = try await Self.python("googleapiclient")
        let api = CapturingAPI()
        try await withTestHTTPServer(api.router) { port in
            let db = FirestoreClient(project: "p", endpoint: "http://127.0.0.1:\(port)", credentials: EmulatorCredentials(), httpClient: .shared)
            let doc = try db.name("conversations/c1")
            _ = try await db.batchGet([doc, try db.name("users/u1")], transaction: "dHg=")
            _ = try await db.commit([
                Write(
                    .update(
                        doc,
                        fields: [
                            "lastMessage": .map(["text": .string("hi"), "at": .timestamp(Timestamp(seconds: 1))]),
                            "n": .integer(1), "d": .double(.nan), "b": .bytes([1, 2]), "g": .geoPoint(latitude: 1, longitude: 2),
                            "r": .reference(doc.resourceName), "z": .null, "a": .array([.boolean(true)]),
                        ],
                        mask: [FieldPath("lastMessage"), FieldPath("unreadCount", "user.1")]),
                    transforms: [
                        FieldTransform(FieldPath("unreadCount", "bob"), .increment(.integer(1))),
                        FieldTransform(FieldPath("max"), .maximum(.double(2))), FieldTransform(FieldPath("min"), .minimum(.integer(0))),
                        FieldTransform(FieldPath("at"), .setToRequestTime),
                        FieldTransform(FieldPath("tags"), .appendMissingElements([.string("a")])),
                        FieldTransform(FieldPath("tags2"), .removeAllFromArray([.string("b")])),
                    ], precondition: .updateTime(Timestamp(seconds: 5, nanos: 1000))),
                Write(.delete(try db.name("users/u1")), precondition: .exists(true)),
                Write(.transform(try db.name("users/u2")), transforms: [FieldTransform(FieldPath("badge"), .increment(.integer(-1)))]),
            ])
            _ = try await db.beginTransaction()
            _ = try await db.beginTransaction(readOnly: true)
            try await db.rollback("dHg=")
            let query = StructuredQuery(
                collectionID: "users", allDescendants: true,
                filter: .and([
                    .field(FieldPath("status"), .equal, .string("online")), .field(FieldPath("tags"), .arrayContains, .string("x")),
                    .or([.field(FieldPath("n"), .in, .array([.integer(1), .integer(2)])), .unary(FieldPath("gone"), .isNull)]),
                    .field(FieldPath("heartbeat"), .lessThan, .timestamp(Timestamp(seconds: 9))), .field(FieldPath("k"), .notEqual, .integer(3)),
                ]), orderBy: [.init(FieldPath("heartbeat"), .descending)], startAt: .init(values: [.integer(1)], before: true),
                endAt: .init(values: [.integer(9)], before: false), offset: 1, limit: 10)
            _ = try await db.runQuery(query, parent: doc)
            _ = try await db.count(query)
            let fcm = FCMClient(project: "p", endpoint: "http://127.0.0.1:\(port)", credentials: EmulatorCredentials(), httpClient: .shared)
            _ = await fcm.send(Self.fullMessage.json)
            _ = await fcm.send(Self.localizedMessage.json)
            _ = await fcm.send(
                FCMMessage(token: "t", data: ["badge": "0"], apns: .init(priority: 5, pushType: .background, badge: 0, contentAvailable: true)).json,
                validateOnly: true)
        }
        let schemas: [(String, String, String)] = [
            (":batchGet", "firestore", "BatchGetDocumentsRequest"), (":commit", "firestore", "CommitRequest"),
            (":beginTransaction", "firestore", "BeginTransactionRequest"), (":rollback", "firestore", "RollbackRequest"),
            (":runQuery", "firestore", "RunQueryRequest"), (":runAggregationQuery", "firestore", "RunAggregationQueryRequest"),
            ("messages:send", "fcm", "SendMessageRequest"),
        ]
        let captured = api.requests.withLock { $0 }
        #expect(captured.count == 10)
        var checks: [JSONValue] = []
        for (path, body) in captured {
            let (_, apiName, schema) = try #require(schemas.first { path.hasSuffix($0.0) }, "unexpected request \(path)")
            checks.append(["api": .string(apiName), "schema": .string(schema), "body": body])
        }
        let result = try await ProcessRunner.run(python, [Self.script, "discovery"], stdin: Data(JSONValue.array(checks).serialized().utf8))
        #expect(result.status == 0, "\(result.stderr)")
        let errors = try JSONValue(parsing: result.stdout).arrayValue ?? []
        for (check, problems) in zip(checks, errors) {
            #expect(problems == [], "\(check["schema"]!): \(problems.serialized())")
        }
        // A deliberately wrong body is caught, so the checker is not vacuous.
        let wrong: JSONValue = [["api": "fcm", "schema": "SendMessageRequest", "body": ["message": ["token": "t", "android": ["prio": "high"]]]]]
        let caught = try await ProcessRunner.run(python, [Self.script, "discovery"], stdin: Data(wrong.serialized().utf8))
        #expect(caught.stdoutText.contains("android.prio: not a field"))
    }

    @Test func fcmMessagesEncodeExactlyAsFirebaseAdminDoes() async throws {
        let python = try await Self.python("firebase_admin")
        let cases: [(FCMMessage, JSONValue)] = [
            (
                Self.fullMessage,
                [
                    "token": "tok-1", "title": "Family • Alice", "body": "Dinner at 6pm", "data": ["conversationId": "c1", "messageId": "m1", "type": "text"],
                    "android": [
                        "priority": "high", "collapse_key": "m1", "tag": "m1", "channel_id": "messages", "notification_count": 3, "click_action": "OPEN_CHAT",
                    ],
                    "apns": [
                        "priority": "10", "push_type": "alert", "collapse_id": "m1", "title": "Family • Alice", "body": "Dinner at 6pm", "badge": 3,
                        "sound": "default", "thread_id": "c1", "mutable_content": true,
                    ],
                    "analytics_label": "new_message",
                ]
            ),
            (
                Self.localizedMessage,
                [
                    "token": "tok-2", "title": "Alice mentioned you in Family", "body": "📷 Photo",
                    "android": [
                        "priority": "high", "tag": "c1", "title_loc_key": "herald_mention_title", "title_loc_args": ["Alice", "Family"],
                        "body_loc_key": "herald_body_photo",
                    ],
                    "apns": [
                        "priority": "10", "push_type": "alert", "title": "Alice mentioned you in Family", "body": "📷 Photo", "thread_id": "c1",
                        "category": "HERALD_MESSAGE", "title_loc_key": "herald_mention_title", "title_loc_args": ["Alice", "Family"],
                        "loc_key": "herald_body_photo",
                    ],
                ]
            ),
            (
                FCMMessage(token: "t2", data: ["badge": "0"], apns: .init(priority: 5, pushType: .background, badge: 0, contentAvailable: true)),
                [
                    "token": "t2", "data": ["badge": "0"], "apns": ["priority": "5", "push_type": "background", "badge": 0, "content_available": true],
                ]
            ),
            (
                FCMMessage(token: "t3", notification: .init(title: "John", body: "Hey 👋"), android: .init(priority: .normal)),
                [
                    "token": "t3", "title": "John", "body": "Hey 👋", "android": ["priority": "normal"],
                ]
            ),
        ]
        let result = try await ProcessRunner.run(python, [Self.script, "fcm"], stdin: Data(JSONValue.array(cases.map(\.1)).serialized().utf8))
        #expect(result.status == 0, "\(result.stderr)")
        let encoded = try JSONValue(parsing: result.stdout).arrayValue ?? []
        #expect(encoded.count == cases.count)
        for ((message, _), reference) in zip(cases, encoded) {
            #expect(message.json == reference, "\(message.json.serialized()) vs firebase-admin \(reference.serialized())")
        }
    }
}
