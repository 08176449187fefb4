import ChatFunctions
import FirestoreEvents
import FirestoreModel
import GoogleClients
import HTTPTypes
import HeraldCore
import HeraldHTTPClient
import HeraldRuntime
import HeraldTesting
import Synchronization
import Testing
import WireFormats

/// A redelivery whose plan is a skip because of what the first delivery's commit did (or what changed
/// after it) must still finish that delivery's work. onReadReceipt's first commit holds the receipt that
/// makes a read count down once, so the plan a redelivery makes finds it and has nothing left to write:
/// the pushes that commit owed must still go out when a transient failure kept one back (the chaos test
/// found a phone left showing badge 1 after its user had read everything), and its ledger parts be applied.
@Suite(.serialized) struct RedeliveryAfterCommitTests {
    static let project = "herald-test"
    static func name(_ path: String) -> DocumentName { try! DocumentName(project: project, path: path) }
    static let conversation = name("conversations/family")
    static let message = name("conversations/family/messages/m1")
    static let receipt = name("conversations/family/messages/m1/heraldReads/bob")

    /// A group of alice and `others`, one message from alice counted unread for each of them; bob (two
    /// devices) and carol have user documents and badges, the others none.
    static func documents(others: [String], unread: Int64 = 1) -> [Write] {
        [
            Write(
                .update(
                    conversation,
                    fields: [
                        "members": .array((["alice"] + others).map { .string($0) }), "isGroup": .boolean(true), "name": .string("Family"),
                        "unreadCount": .map(Dictionary(uniqueKeysWithValues: others.map { ($0, .integer(unread)) })),
                    ], mask: nil)),
            Write(.update(name("users/bob"), fields: ["fcmTokens": .array([.string("b-phone"), .string("b-ipad")])], mask: nil)),
            Write(.update(name("users/carol"), fields: ["fcmTokens": .array([.string("c-phone")])], mask: nil)),
            Write(.update(name("badges/bob"), fields: ["unreadTotal": .integer(1)], mask: nil)),
            Write(.update(name("badges/carol"), fields: ["unreadTotal": .integer(1)], mask: nil)),
        ]
    }

    /// `readers` read the message in one write: the update event with both versions, as Eventarc delivers it.
    static func read(by readers: [String], others: [String], _ firestore: FirestoreClient) async throws -> EventRequest {
        let fields: [String: FirestoreValue] = [
            "senderId": .string("alice"), "text": .string("Dinner at 6pm"), "status": .string("sent"),
            "readBy": .array((["alice"] + readers).map { .string($0) }),
            "heraldUnread": .map(Dictionary(uniqueKeysWithValues: others.map { ($0, .boolean(true)) })),
        ]
        let written = try await firestore.commit([Write(.update(message, fields: fields, mask: nil))])
        var before = fields
        before["readBy"] = .array([.string("alice")])
        let change = DocumentChange(
            eventID: "evt-read", kind: .updated, time: written.commitTime, document: message,
            oldDocument: FirestoreDocument(name: message, fields: before, updateTime: Timestamp(seconds: 1_795_165_200)),
            newDocument: FirestoreDocument(name: message, fields: fields, updateTime: (written.updateTimes.first ?? nil) ?? written.commitTime))
        let http = try Rooms.httpRequest(change)
        return EventRequest(headers: http.headers, body: http.body)
    }

    /// The read delivered three times; afterwards each reader's unread count must be 0 (one decrement each).
    /// - wrap: what the executor sees of Firestore. before: run after the read, before its first delivery.
    func run(
        _ fake: FakeFCM, readers: [String] = ["bob"], others: [String] = ["bob", "carol"],
        wrap: @Sendable (FirestoreClient) -> any FirestoreAPI = { $0 },
        before: @Sendable (FirestoreClient) async throws -> Void = { _ in }
    ) async throws -> [EventResponse] {
        try await deliverThreeTimes(
            OnReadReceipt(schema: Schema.presets["default"]!), fake, documents: Self.documents(others: others), wrap: wrap,
            event: { firestore in
                let request = try await Self.read(by: readers, others: others, firestore)
                try await before(firestore)
                return request
            },
            check: { firestore, log in
                let counts = try await firestore.get(Self.conversation)?["unreadCount"]?.mapValue ?? [:]
                let left = readers.filter { counts[$0] != .integer(0) }
                #expect(left.isEmpty, "every reader read their one unread message once; still counted: \(left.prefix(5)) \(log.suffix(3000))")
                #expect(try await firestore.get(Self.name("badges/bob"))?["unreadTotal"] == .integer(0))
            })
    }

