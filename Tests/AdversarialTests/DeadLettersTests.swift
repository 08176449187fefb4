import AsyncHTTPClient
import ChatDemo
import FirestoreEvents
import FirestoreModel
import Foundation
import HeraldTesting
import Hummingbird
import NIOHTTP1
import Testing
import WireFormats

/// `herald dead-letters`: events a function refused, held in a dead-letter subscription on Google's
/// Pub/Sub emulator in the form Eventarc's push subscription leaves them (the CloudEvent's attributes as
/// Pub/Sub attributes, its protobuf data as the message data, and Pub/Sub's dead-letter attributes), are
/// listed with their reasons (from a stand-in for Cloud Logging), replayed to the function and applied
/// once; what the function still refuses stays; a second replay of an applied event answers duplicate.
@Suite struct DeadLettersTests {
    static func deadLetter(_ event: EventRequest, trigger: String = "herald-onmessagecreated", attempts: Int = 10) -> JSONValue {
        var attributes: [String: JSONValue] = [:]
        for (name, value) in event.headers {
            let lower = name.lowercased()
            if lower.hasPrefix("ce-") { attributes[lower] = .string(value) }
            if lower == "content-type" { attributes["content-type"] = .string(value) }
        }
        attributes["CloudPubSubDeadLetterSourceSubscription"] = .string("eventarc-europe-west1-\(trigger)-481-sub-481")
        attributes["CloudPubSubDeadLetterSourceSubscriptionProject"] = "e2e"
        attributes["CloudPubSubDeadLetterSourceDeliveryCount"] = .string(String(attempts))
        attributes["CloudPubSubDeadLetterSourceTopicPublishTime"] = .string(Timestamp.now().adding(.seconds(-2400)).rfc3339)
        return ["data": .string(Base64.encode(event.body)), "attributes": .object(attributes)]
    }

