import AsyncHTTPClient
import FirestoreEvents
import FirestoreModel
import Foundation
import GoogleClients
import HTTPTypes
import HeraldCore
import HeraldHTTPClient
import HeraldRuntime
import HeraldTesting
import Logging
import Synchronization
import Testing
import WireFormats

/// The executor against Google's Firestore emulator and a stand-in FCM: exactly once out.
@Suite(.serialized) struct ExactlyOnceExecutorTests {
    let log = RecordedLog()
    var logger: Logger { log.logger("relay") }

    /// `wrap`: what the gateway sees of Firestore (the emulator's client by default).
    func withWorld(
        _ fake: FakeFCM, dryRun: Bool = false, wrap: @Sendable (FirestoreClient) -> any FirestoreAPI = { $0 },
        _ body: @Sendable (FirestoreClient, EventProcessor<RelayFunction>) async throws -> Void
    ) async throws {
        try await withWorld(fake, function: RelayFunction(), dryRun: dryRun, wrap: wrap, body)
    }

    func withWorld<Function: EventFunction>(
        _ fake: FakeFCM, function: Function, dryRun: Bool = false, wrap: @Sendable (FirestoreClient) -> any FirestoreAPI = { $0 },
        _ body: @Sendable (FirestoreClient, EventProcessor<Function>) async throws -> Void
    ) async throws {
        guard GoogleFirestoreEmulator.isInstalled else {
            try skipTest("Google's Firestore emulator is not installed at \(GoogleFirestoreEmulator.launcher)")
        }
        let logger = self.logger
        try await GoogleFirestoreEmulator.run { host in
            try await withTestHTTPServer(fake.router) { fcmPort in
                let firestore = FirestoreClient(project: "herald-test", endpoint: "http://\(host)", credentials: EmulatorCredentials(), httpClient: .shared)
                let fcm = FCMClient(
                    project: "herald-test", endpoint: "http://127.0.0.1:\(fcmPort)", credentials: EmulatorCredentials(),
                    httpClient: .shared, retry: .none)
                _ = try await firestore.commit([Write(.update(Rooms.room, fields: Rooms.snapshot.documents[Rooms.room]!.fields, mask: nil))])
                let gateway = ExactlyOnceExecutor(firestore: wrap(firestore), fcm: fcm, functionName: Function.name, dryRun: dryRun, logger: logger)
                try await body(firestore, EventProcessor(function: function, gateway: gateway))
            }
        }
    }

    func deliver(_ change: DocumentChange, to processor: EventProcessor<RelayFunction>) async throws -> EventResponse {
        let http = try Rooms.httpRequest(change)
        return await processor.process(EventRequest(headers: http.headers, body: http.body), logger: logger)
    }

    @Test func aRedeliveredEventWritesAndPushesNothingTwice() async throws {
        let fake = FakeFCM()
        try await withWorld(fake) { firestore, processor in
            let first = try await deliver(Rooms.created(text: "one"), to: processor)
            #expect(first.status == 200)
            #expect(first.report?.outcome == .applied)
            for _ in 0..<3 {
                let again = try await deliver(Rooms.created(text: "one"), to: processor)
                #expect(again.status == 200)
                #expect(again.report?.outcome == .duplicate)
            }
            let room = try await firestore.get(Rooms.room)
            #expect(room?["count"] == .integer(5))  // 4 + exactly one increment
            #expect(room?["lastText"] == .string("one"))
        }
        #expect(fake.attempts.withLock { $0 } == ["tok-a": 1, "tok-b": 1])
    }

    @Test func aPushThatFailedTransientlyIsSentOnRedeliveryAndTheOthersAreNot() async throws {
        let fake = FakeFCM { token, attempt in
            token == "tok-b" && attempt == 1 ? FakeFCM.error(.serviceUnavailable, "UNAVAILABLE", "UNAVAILABLE") : FakeFCM.ok(token)
        }
        try await withWorld(fake) { firestore, processor in
            let first = try await deliver(Rooms.created(id: "evt-flaky"), to: processor)
            #expect(first.status == 503)
            let second = try await deliver(Rooms.created(id: "evt-flaky"), to: processor)
            #expect(second.status == 200, "\(log.text)")
            #expect(try await firestore.get(Rooms.room)?["count"] == .integer(5))
            let third = try await deliver(Rooms.created(id: "evt-flaky"), to: processor)
            #expect(third.report?.outcome == .duplicate)
        }
        #expect(fake.attempts.withLock { $0 } == ["tok-a": 1, "tok-b": 2])
    }