    /// `documents` written to Google's emulator, then the event `event` makes delivered to `function` three
    /// times in a row; `check` looks at the store after (with the log).
    func deliverThreeTimes<Function: EventFunction>(
        _ function: Function, _ fake: FakeFCM, documents: [Write], wrap: @Sendable (FirestoreClient) -> any FirestoreAPI,
        event: @Sendable (FirestoreClient) async throws -> EventRequest, check: @Sendable (FirestoreClient, String) async throws -> Void
    ) async throws -> [EventResponse] {
        guard GoogleFirestoreEmulator.isInstalled else {
            try skipTest("Google's Firestore emulator is not installed at \(GoogleFirestoreEmulator.launcher)")
        }
        let answers = ResponsesSeen()
        let log = RecordedLog()
        try await GoogleFirestoreEmulator.run { host in
            try await withTestHTTPServer(fake.router) { fcmPort in
                let firestore = FirestoreClient(project: Self.project, endpoint: "http://\(host)", credentials: EmulatorCredentials(), httpClient: .shared)
                let fcm = FCMClient(
                    project: Self.project, endpoint: "http://127.0.0.1:\(fcmPort)", credentials: EmulatorCredentials(), httpClient: .shared, retry: .none)
                _ = try await firestore.commit(documents)
                let logger = log.logger(Function.name)
                let gateway = ExactlyOnceExecutor(firestore: wrap(firestore), fcm: fcm, functionName: Function.name, dryRun: false, logger: logger)
                let processor = EventProcessor(function: function, gateway: gateway)
                let request = try await event(firestore)
                for _ in 0..<3 { answers.append(await processor.process(request, logger: logger)) }
                try await check(firestore, log.text)
            }
        }
        return answers.all
    }