    static func pubsub(_ host: String, _ method: String, _ path: String, _ body: JSONValue) async throws -> JSONValue {
        var request = HTTPClientRequest(url: "http://\(host)/v1/projects/e2e/\(path)")
        request.method = .init(rawValue: method)
        request.headers.add(name: "content-type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: body.serializedBytes()))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        #expect(response.status == .ok, "\(method) \(path): \(String(buffer: bytes))")
        return try JSONValue(parsing: Array(buffer: bytes))
    }

    /// Cloud Logging's entries:list, answering for the refused event with the function's own log line.
    static func logging(refusedEventID: String) -> Router<BasicRequestContext> {
        let router = Router()
        router.post("/v2/entries:list") { request, _ -> Response in
            var request = request
            let body = try JSONValue(parsing: Array(buffer: try await request.collectBody(upTo: 1 << 16)))
            let asked = body["filter"]?.stringValue ?? ""
            let entries =
                asked.contains(#"jsonPayload.eventId="\#(refusedEventID)""#)
                ? #"[{"jsonPayload": {"message": "refused event: the CloudEvent type \"google.cloud.firestore.document.v1.exploded\" is not a Firestore event", "eventId": "\#(refusedEventID)", "severity": "ERROR"}, "timestamp": "2026-11-26T08:00:01.123Z", "severity": "ERROR", "logName": "projects/e2e/logs/run.googleapis.com%2Fstdout"}]"#
                : "[]"
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: #"{"entries": \#(entries)}"#)))
        }
        return router
    }

    @Test func deadLettersAreListedWithReasonsReplayedOnceAndKeptWhenStillRefused() async throws {
        guard GooglePubSubEmulator.isInstalled else {
            try skipTest("Google's Pub/Sub emulator is not installed at \(GooglePubSubEmulator.launcher) (gcloud components install pubsub-emulator)")
        }
        let world = try await DevWorld.start()
        defer { world.dev.kill() }
        let function = try await FunctionUnderTest.start("onMessageCreated", environment: world.dev.functionEnvironment())
        defer { function.stop() }
        let first = try world.created(try await world.message("m-dead-1", text: "Lost in the outage"), id: "evt-dead-1")
        let second = try world.created(try await world.message("m-dead-2", text: "Also lost"), id: "evt-dead-2")
        var refused = try world.created(try await world.message("m-dead-3"), id: "evt-dead-3")
        refused.headers["ce-type"] = "google.cloud.firestore.document.v1.exploded"

        try await GooglePubSubEmulator.run { host in
            _ = try await Self.pubsub(host, "PUT", "topics/herald-dead-letters", [:])
            _ = try await Self.pubsub(host, "PUT", "subscriptions/herald-dead-letters", ["topic": "projects/e2e/topics/herald-dead-letters"])
            _ = try await Self.pubsub(
                host, "POST", "topics/herald-dead-letters:publish", ["messages": [Self.deadLetter(first), Self.deadLetter(second), Self.deadLetter(refused)]])

            try await withTestHTTPServer(Self.logging(refusedEventID: "evt-dead-3")) { loggingPort in
                var environment = ProcessInfo.processInfo.environment
                environment["PUBSUB_EMULATOR_HOST"] = host
                environment["HERALD_LOGGING_ENDPOINT"] = "http://127.0.0.1:\(loggingPort)"
                func herald(_ arguments: [String]) async throws -> ProcessResult {
                    try await ProcessRunner.run(TestPaths.executable("herald"), ["dead-letters", "e2e"] + arguments, environment: environment)
                }
                let list = try await herald([])
                #expect(list.status == 0, "\(list.stderr)")
                let lines = list.stdoutText.split(separator: "\n").map(String.init)
                #expect(lines.first == "3 dead letters in herald-dead-letters:", "\(list.stdoutText)")
                let dead3 = try #require(lines.first { $0.contains("conversations/family/messages/m-dead-3") }, "\(list.stdoutText)")
                #expect(dead3.contains("onMessageCreated") && dead3.contains("after 10 attempts") && dead3.contains("first failure 2026-11-26T08:00:01.123Z"))
                #expect(
                    dead3.contains(
                        #"refused event: the CloudEvent type \"google.cloud.firestore.document.v1.exploded\" is not a Firestore event"#.replacingOccurrences(
                            of: "\\", with: "")), "\(dead3)")
                #expect(lines.contains { $0.contains("m-dead-1") && $0.contains("created") && $0.contains("no reason in the function's log") })
                // Listing leaves them all there.
                #expect(try await herald([]).stdoutText.hasPrefix("3 dead letters"))

                let replay = try await herald(["--replay", "--function-url", "onMessageCreated=http://127.0.0.1:\(function.port)/"])
                #expect(replay.status == 1, "the refused one is kept: \(replay.stdoutText) \(replay.stderr)")
                #expect(replay.stdoutText.contains("replayed 3: 2 acknowledged, 1 kept in herald-dead-letters"), "\(replay.stdoutText)")
                #expect(replay.stdoutText.contains("m-dead-1: 200 applied") && replay.stdoutText.contains("m-dead-2: 200 applied"), "\(replay.stdoutText)")
                let kept = try await herald([])
                #expect(kept.stdoutText.hasPrefix("1 dead letter in herald-dead-letters:") && kept.stdoutText.contains("m-dead-3"), "\(kept.stdoutText)")

                // Eventarc dead-letters the first event a second time (a copy): replayed, it answers duplicate and is acknowledged.
                _ = try await Self.pubsub(host, "POST", "topics/herald-dead-letters:publish", ["messages": [Self.deadLetter(first)]])
                let ids = try await Self.pubsub(host, "POST", "subscriptions/herald-dead-letters:pull", ["maxMessages": 10, "returnImmediately": true])
                let copyID = try #require(
                    ids["receivedMessages"]?.arrayValue?.first { $0["message"]?["attributes"]?["ce-id"] == "evt-dead-1" }?["message"]?["messageId"]?.stringValue
                )
                _ = try await Self.pubsub(
                    host, "POST", "subscriptions/herald-dead-letters:modifyAckDeadline",
                    ["ackIds": .array(ids["receivedMessages"]?.arrayValue?.compactMap { $0["ackId"] } ?? []), "ackDeadlineSeconds": 0])
                let again = try await herald(["--replay", copyID, "--function-url", "onMessageCreated=http://127.0.0.1:\(function.port)/"])
                #expect(again.status == 0 && again.stdoutText.contains("m-dead-1: 200 duplicate"), "\(again.stdoutText) \(again.stderr)")
                #expect(try await herald([]).stdoutText.hasPrefix("1 dead letter in"), "only the refused one is left")
            }
        }
        // Applied once: one push per device for each replayed message, none for the refused one.
        let pushes = try await world.dev.pushes().compactMap { $0["message"] }
        for id in ["m-dead-1", "m-dead-2"] {
            let tokens = pushes.filter { $0["data"]?["messageId"]?.stringValue == id }.compactMap { $0["token"]?.stringValue }
            #expect(tokens.sorted() == [DemoWorld.bobsIPad, DemoWorld.carolsPhone, "tok-bob-phone"], "\(id): \(tokens)")
        }
        #expect(!pushes.contains { $0["data"]?["messageId"] == "m-dead-3" })
    }
}