    /// A trigger that times out redelivers while the first delivery is still sending: the second waits
    /// (503, with the lease left as Retry-After) instead of sending the same pushes again.
    @Test func aRedeliveryWhileTheFirstIsStillSendingDoesNotSendTwice() async throws {
        let fake = FakeFCM()
        fake.hold()
        try await withWorld(fake) { firestore, processor in
            async let first = deliver(Rooms.created(id: "evt-slow"), to: processor)
            try await fake.waitForASendInFlight()
            let second = try await deliver(Rooms.created(id: "evt-slow"), to: processor)
            fake.release()
            #expect(second.status == 503, "\(second.body)")
            // What is left of the first delivery's lease (60 s, a few seconds of it spent on a busy machine).
            #expect(second.retryAfterSeconds.map { (30...61).contains($0) } == true)
            #expect(try await first.status == 200)
            // Once the first has recorded its pushes, a redelivery is a plain duplicate.
            #expect(try await deliver(Rooms.created(id: "evt-slow"), to: processor).report?.outcome == .duplicate)
        }
        #expect(fake.attempts.withLock { $0 } == ["tok-a": 1, "tok-b": 1])
    }

    /// A claim dated far ahead (written by anything but a delivery: the functions stamp claims with
    /// Firestore's time) does not hold the pending push back: it went out on the next delivery (it was
    /// answered 503 on every delivery until the dead letter).
    @Test func aClaimDatedFarAheadDoesNotHoldThePushesBack() async throws {
        let fake = FakeFCM { token, attempt in
            token == "tok-b" && attempt == 1 ? FakeFCM.error(.serviceUnavailable, "UNAVAILABLE", "UNAVAILABLE") : FakeFCM.ok(token)
        }
        try await withWorld(fake) { firestore, processor in
            let first = try await deliver(Rooms.created(id: "evt-future-claim"), to: processor)
            #expect(first.status == 503, "tok-b's push failed transiently: \(first.body)")
            let gateway = try #require(processor.gateway as? ExactlyOnceExecutor)
            let ledger = try gateway.ledgerName(for: Rooms.created(id: "evt-future-claim"))
            let ahead = FirestoreValue.timestamp(Timestamp.now().adding(.seconds(3600)))
            _ = try await firestore.commit([
                Write(.update(ledger, fields: ["claims": .map(["elsewhere": ahead])], mask: [FieldPath("claims", "elsewhere")]), precondition: .exists(true))
            ])
            let second = try await deliver(Rooms.created(id: "evt-future-claim"), to: processor)
            #expect(second.status == 200, "\(second.body)")
        }
        #expect(fake.attempts.withLock { $0 } == ["tok-a": 1, "tok-b": 2])
    }

    /// A plan too large for one commit commits on its own; its first commit was applied but answered
    /// FAILED_PRECONDITION (the client's retry after an UNAVAILABLE met the document its first try had
    /// changed). The delivery plans again and finds the ledger entry: its claim names this delivery, so
    /// the pushes go at once (under a holder per plan, it took its own claim for another delivery's and
    /// answered 503 for a whole lease).
    @Test func aDeliveryThatPlansAgainKnowsItsOwnClaim() async throws {
        let fake = FakeFCM()
        let answering = GoogleAPIError(httpStatus: 400, status: .failedPrecondition, message: "the stored version is newer than the one read")
        let wrap: @Sendable (FirestoreClient) -> any FirestoreAPI = { AppliedThenAnswered($0, answering) }
        try await withWorld(fake, function: WideRelay(), wrap: wrap) { firestore, processor in
            let http = try Rooms.httpRequest(Rooms.created(id: "evt-wide"))
            let response = await processor.process(EventRequest(headers: http.headers, body: http.body), logger: logger)
            #expect(response.status == 200, "\(response.body)")
            #expect(try await firestore.get(Rooms.room)?["count"] == .integer(5), "applied once")
        }
        #expect(fake.attempts.withLock { $0 } == ["tok-a": 1, "tok-b": 1])
    }

    /// Applies the first commit that creates a ledger entry and answers it with `answer`, as the client's
    /// retry of a commit answered UNAVAILABLE after it was applied would (ALREADY_EXISTS, or
    /// FAILED_PRECONDITION when the retry first meets a document its first try changed).
    final class AppliedThenAnswered: ForwardingFirestore {
        let inner: FirestoreClient
        let answer: GoogleAPIError
        let refusal = FirstTime()
        init(_ inner: FirestoreClient, _ answer: GoogleAPIError = .exists(Rooms.room)) {
            self.inner = inner
            self.answer = answer
        }
        func commit(_ writes: [Write], transaction: String?) async throws -> FirestoreClient.CommitResult {
            let result = try await inner.commit(writes, transaction: transaction)
            guard writes.contains(where: { $0.precondition == .exists(false) }), refusal.take() else { return result }
            throw answer
        }
    }

    /// A delivery whose first commit went through but came back ALREADY_EXISTS finds its own claim in
    /// the ledger entry and sends the pushes at once (it took that claim for another delivery's and
    /// answered 503 for a whole lease).
    @Test func aFirstCommitAppliedButAnsweredAlreadyExistsIsThisDeliverysOwn() async throws {
        let fake = FakeFCM()
        let wrap: @Sendable (FirestoreClient) -> any FirestoreAPI = { AppliedThenAnswered($0) }
        try await withWorld(fake, wrap: wrap) { firestore, processor in
            let first = try await deliver(Rooms.created(id: "evt-retried"), to: processor)
            #expect(first.status == 200, "\(first.body)")
            #expect(try await firestore.get(Rooms.room)?["count"] == .integer(5))
            #expect(try await deliver(Rooms.created(id: "evt-retried"), to: processor).report?.outcome == .duplicate)
        }
        #expect(fake.attempts.withLock { $0 } == ["tok-a": 1, "tok-b": 1])
    }