    @Test func aSilentPushThatFailedIsSentWhenTheReadIsDeliveredAgain() async throws {
        let fake = FakeFCM { token, attempt in
            token == "b-ipad" && attempt == 1
                ? FakeFCM.error(.tooManyRequests, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", retryAfter: "1") : FakeFCM.ok(token)
        }
        let answers = try await run(fake)
        #expect(answers.map(\.status) == [429, 200, 200], "\(answers.map(\.body))")
        #expect(answers[1].report?.outcome == .applied)
        #expect(answers[2].report?.outcome == .duplicate)
        #expect(fake.attempts.withLock { $0 } == ["b-phone": 1, "b-ipad": 2])
        let badges = fake.bodies.withLock { $0 }.compactMap { $0["message"]?["apns"]?["payload"]?["aps"]?["badge"] }
        #expect(badges.allSatisfy { $0 == 0 }, "\(badges)")
    }

    /// Another event counted bob down first (its receipt is there, this event's ledger entry is not):
    /// this event writes and sends nothing.
    @Test func aReadAnotherEventCountedDownSendsNothing() async throws {
        let fake = FakeFCM()
        let answers = try await run(
            fake,
            before: { firestore in
                _ = try await firestore.commit([
                    Write(.update(Self.receipt, fields: [:], mask: nil)),
                    Write(.transform(Self.conversation), transforms: [FieldTransform(FieldPath("unreadCount", "bob"), .increment(.integer(-1)))]),
                    Write(.transform(Self.name("badges/bob")), transforms: [FieldTransform(FieldPath("unreadTotal"), .increment(.integer(-1)))]),
                ])
            })
        #expect(answers.map(\.status) == [200, 200, 200])
        #expect(answers.allSatisfy { $0.report?.outcome == .skipped(reason: "its readers are counted down already") }, "\(answers.map(\.body))")
        #expect(answers.allSatisfy { $0.body["pushes"] == 0 && $0.report?.plan.pushes.isEmpty == true }, "no push is reported that was not sent")
        #expect(fake.attempts.withLock { $0 }.isEmpty)
    }

    /// 300 readers at once: their receipts are in the first commit, the decrements that do not fit beside
    /// them in ledger parts. A part that failed is applied when the read is delivered again.
    @Test func aLedgerPartThatFailedIsAppliedWhenTheReadIsDeliveredAgain() async throws {
        let readers = ["bob"] + (0..<299).map { "r\($0)" }
        let answers = try await run(FakeFCM(), readers: readers, others: readers, wrap: { FailingFirstPartFirestore($0) })
        #expect(answers.map(\.status) == [503, 200, 200], "\(answers.map(\.body))")
        #expect(answers.last?.report?.outcome == .duplicate)
    }

    /// A message to 600: the first commit counts some of them, ledger parts the rest; a part failed, and
    /// the sender unsent the message before the event came again. The redelivery announces nothing, but
    /// applies the parts, so that the deletion's own event (which uncounts everyone the message marked)
    /// finds every count it takes back.
    @Test func aMessageUnsentAfterItsFirstCommitStillHasItsLedgerPartsApplied() async throws {
        let others = ["bob"] + (0..<599).map { "r\($0)" }
        let created = Self.name("conversations/family/messages/m2")
        let fake = FakeFCM()
        let answers = try await deliverThreeTimes(
            OnMessageCreated(schema: Schema.presets["default"]!), fake, documents: Self.documents(others: others, unread: 0),
            wrap: { FailingFirstPartFirestore($0, then: { _ = try await $0.commit([Write(.delete(created))]) }) },
            event: { firestore in
                let fields: [String: FirestoreValue] = ["senderId": .string("alice"), "text": .string("oops")]
                let written = try await firestore.commit([Write(.update(created, fields: fields, mask: nil))])
                let change = DocumentChange(
                    eventID: "evt-created", kind: .created, time: written.commitTime, document: created,
                    newDocument: FirestoreDocument(name: created, fields: fields, createTime: written.commitTime, updateTime: written.commitTime))
                let http = try Rooms.httpRequest(change)
                return EventRequest(headers: http.headers, body: http.body)
            },
            check: { firestore, log in
                let counts = try await firestore.get(Self.conversation)?["unreadCount"]?.mapValue ?? [:]
                let uncounted = others.filter { counts[$0] != .integer(1) }
                #expect(uncounted.isEmpty, "every recipient counted once; not: \(uncounted.prefix(5)) \(log.suffix(3000))")
            })
        #expect(answers.map(\.status) == [503, 200, 200], "\(answers.map(\.body))")
        #expect(answers[1].report?.outcome == .applied)
        #expect(fake.attempts.withLock { $0 }.isEmpty, "an unsent message is not announced")
    }
}

/// Fails the first commit that applies a ledger part (the mark `state: applied` beside its writes),
/// after running `then` (what happens in the store before the event comes again).
final class FailingFirstPartFirestore: ForwardingFirestore {
    let inner: FirestoreClient
    let failed = FirstTime()
    let then: @Sendable (FirestoreClient) async throws -> Void
    init(_ inner: FirestoreClient, then: @escaping @Sendable (FirestoreClient) async throws -> Void = { _ in }) {
        self.inner = inner
        self.then = then
    }
    func commit(_ writes: [Write], transaction: String?) async throws -> FirestoreClient.CommitResult {
        let appliesAPart = writes.contains {
            if case .update(_, _, let mask) = $0.operation { mask == [FieldPath("state"), FieldPath("writes")] } else { false }
        }
        if appliesAPart, failed.take() {
            try await then(inner)
            throw GoogleAPIError(httpStatus: 503, status: .unavailable, message: "The service is currently unavailable.")
        }
        return try await inner.commit(writes, transaction: transaction)
    }
}

/// The answers of one run's deliveries, in order.
final class ResponsesSeen: Sendable {
    private let seen = Mutex<[EventResponse]>([])
    func append(_ response: EventResponse) { seen.withLock { $0.append(response) } }
    var all: [EventResponse] { seen.withLock { $0 } }
}
