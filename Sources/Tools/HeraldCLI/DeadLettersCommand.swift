import ArgumentParser
import AsyncHTTPClient
import ChatFunctions
import FirestoreModel
import Foundation
import GoogleClients
import NIOCore
import NIOHTTP1
import WireFormats

/// `herald dead-letters PROJECT`: the events Eventarc gave up on (after its last delivery attempt Pub/Sub
/// moved them to `herald-dead-letters`, kept 7 days), each with its function, document, first failure
/// and the reason the function logged; `--replay` delivers them to their functions again as Eventarc
/// would (a binary CloudEvent with an identity token of the trigger's account) and acknowledges only
/// what the function took. Exactly once still holds: an event already applied answers duplicate.
struct DeadLetters: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dead-letters",
        abstract: "List the events in the dead-letter subscription, with their reasons; --replay delivers them to their functions again.",
        discussion: """
            Reads Pub/Sub with your Google credentials (gcloud auth application-default login), or PUBSUB_EMULATOR_HOST's emulator. \
            A replay acts as the Eventarc trigger's account (herald-trigger@PROJECT), so your account needs roles/iam.serviceAccountTokenCreator \
            on it; only events the function answers 2xx are acknowledged. docs/delivery.md says what a replay means.
            """)

    @Argument(help: "The Google Cloud project id.") var project: String
    @Argument(help: "With --replay: the message ids to replay (all when none).") var ids: [String] = []
    @Flag(help: "Deliver the events again to their functions, acknowledging those the function took.") var replay = false
    @Option(help: "The dead-letter subscription.") var subscription = "herald-dead-letters"
    @Option(help: "The functions' region (to find their Cloud Run URLs).") var region: String?
    @Option(
        name: .customLong("function-url"), help: ArgumentHelp("Where a function is served, instead of its Cloud Run URL. Repeatable.", valueName: "name=url"))
    var functionURLs: [String] = []
    @Flag(help: "Replay events older than the ledger's life (7 days): they may be applied a second time.") var olderThanLedger = false

    static let ledgerLife: Int64 = 7 * 86_400

    func validate() throws {
        if project.isEmpty || project.contains(where: { !($0.isLowercase || $0.isNumber || $0 == "-") }) {
            throw ValidationError("PROJECT must be a project id, not \"\(project)\"")
        }
        if !replay && !ids.isEmpty { throw ValidationError("message ids are for --replay") }
        for entry in functionURLs where !entry.contains("=") { throw ValidationError("--function-url takes NAME=URL, not \"\(entry)\"") }
    }

    func run() async throws {
        let google = try await GoogleAccess.make(project: project)
        let pubsub = PubSub(google: google, subscription: "projects/\(project)/subscriptions/\(subscription)")
        let (letters, stopped) = try await pubsub.pullAll()
        if let stopped { FileHandle.standardError.write(Data("stopped reading \(subscription) after \(stopped): run again for the rest\n".utf8)) }
        if letters.isEmpty {
            print("no dead letters in \(subscription)")
            return
        }
        var reasons: [String: (time: String, text: String)] = [:]
        for letter in letters { reasons[letter.id] = await google.firstFailure(eventID: letter.eventID) }
        if !replay {
            print("\(letters.count) dead letter\(letters.count == 1 ? "" : "s") in \(subscription):")
            for letter in letters {
                let reason = reasons[letter.id]
                print(
                    "  \(letter.id)  \(letter.function ?? "?")  \(letter.kind) \(letter.document)  first failure \(reason?.time ?? letter.firstPublished ?? "?") after \(letter.attempts.map(String.init) ?? "?") attempts: \(reason?.text ?? "no reason in the function's log")"
                )
            }
            print("replay: herald dead-letters \(project) --replay [ID…]\(region == nil ? " --region REGION" : "")")
            try await pubsub.release(letters)
            return
        }
        let chosen = ids.isEmpty ? letters : letters.filter { ids.contains($0.id) }
        try await pubsub.release(letters.filter { letter in !chosen.contains { $0.id == letter.id } })
        var acknowledged = 0
        var failed: [String] = []
        for letter in chosen {
            if !olderThanLedger, let age = letter.age, age > Self.ledgerLife {
                failed.append(
                    "\(letter.id): first delivered \(age / 86_400) days ago, past the ledger's 7 days: it could be applied twice (--older-than-ledger replays it anyway)"
                )
                continue
            }
            do {
                let url = try await functionURL(letter, google: google)
                let answer = try await deliver(letter, to: url, google: google)
                guard (200..<300).contains(answer.status) else {
                    failed.append("\(letter.id): \(letter.function ?? "?") answered \(answer.status): \(answer.body.prefix(300))")
                    continue
                }
                try await pubsub.acknowledge([letter])
                acknowledged += 1
                print("  \(letter.id)  \(letter.function ?? "?")  \(letter.document): \(answer.status) \(answer.outcome)")
            } catch {
                failed.append("\(letter.id): \(error)")
            }
        }
        try await pubsub.release(chosen.filter { letter in failed.contains { $0.hasPrefix("\(letter.id):") } })
        print("replayed \(chosen.count): \(acknowledged) acknowledged, \(failed.count) kept in \(subscription)")
        for line in failed { print("  kept \(line)") }
        if !failed.isEmpty { throw ExitCode(1) }
    }

    /// The function's URL: given, else its Cloud Run service's.
    func functionURL(_ letter: DeadLetter, google: GoogleAccess) async throws -> String {
        guard let function = letter.function else { throw ValidationError("which function this event was for is unknown (no trigger in its attributes)") }
        if let given = functionURLs.first(where: { $0.hasPrefix(function + "=") }) { return String(given.dropFirst(function.count + 1)) }
        guard let region else { throw ValidationError("give --region (the functions' region) or --function-url \(function)=URL") }
        return try await google.cloudRunURL(service: "herald-\(function.lowercased())", region: region)
    }

    struct Answer {
        var status: Int
        var body: String
        var outcome: String { (try? JSONValue(parsing: Array(body.utf8)))?["outcome"]?.stringValue ?? "" }
    }

    /// The event as Eventarc's push delivers it: `ce-*` headers from the attributes, the data as the body.
    func deliver(_ letter: DeadLetter, to url: String, google: GoogleAccess) async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        // Pub/Sub carries the data's type as ce-datacontenttype (or content-type); over HTTP it is Content-Type.
        for (name, value) in letter.attributes where name.hasPrefix("ce-") && name != "ce-datacontenttype" {
            request.headers.add(name: name, value: value)
        }
        request.headers.add(
            name: "content-type", value: letter.attributes["content-type"] ?? letter.attributes["ce-datacontenttype"] ?? "application/protobuf")
        if let token = try await google.identityToken(audience: url, as: "herald-trigger@\(project).iam.gserviceaccount.com") {
            request.headers.add(name: "authorization", value: "Bearer \(token)")
        }
        request.body = .bytes(ByteBuffer(bytes: letter.data))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(120))
        let body = try await response.body.collect(upTo: 1 << 20)
        return Answer(status: Int(response.status.code), body: String(buffer: body))
    }
}