    @Test func aDryRunReadsButWritesAndSendsNothing() async throws {
        let fake = FakeFCM()
        try await withWorld(fake, dryRun: true) { firestore, processor in
            let response = try await deliver(Rooms.created(), to: processor)
            #expect(response.status == 200)
            #expect(response.report?.documentsRead.found[Rooms.room] != nil)
            #expect(response.report?.plan.pushes.count == 2)
            #expect(try await firestore.get(Rooms.room)?["count"] == .integer(4))
        }
        #expect(fake.bodies.withLock { $0.isEmpty })
    }

    @Test func invokeDryRunReadsTheConfiguredFirestore() async throws {
        guard GoogleFirestoreEmulator.isInstalled else { return }
        try await GoogleFirestoreEmulator.run { host in
            let firestore = FirestoreClient(project: "herald-demo", endpoint: "http://\(host)", credentials: EmulatorCredentials(), httpClient: .shared)
            let message = try firestore.name("conversations/c-big/messages/m-huge")
            _ = try await firestore.commit([Write(.update(message, fields: ["text": .string("a very large message")], mask: nil))])
            var env = ProcessInfo.processInfo.environment
            env["FIRESTORE_EMULATOR_HOST"] = host
            env["GOOGLE_CLOUD_PROJECT"] = "herald-demo"
            env["GOOGLE_APPLICATION_CREDENTIALS"] = nil
            let result = try await ProcessRunner.run(
                TestPaths.executable("onMessageCreated"),
                [
                    "invoke", "--dry-run", "--event", TestPaths.fixture("values/data-omitted.binary-protobuf.json").path,
                ], environment: env)
            #expect(result.status == 0, "\(result.stderr)")
            let report = try JSONValue(parsing: result.stdout)
            #expect(report["dryRun"] == true)
            let readBack = report["documentsRead"]?.arrayValue?.first { $0["name"]?.stringValue?.hasSuffix("/m-huge") == true }
            #expect(readBack?["document"]?["fields"]?["text"] == ["stringValue": "a very large message"])
            // Its conversation does not exist in this Firestore: the plan says so and does nothing.
            #expect(report["outcome"] == ["status": "skipped", "reason": "conversation conversations/c-big does not exist"])
        }
    }
}

extension ExactlyOnceExecutorTests {
    @Test func aDocumentThatChangedUnderThePlanIsPlannedAgainNotTakenForADuplicate() async throws {
        let fake = FakeFCM()
        try await withWorld(fake) { firestore, processor in
            // The room vanishes after the plan read it: the commit's exists=true fails, nothing is written,
            // and the runtime reads and plans again at once: now the room is missing, so the plan skips.
            let removing = RemovingGateway(inner: processor.gateway, firestore: firestore, remove: Rooms.room)
            let racing = EventProcessor(function: RelayFunction(), gateway: removing)
            let http = try Rooms.httpRequest(Rooms.created(id: "evt-race"))
            let first = await racing.process(EventRequest(headers: http.headers, body: http.body), logger: logger)
            #expect(first.status == 200)
            #expect(first.report?.outcome == .skipped(reason: "room missing"))
            #expect(try await firestore.get(Rooms.room) == nil)
            // Redelivered: the room is gone, so the plan now skips, and nothing was ever applied twice.
            let again = try await deliver(Rooms.created(id: "evt-race"), to: processor)
            #expect(again.status == 200)
            #expect(again.report?.outcome == .skipped(reason: "room missing"))
        }
        #expect(fake.bodies.withLock { $0.isEmpty })
    }
}

/// Deletes a document after the reads and before the commit, as a concurrent client might.
struct RemovingGateway: DocumentGateway {
    let inner: any DocumentGateway
    let firestore: FirestoreClient
    let remove: DocumentName
    var isDryRun: Bool { inner.isDryRun }
    func read(_ names: [DocumentName]) async throws -> DocumentsRead { try await inner.read(names) }
    func list(_ collections: [CollectionPath]) async throws -> [CollectionPath: [FirestoreDocument]] { try await inner.list(collections) }
    func lookUp(_ lookups: [ValueLookup]) async throws -> [ValueLookup: [FirestoreDocument]] { try await inner.lookUp(lookups) }
    func execute(_ plan: Plan, for change: DocumentChange, delivery: String) async throws -> EffectsReport.Outcome {
        _ = try await firestore.commit([Write(.delete(remove))])
        return try await inner.execute(plan, for: change, delivery: delivery)
    }
}
