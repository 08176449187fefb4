import ArgumentParser
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
import WireFormats

/// onMessageCreated end to end: event in, Firestore commit and FCM pushes out, exactly once.
struct MessageEvents: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "messages",
        abstract: "onMessageCreated end to end against a Firestore (Herald's local cloud, or Google's emulator) and a local FCM sink.",
        discussion: "Prints events/s, p50/p99 latency per event (decode to last push sent) and Firestore requests per event.")

    @Option(help: "Message events to deliver.") var events = 300
    @Option(help: "Members of the conversation (each with one device).") var members = 3
    @Option(help: "Events in flight at once.") var concurrency = 8
    @Option(help: "Firestore to run against: herald (the local cloud, in process) or google (Google's emulator).") var firestore = FirestoreBackend.herald

    func run() async throws {
        let backend = firestore
        let sink = FakeFCM()
        let requests = Counter()
        let logger = Logger(label: "bench") { _ in SwiftLogNoOpLogHandler() }
        let (events, members, concurrency) = (self.events, self.members, self.concurrency)
        _ = try await backend.run { host in
            try await withTestHTTPServer(sink.router) { fcmPort in
                let seeding = FirestoreClient(project: "bench", endpoint: "http://\(host)", credentials: EmulatorCredentials(), httpClient: .shared)
                let counted = FirestoreClient(
                    project: "bench", endpoint: "http://\(host)", credentials: EmulatorCredentials(), httpClient: .shared,
                    observer: { _ in requests.increment() })
                let fcm = FCMClient(project: "bench", endpoint: "http://127.0.0.1:\(fcmPort)", credentials: EmulatorCredentials(), httpClient: .shared)
                let ids = (0..<members).map { "u\($0)" }
                let conversation = try seeding.name("conversations/c1")
                var seed = [
                    Write(
                        .update(
                            conversation, fields: ["members": .array(ids.map { .string($0) }), "isGroup": .boolean(true), "name": .string("Bench")], mask: nil))
                ]
                seed += try ids.map {
                    Write(
                        .update(try seeding.name("users/\($0)"), fields: ["displayName": .string($0), "fcmTokens": .array([.string("tok-\($0)")])], mask: nil))
                }
                var changes: [DocumentChange] = []
                for i in 0..<events {
                    let name = try seeding.name("conversations/c1/messages/m\(i)")
                    let document = FirestoreDocument(
                        name: name,
                        fields: [
                            "senderId": .string(ids[i % members]), "text": .string("message \(i)"),
                            "timestamp": .timestamp(Timestamp(seconds: 1_795_165_200 + Int64(i))),
                        ],
                        createTime: Timestamp(seconds: 1_795_165_200 + Int64(i)), updateTime: Timestamp(seconds: 1_795_165_200 + Int64(i)))
                    seed.append(Write(.update(name, fields: document.fields, mask: nil)))
                    changes.append(DocumentChange(eventID: "e\(i)", kind: .created, time: document.createTime!, document: name, newDocument: document))
                }
                _ = try await seeding.commitInBatches(seed)
                let gateway = ExactlyOnceExecutor(firestore: counted, fcm: fcm, functionName: OnMessageCreated.name, dryRun: false, logger: logger)
                let processor = EventProcessor(function: OnMessageCreated(schema: Schema.presets["default"]!), gateway: gateway)
                let requestsForChanges = try changes.map { change in
                    let event = DecodedEvent(
                        change: change, envelope: EventEnvelope(encoding: .binaryProtobuf, type: "google.cloud.firestore.document.v1.created"))
                    return try Fixture.request(from: Array(Fixture.binary(event, json: false).serialized().utf8))
                }
                let run = try await TimedRun.measure(count: events, inFlight: concurrency) { i in
                    let response = await processor.process(requestsForChanges[i], logger: logger)
                    guard response.status == 200 else { throw ValidationError("event \(i) answered \(response.status): \(response.body.serialized())") }
                }
                let pushes = sink.bodies.withLock { $0.count }
                print("onMessageCreated end to end: \(events) events, \(members) members, \(concurrency) in flight (\(backend), local FCM sink)")
                print(String(format: "  events/s                   %.0f", run.perSecond(events)))
                print("  p50 / p99 per event        \(run.percentile(50)) / \(run.percentile(99))")
                print(String(format: "  Firestore requests/event   %.2f", Double(requests.value) / Double(events)))
                print(String(format: "  pushes/event               %.2f (%d recipients each)", Double(pushes) / Double(events), members - 1))
            }
        }
    }
}

extension FirestoreBackend: ExpressibleByArgument {}