/// One dead-lettered message, as Eventarc's push subscription leaves it: the CloudEvent's attributes
/// (`ce-id`, `ce-type`, `ce-document`, …) and data, and what Pub/Sub adds on dead-lettering.
struct DeadLetter: Sendable {
    var id: String
    var ackID: String
    var attributes: [String: String]
    var data: [UInt8]
    var publishTime: String?

    var eventID: String { attributes["ce-id"] ?? id }
    var document: String { attributes["ce-document"] ?? attributes["ce-subject"].map { $0.hasPrefix("documents/") ? String($0.dropFirst(10)) : $0 } ?? "?" }
    var kind: String { attributes["ce-type"]?.split(separator: ".").last.map(String.init) ?? "?" }
    var attempts: Int? { attributes["CloudPubSubDeadLetterSourceDeliveryCount"].flatMap(Int.init) }
    var firstPublished: String? { attributes["CloudPubSubDeadLetterSourceTopicPublishTime"] ?? publishTime }

    /// Seconds since it was first published (the first delivery).
    var age: Int64? { firstPublished.flatMap(Timestamp.init(rfc3339:)).map { Timestamp.now().seconds - $0.seconds } }

    /// The function, from the trigger's subscription (`eventarc-REGION-herald-onreadreceipt-deleted-NNN-sub-NNN`).
    var function: String? {
        guard let source = attributes["CloudPubSubDeadLetterSourceSubscription"]?.lowercased() else { return nil }
        return FunctionCatalog.names.first { source.contains("herald-\($0.lowercased())-") || source.hasSuffix("herald-\($0.lowercased())") }
    }
}

/// The Pub/Sub subscription, over REST (`PUBSUB_EMULATOR_HOST`'s emulator, or Google's).
struct PubSub {
    let google: GoogleAccess
    let subscription: String

    var base: String { google.pubsubEndpoint + "/v1/" + subscription }

    /// At most this many letters in one run, and this many pulls to gather them.
    static let maximumLetters = 10_000, maximumPulls = 100

    /// The messages the subscription holds now, each leased until released or acknowledged, and what
    /// stopped the pulling when it was not an empty answer. Bounded by pulls as well as letters: a
    /// subscription that answers a message it gave before, or a few new ones at every pull forever, is
    /// left with what came.
    func pullAll() async throws -> (letters: [DeadLetter], stopped: String?) {
        var letters: [DeadLetter] = []
        var seen: Set<String> = []
        for _ in 0..<Self.maximumPulls {
            let answer = try await google.call(.POST, base + ":pull", body: ["maxMessages": 500, "returnImmediately": true])
            let received = answer["receivedMessages"]?.arrayValue ?? []
            if received.isEmpty { return (letters, nil) }
            for item in received {
                guard let ack = item["ackId"]?.stringValue, let message = item["message"] else { continue }
                let id = message["messageId"]?.stringValue ?? ack
                guard seen.insert(id).inserted else {
                    // Its lease ran out and it came again: every letter held has come once.
                    try? await release([DeadLetter(id: id, ackID: ack, attributes: [:], data: [], publishTime: nil)])
                    return (letters, nil)
                }
                letters.append(
                    DeadLetter(
                        id: id, ackID: ack, attributes: (message["attributes"]?.objectValue ?? [:]).compactMapValues(\.stringValue),
                        data: message["data"]?.stringValue.flatMap { Base64.decode($0) } ?? [], publishTime: message["publishTime"]?.stringValue))
            }
            if letters.count >= Self.maximumLetters { return (letters, "\(letters.count) letters, the most one run takes") }
        }
        return (letters, "\(Self.maximumPulls) pulls, the most one run makes")
    }

    func acknowledge(_ letters: [DeadLetter]) async throws {
        guard !letters.isEmpty else { return }
        _ = try await google.call(.POST, base + ":acknowledge", body: ["ackIds": .array(letters.map { .string($0.ackID) })])
    }

    /// Back to the subscription at once (an ack deadline of 0), for the next look.
    func release(_ letters: [DeadLetter]) async throws {
        guard !letters.isEmpty else { return }
        _ = try await google.call(.POST, base + ":modifyAckDeadline", body: ["ackIds": .array(letters.map { .string($0.ackID) }), "ackDeadlineSeconds": 0])
    }
}
