import ArgumentParser
import ChatDemo
import ChatFunctions
import EmbeddedFirestore
import FirestoreModel
import Foundation
import GoogleClients
import HeraldCore
import HeraldHTTPClient
import HeraldRuntime
import Hummingbird
import LocalCloud
import Logging
import ServiceLifecycle
import Synchronization
import UnixSignals
import WireFormats

struct Dev: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the whole backend on this machine: the local cloud and every function, wired by triggers.",
        discussion: """
            The local cloud serves, on one port, Firestore over SQLite (REST, gRPC with Listen and Write, and the web \
            SDK's WebChannel), Firebase Auth and a console; it delivers Firestore events to the functions as Eventarc \
            does (retries, dead letters), takes their pushes as FCM, Expo's push service and APNs would, and issues \
            the functions' credentials. Each function runs as its own process on its own port. Ctrl-C stops everything.
            """
    )

    @Option(help: "Port of the local cloud.") var port = 8787
    @Option(help: ArgumentHelp("Where the state lives (SQLite database, local key).", valueName: "dir")) var data = ".herald"
    @Flag(help: "Use a temporary database, removed at exit.") var ephemeral = false
    @Flag(help: "Start with an empty database: remove the one an earlier run left in the data directory (its local key stays).")
    var fresh = false
    @Option(
        help: ArgumentHelp(
            "Load a world first, leaving documents that exist alone: demo (Alice, Bob, Carol, Dave, Erin; a 1:1 chat, the group \"family\" and the group \"book-club\", muted by Dave, with Erin in quiet hours), or a file of your own (.jsonl, one document per line, or .json, {\"documents\": [...]}).",
            valueName: "demo|file"))
    var seed: String?
    @Option(
        name: .customLong("import"),
        help: ArgumentHelp(
            "Load an export first, replacing documents of the same name, without firing triggers: a directory written by --export-on-exit or `herald export`, or by Google's Firestore emulator.",
            valueName: "dir"))
    var importPath: String?
    @Option(help: ArgumentHelp("Write every document to this directory when stopping (Herald's export format: documents.jsonl).", valueName: "dir"))
    var exportOnExit: String?
    @Option(
        name: .customLong("send"), help: ArgumentHelp("Write a message once running, e.g. 'alice→family: Dinner at 6pm'. Repeatable.", valueName: "message"))
    var messages: [String] = []
    @Option(
        name: .customLong("read"),
        help: ArgumentHelp("Once the --send messages are delivered, mark a conversation read, e.g. 'bob→family'. Repeatable.", valueName: "reader→conversation")
    )
    var reads: [String] = []
    @Option(help: "Schema preset (default, prd000, prd001, prd004) or schema JSON file; else HERALD_SCHEMA, else default.")
    var schema: String?
    @Option(help: "Project id the local cloud serves; else GOOGLE_CLOUD_PROJECT, GCLOUD_PROJECT, else herald-local.")
    var project: String?
    @Option(help: "Delivery attempts before an event is dead-lettered.") var maxAttempts = 5
    @Option(help: ArgumentHelp("The longest wait between two delivery attempts (the backoff doubles from 1 s up to it).", valueName: "seconds"))
    var maxBackoff = 60
    @Option(
        help: ArgumentHelp(
            "How long the access tokens it issues last (Google's: 3600). Clients refresh 300 s before expiry, so 305 makes them fetch a new one every 5 s.",
            valueName: "seconds"))
    var accessTokenLifetime = 3600
    @Option(
        help: ArgumentHelp(
            "Keep the documents in this Firestore emulator instead of the embedded one: Google's, started with --functions_emulator at herald dev, sends each write's event (another is polled). 'google' starts Google's emulator.",
            valueName: "host:port|google"))
    var firestore: String?
    @Flag(help: "Start only the local cloud; register triggers yourself (PUT /herald/triggers).") var noFunctions = false
    @Option(
        name: .customLong("function"),
        help: ArgumentHelp(
            "A function running elsewhere (a container), e.g. onMessageCreated=http://onmessagecreated:8080/: its trigger and job call that URL, and no function process is started. Repeatable.",
            valueName: "name=url"))
    var remoteFunctions: [String] = []
    @Option(help: "Address the local cloud listens on (0.0.0.0 in a container).") var host = "127.0.0.1"
    @Option(
        name: .customLong("allow-host"),
        help: ArgumentHelp(
            "A host name requests may name besides IP addresses and localhost (the cloud's name in a compose network). Repeatable.", valueName: "name"))
    var allowedHosts: [String] = []
    @Option(
        name: .customLong("admin-from"),
        help: ArgumentHelp(
            "With --host beyond loopback: a network (ADDRESS/PREFIX) whose peers also reach the console, admin, FCM sink, token and trace endpoints, as this machine does (a container's bridge, a compose network). Repeatable.",
            valueName: "network"))
    var adminNetworks: [String] = []
    @Option(
        help: ArgumentHelp(
            "Processes per event function, each delivery going to the one with the fewest in flight, as Cloud Run routes to an instance with a free slot (1 to 8).",
            valueName: "n"))
    var instances = 1
    @Flag(
        help:
            "Admit each document's writes at Firestore's sustained rate (1 a second, bursts of 5): a commit that cannot be admitted within 5 s fails ABORTED, as Firestore fails it under contention (docs/local-cloud.md)."
    )
    var writeRateLimit = false
    @Flag(help: "Exit once the --send messages have been delivered and their pushes recorded (for scripts and tests).")
    var exitWhenIdle = false

    func validate() throws {
        guard (1...8).contains(instances) else { throw ValidationError("--instances takes 1 to 8, not \(instances)") }
        if let seed, seed != "demo", !FileManager.default.fileExists(atPath: seed) {
            throw ValidationError("--seed takes demo or a file of documents (.jsonl or .json); there is no \(seed)")
        }
        if let importPath, !FileManager.default.fileExists(atPath: importPath) { throw ValidationError("--import: there is no \(importPath)") }
        if firestore != nil, importPath != nil || exportOnExit != nil || (seed.map { $0 != "demo" } ?? false) {
            throw ValidationError("--import, --export-on-exit and --seed FILE work on the embedded store, not with --firestore")
        }
        for read in reads where DemoWorld.parseRead(read) == nil {
            throw ValidationError("--read takes 'READER→CONVERSATION', not \"\(read)\"")
        }
        for message in messages where DemoWorld.parseSend(message) == nil {
            throw ValidationError("--send takes 'SENDER→CONVERSATION: TEXT', not \"\(message)\"")
        }
        do { _ = try Schema.named(chosenSchema.value) } catch { throw ValidationError("\(error) (from \(chosenSchema.source))") }
        for remote in remoteFunctions where Self.parseRemote(remote) == nil {
            throw ValidationError("--function takes NAME=URL with NAME one of \(DevSupervisor.functionNames.joined(separator: ", ")), not \"\(remote)\"")
        }
        if !(1...3600).contains(accessTokenLifetime) { throw ValidationError("--access-token-lifetime takes 1 to 3600 seconds") }
        if let firestore, firestore != "google", firestore.split(separator: ":").count != 2 || Int(firestore.split(separator: ":").last ?? "") == nil {
            throw ValidationError("--firestore takes HOST:PORT, or google (Google's emulator, started by herald dev), not \"\(firestore)\"")
        }
    }

    /// A setting's value and where it came from (the banner says both): the option, then the
    /// variables a Firebase or Herald user already has set, then the default.
    struct Chosen: Equatable {
        var value: String
        var source: String
    }

    static func choose(
        _ option: String?, flag: String, variables: [String], default fallback: String,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Chosen {
        if let option { return Chosen(value: option, source: flag) }
        for name in variables {
            if let value = environment[name]?.trimmingCharacters(in: .whitespaces), !value.isEmpty { return Chosen(value: value, source: name) }
        }
        return Chosen(value: fallback, source: "default")
    }

    var chosenProject: Chosen { Self.choose(project, flag: "--project", variables: ["GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT"], default: "herald-local") }
    var chosenSchema: Chosen { Self.choose(schema, flag: "--schema", variables: ["HERALD_SCHEMA"], default: "default") }

    /// Says where the state lives, and whether it is an earlier run's (a second `herald dev --seed demo`
    /// is not a new demo): `--fresh` removes that database first.
    static func announce(dataDirectory: String, fresh: Bool, console: Console) {
        let database = (dataDirectory as NSString).appendingPathComponent("herald.sqlite")
        let exists = FileManager.default.fileExists(atPath: database)
        if fresh, exists {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: database + suffix) }
            console.print("data    \(dataDirectory)/: the earlier run's database removed (--fresh); starting empty")
        } else if exists {
            console.print(
                "data    \(dataDirectory)/: kept from an earlier run (documents, deliveries, pushes); start empty with --fresh, or use --ephemeral to keep nothing"
            )
        } else {
            console.print("data    \(dataDirectory)/: a new database (--ephemeral keeps nothing)")
        }
    }

    /// `onMessageCreated=http://host:8080/` → the function's name and its service URL (ending in `/`).
    static func parseRemote(_ text: String) -> (name: String, url: String)? {
        let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2, DevSupervisor.functionNames.contains(parts[0]), let url = URL(string: parts[1]),
            ["http", "https"].contains(url.scheme ?? ""), url.host != nil
        else { return nil }
        return (parts[0], parts[1].hasSuffix("/") ? parts[1] : parts[1] + "/")
    }

    func run() async throws {
        signal(SIGPIPE, SIG_IGN)
        let console = Console()
        var options = LocalCloudOptions()
        options.port = port
        options.host = host
        options.allowedHosts = allowedHosts
        options.writeRates.limit = writeRateLimit
        options.peerAccess = PeerAccess(
            adminNetworks: try adminNetworks.map { text in
                guard let network = PeerAccess.Network(text) else {
                    throw ValidationError("--admin-from takes ADDRESS/PREFIX (10.88.0.0/16, 0.0.0.0/0), not \"\(text)\"")
                }
                return network
            })
        options.dataDirectory = ephemeral ? nil : data
        if !ephemeral { Self.announce(dataDirectory: data, fresh: fresh, console: console) }
        options.project = chosenProject.value
        options.singleProject = true
        let launcher = firestore == "google" ? try GoogleEmulatorLauncher.find() : nil
        let firestore = launcher?.host ?? firestore
        options.documentsElsewhere = firestore.map { "http://\($0)" }
        options.delivery.maximumAttempts = maxAttempts
        options.delivery.maximumBackoff = .seconds(max(1, maxBackoff))
        options.accessTokenLifetime = TimeInterval(accessTokenLifetime)
        // Expo's push API and APNs on ports of their own, as exp.host and api.push.apple.com are.
        options.expoPort = try freeLoopbackPort()
        options.apnsPort = try freeLoopbackPort()
        let logger = Logger(label: "herald-dev") { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .warning
            return handler
        }
        let cloud = try await LocalCloud(
            options: options, logger: logger,
            onDelivery: { if !console.seeding.absorbs($0) { console.print(LiveLog.delivery($0)) } },
            onPush: { console.print(LiveLog.push($0)) },
            onServicePush: { console.print(LiveLog.push($0)) },
            onAuthLink: { console.print("auth    \($0)") },
            onJob: { console.print("cron    \($0.job): \($0.status.map(String.init) ?? "no answer") \($0.error?.prefix(160) ?? "")") })
        defer { cloud.close() }
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let app = cloud.application { portContinuation.yield($0) }
        let external = firestore.map {
            FirestoreClient(project: chosenProject.value, endpoint: "http://\($0)", credentials: EmulatorCredentials(), httpClient: .shared)
        }
        let watcher = external.map { ExternalFirestoreWatcher(firestore: $0, cloud: cloud) }
        let supervisor = DevSupervisor(
            command: self, cloud: cloud, external: external, watcher: watcher, emulator: launcher, ports: ports, console: console)
        try await supervisor.loadData()
        let watching: [ServiceGroupConfiguration.ServiceConfiguration] = watcher.map { [.init(service: $0)] } ?? []
        let group = ServiceGroup(
            configuration: .init(
                services: watching + [
                    .init(service: app), .init(service: cloud.pushStandIns.expoApplication()), .init(service: try cloud.pushStandIns.apnsApplication()),
                    .init(service: cloud.delivery), .init(service: cloud.scheduler), .init(service: cloud.webChannels),
                    .init(service: supervisor, successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup),
                ],
                gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
        if let failure = supervisor.failure.withLock({ $0 }) { throw failure }
    }
}

/// Prints whole lines from many tasks without interleaving them.
final class Console: Sendable {
    let lock = NSLock()
    let seeding = SeedingSummary()
    let functionLog = FunctionLogBook()
    func print(_ line: String) {
        lock.lock()
        defer { lock.unlock() }
        // A closed stdout (`herald dev | head`) must not kill the process and orphan its functions.
        try? FileHandle.standardOutput.write(contentsOf: Data((line + "\n").utf8))
    }
}

/// The live log's lines for what the local cloud itself sees.
enum LiveLog {
    static func delivery(_ report: DeliveryReport) -> String {
        let kind = report.eventType.split(separator: ".").last.map(String.init) ?? report.eventType
        let outcome: String
        if let status = report.status, report.error == nil {
            outcome = "\(status)" + (report.answer.flatMap(Self.summary).map { " \($0)" } ?? "")
        } else if report.deadLettered {
            outcome = "failed for good after \(report.attempt) attempts → dead letters: \(report.error ?? "")"
        } else {
            outcome = "\(report.status.map(String.init) ?? "no answer") (attempt \(report.attempt), will retry): \(report.error?.prefix(160) ?? "")"
        }
        let injected = report.injected.map { " [injected: \($0)]" } ?? ""
        let event = report.eventID.map { "  (event \($0.prefix(8)))" } ?? ""
        let writer = report.writer.map { ", written by \($0)" } ?? ""
        return "event   \(kind) \(report.document)\(writer) → \(report.trigger): \(outcome)\(injected)\(event)"
    }

    /// What the function says it did (its answer's `outcome`): "applied (2 writes, 3 pushes)",
    /// "skipped: the sender is not a member", "duplicate".
    static func summary(_ answer: String) -> String? {
        guard let json = try? JSONValue(parsing: Array(answer.utf8)), let outcome = json["outcome"]?.stringValue else { return nil }
        switch outcome {
        case "skipped": return "skipped" + (json["reason"]?.stringValue.map { ": \($0)" } ?? "")
        case "applied":
            guard let writes = json["writes"]?.int64Value, let pushes = json["pushes"]?.int64Value else { return outcome }
            return "applied (\(writes) write\(writes == 1 ? "" : "s"), \(pushes) push\(pushes == 1 ? "" : "es"))"
        default: return outcome
        }
    }

    /// A push Expo's or APNs's stand-in took: the same line as FCM's, naming the service.
    static func push(_ record: PushStandInRecords.Recorded) -> String {
        let message = record.message
        let alert = record.service == .apns ? message["aps"]?["alert"] : message
        let title = alert?["title"]?.stringValue
        let body = alert?["body"]?.stringValue
        let badge = (record.service == .apns ? message["aps"]?["badge"] : message["badge"]).map { " badge \($0.serialized())" } ?? ""
        let data = record.service == .apns ? JSONValue.object((message.objectValue ?? [:]).filter { $0.key != "aps" }) : message["data"] ?? .null
        let content = title == nil && body == nil ? "silent \(data.serialized())" : [title, body].compactMap { $0.map { "\"\($0)\"" } }.joined(separator: ": ")
        return "push    → \(record.token) (\(record.service == .apns ? "APNs" : "Expo")): \(content)\(badge)"
    }

    static func push(_ record: FCMSink.Recorded) -> String {
        let notification = record.message["notification"]
        let title = notification?["title"]?.stringValue
        let body = notification?["body"]?.stringValue
        let badge = record.message["apns"]?["payload"]?["aps"]?["badge"].map { " badge \($0.serialized())" } ?? ""
        let content =
            notification == nil
            ? "silent \(record.message["data"]?.serialized() ?? "")" : ([title, body].compactMap { $0.map { "\"\($0)\"" } }.joined(separator: ": "))
        return "push    → \(record.token ?? record.message["topic"]?.stringValue ?? "?"): \(content)\(badge)"
    }
}
