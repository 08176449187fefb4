import AsyncHTTPClient
import FirestoreEvents
import FirestoreModel
import Foundation
import HeraldRuntime
import HeraldTesting
import Hummingbird
import Synchronization
import Testing
import WireFormats

/// Slow and failing downstreams, and settings that are wrong: the real executables answer fast with
/// a status the trigger acts on, never hang, and never lose or duplicate what they were asked to do.
@Suite struct OutageTests {
    /// Firestore unreachable held every event for 30 s of in-call retries before its 503; an instance
    /// with 80 of them scaled out for nothing. Now each is answered within 5 s, and once the breaker has
    /// seen Firestore fail to answer, at once.
    @Test func aFirestoreOutageIsAnsweredWithinFiveSeconds() async throws {
        let world = try await DevWorld.start(fcmOnly: true)
        defer { world.dev.kill() }
        let message = try await world.message("m-outage")
        // Every Herald request to Firestore hangs, as to a black-holed network.
        try await world.dev.setFaults(["rate": 1, "kinds": ["firestore": ["timeout"]], "hangMilliseconds": 60_000])
        // A try of a call gives up after 2 s (4 by default): an answer within 5 s has room, and one in under 2 s made no call.
        let hanging = try await FunctionUnderTest.start(
            "onMessageCreated", environment: world.dev.functionEnvironment().merging(["HERALD_API_TIMEOUT": "2"]) { _, new in new })
        defer { hanging.stop() }
        let first = try await withThrowingTaskGroup(of: FunctionUnderTest.Answer.self) { group in
            for i in 0..<5 { group.addTask { try await hanging.post(try world.created(message, id: "evt-hang-\(i)")) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        for answer in first {
            #expect(answer.status == 503 && answer.retryAfter != nil, "\(answer.status) \(answer.body)")
            #expect(answer.elapsed < .seconds(5), "answered after \(answer.elapsed)")
        }
        let later = try await hanging.post(try world.created(message, id: "evt-hang-later"))
        #expect(later.status == 503 && later.elapsed < .seconds(2), "the breaker is open, no call made: \(later.elapsed) \(later.body)")
        #expect(later.body.contains("not calling it") && Int(later.retryAfter ?? "") != nil, "\(later.body)")

        // Nothing listens where Firestore should be: refused connections, retried for 2 s at most.
        let nowhere = try freeLoopbackPort()
        let refused = try await FunctionUnderTest.start(
            "onMessageCreated",
            environment: world.dev.functionEnvironment().merging(
                ["FIRESTORE_ENDPOINT": "http://127.0.0.1:\(nowhere)"]) { _, new in new })
        defer { refused.stop() }
        let answer = try await refused.post(try world.created(message, id: "evt-refused"))
        #expect(answer.status == 503 && answer.elapsed < .seconds(5), "\(answer.elapsed) \(answer.body)")
        #expect(hanging.isRunning && refused.isRunning)
    }

    /// Without credentials, an emulator or a metadata server, `serve` was silent for 35 s and exited.
    /// Now it says in one line what to set, within about a second; offline commands never wait.
    @Test func startingWithoutCredentialsSaysWhatToSet() async throws {
        let clock = ContinuousClock()
        // What starting the process costs here, now (a loaded machine starts a debug build slowly).
        let baselineStart = clock.now
        _ = try await ProcessRunner.run(TestPaths.executable("onMessageCreated"), ["--help"], environment: FunctionUnderTest.cleanEnvironment())
        let baseline = clock.now - baselineStart
        let start = clock.now
        let result = try await ProcessRunner.run(
            TestPaths.executable("onMessageCreated"), ["serve", "--host", "127.0.0.1", "--port", "0"],
            environment: FunctionUnderTest.cleanEnvironment())
        let elapsed = clock.now - start
        #expect(result.status != 0)
        // The 0.8 s probe beyond starting the process at all (which was 35 s of silence before).
        #expect(elapsed - baseline < .seconds(10), "took \(elapsed), of which starting a process \(baseline)")
        let said = result.stderr.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(said.split(separator: "\n").count == 1, "one line: \(said)")
        for setting in ["GOOGLE_APPLICATION_CREDENTIALS", "FIRESTORE_EMULATOR_HOST", "--documents"] { #expect(said.contains(setting), "\(said)") }

        // Commands that need no Google access finish at once without any.
        for (executable, arguments) in [
            (
                "onMessageCreated",
                [
                    "invoke", "--event", TestPaths.fixture("default/message-created.legacy.json").path,
                    "--documents", TestPaths.fixture("default/documents.json").path,
                ]
            ),
            ("herald", ["indexes", "--schema", "prd004"]),
        ] {
            let begun = clock.now
            let offline = try await ProcessRunner.run(TestPaths.executable(executable), arguments, environment: FunctionUnderTest.cleanEnvironment())
            #expect(offline.status == 0, "\(executable) \(arguments): \(offline.stderr)")
            #expect(clock.now - begun - baseline < .seconds(5), "\(executable) \(arguments[0]) took \(clock.now - begun)")
        }
    }

    /// A push FCM does not answer by 60% of the lease may have been delivered, or not: the redelivery
    /// that comes meanwhile must not send it (the claim holds), the event answers 503 once the first
    /// delivery has recorded it unanswered, and the next delivery sends it once more, under the same
    /// collapse identifiers, so a device that got the first shows one alert and one that did not gets it.
    @Test func anUnansweredPushIsSentOnceMoreWithTheSameCollapseIdentifiers() async throws {
        // The first sends stay unanswered until released (a long delay would hold up the test server's stop until it ended).
        let fcm = FakeFCM()
        fcm.hold()
        let world = try await DevWorld.start(fcmOnly: true)
        defer { world.dev.kill() }
        try await withTestHTTPServer(fcm.router) { fcmPort in
            defer { fcm.release() }
            let function = try await FunctionUnderTest.start(
                "onMessageCreated",
                environment: world.dev.functionEnvironment().merging(["FCM_ENDPOINT": "http://127.0.0.1:\(fcmPort)", "HERALD_PUSH_LEASE": "10"]) { _, new in new
                })
            defer { function.stop() }
            let message = try await world.message("m-slow")
            let event = try world.created(message, id: "evt-slow")
            async let first = function.post(event)
            try await fcm.waitForASendInFlight()
            let meanwhile = try await function.post(event)
            #expect(meanwhile.status == 503 && meanwhile.elapsed < .seconds(6), "the claim holds: \(meanwhile.status) \(meanwhile.body)")
            let answer = try await first
            #expect(
                answer.status == 503 && answer.elapsed >= .seconds(6) && answer.elapsed < .seconds(20),
                "\(answer.status) after \(answer.elapsed): \(answer.body)")
            fcm.release()
            let unanswered = function.output.split(separator: "\n").filter { $0.contains("it may have been delivered and is sent once more") }
            #expect(unanswered.count == 3 && unanswered.allSatisfy { $0.contains("evt-slow") }, "each names its event: \(unanswered)")
            let again = try await function.post(event)
            #expect(again.status == 200 && again.json?["outcome"] == "applied", "the second send: \(again.body)")
            let after = try await function.post(event)
            #expect(after.status == 200 && after.json?["outcome"] == "duplicate", "\(after.body)")
        }
        #expect(fcm.attempts.withLock { $0 } == ["tok-bob-phone": 2, "tok-bob-ipad": 2, "tok-carol-phone": 2])
        // Both sends of each push carry the same collapse identifiers: a device shows one alert.
        let sends = Dictionary(grouping: fcm.bodies.withLock { $0 }.compactMap { $0["message"] }) { $0["token"]?.stringValue ?? "" }
        for (token, bodies) in sends {
            let identities = Set(
                bodies.map {
                    [
                        $0["apns"]?["headers"]?["apns-collapse-id"], $0["android"]?["collapse_key"], $0["android"]?["notification"]?["tag"],
                        $0["data"]?["messageId"],
                    ]
                })
            #expect(bodies.count == 2 && identities.count == 1 && identities.first?.allSatisfy { $0 != nil } == true, "\(token): \(bodies)")
        }
    }

    /// Unanswered twice: not sent a third time (each may have been delivered), and the event is done.
    @Test func aPushUnansweredTwiceIsNotSentAThirdTime() async throws {
        let fcm = FakeFCM(delay: .seconds(9))
        let world = try await DevWorld.start(fcmOnly: true)
        defer { world.dev.kill() }
        try await withTestHTTPServer(fcm.router) { fcmPort in
            let function = try await FunctionUnderTest.start(
                "onMessageCreated",
                environment: world.dev.functionEnvironment().merging(["FCM_ENDPOINT": "http://127.0.0.1:\(fcmPort)", "HERALD_PUSH_LEASE": "10"]) { _, new in new
                })
            defer { function.stop() }
            let event = try world.created(try await world.message("m-slower"), id: "evt-slower")
            #expect(try await function.post(event).status == 503)
            let second = try await function.post(event)
            #expect(second.status == 200, "\(second.body)")
            #expect(function.output.contains("a second time; it may have been delivered and is not sent a third time"))
            #expect(try await function.post(event).json?["outcome"] == "duplicate")
        }
        #expect(fcm.attempts.withLock { $0 } == ["tok-bob-phone": 2, "tok-bob-ipad": 2, "tok-carol-phone": 2])
    }

    /// A wrong FCM_ENDPOINT (a 404 page), the wrong project's credentials (SENDER_ID_MISMATCH) and an
    /// endpoint calling every token dead once removed tokens, or would have. None removes any now; a
    /// person's dead tokens among others' live ones still go. Credentials FCM refuses keep the pushes for a retry.
    @Test func aMisconfiguredFCMRemovesNoToken() async throws {
        let world = try await DevWorld.start(fcmOnly: true)
        defer { world.dev.kill() }
        let before = try await [world.tokens(of: "bob"), world.tokens(of: "carol")]
        let answers: [(String, @Sendable (String, Int) -> FakeFCM.Answer, Int)] = [
            ("a 404 page", { _, _ in FakeFCM.Answer(status: .notFound, body: "<html>Not Found</html>") }, 503),
            ("SENDER_ID_MISMATCH", { _, _ in FakeFCM.error(.forbidden, "PERMISSION_DENIED", "SENDER_ID_MISMATCH") }, 200),
            ("UNREGISTERED for all", { _, _ in FakeFCM.error(.notFound, "NOT_FOUND", "UNREGISTERED") }, 200),
            // The service account without FCM's role: the pushes wait for the fix (they were given up).
            ("PERMISSION_DENIED", { _, _ in FakeFCM.error(.forbidden, "PERMISSION_DENIED", nil, message: "Permission denied") }, 503),
        ]
        for (index, (what, script, status)) in answers.enumerated() {
            let fcm = FakeFCM(script: script)
            try await withTestHTTPServer(fcm.router) { port in
                let function = try await FunctionUnderTest.start(
                    "onMessageCreated",
                    environment: world.dev.functionEnvironment().merging(
                        ["FCM_ENDPOINT": "http://127.0.0.1:\(port)"]) { _, new in new })
                defer { function.stop() }
                let message = try await world.message("m-misconfigured-\(index)")
                let answer = try await function.post(try world.created(message, id: "evt-misconfigured-\(index)"))
                #expect(answer.status == status, "\(what): \(answer.body)")
                #expect(try await [world.tokens(of: "bob"), world.tokens(of: "carol")] == before, "\(what) removed tokens")
                if what.hasPrefix("UNREGISTERED") { #expect(function.output.contains("No token removed"), "\(function.output.suffix(1500))") }
            }
        }
        // Bob uninstalled the app from his phone and his iPad, Carol's phone is live: two dead tokens of
        // three, but one person of two. His are removed, as they should be (they were kept, with an ERROR).
        let fcm = FakeFCM { token, _ in token.hasPrefix("tok-bob-") ? FakeFCM.error(.notFound, "NOT_FOUND", "UNREGISTERED") : FakeFCM.ok(token) }
        try await withTestHTTPServer(fcm.router) { port in
            let function = try await FunctionUnderTest.start(
                "onMessageCreated",
                environment: world.dev.functionEnvironment().merging(
                    ["FCM_ENDPOINT": "http://127.0.0.1:\(port)"]) { _, new in new })
            defer { function.stop() }
            let message = try await world.message("m-one-dead")
            #expect(try await function.post(try world.created(message, id: "evt-one-dead")).status == 200)
            #expect(try await world.tokens(of: "bob") == [])
            #expect(!function.output.contains("No token removed"), "\(function.output.suffix(1500))")
        }
    }
}
