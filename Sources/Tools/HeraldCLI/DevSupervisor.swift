import ChatDemo
import ChatFunctions
import EmbeddedFirestore
import FirestoreEvents
import FirestoreModel
import Foundation
import GoogleClients
import HeraldCore
import HeraldHTTPClient
import HeraldRuntime
import LocalCloud
import ServiceLifecycle
import Supervision
import Synchronization
import WireFormats

/// Once the local cloud listens: starts each function as a process, registers its trigger, seeds,
/// sends, and on shutdown stops the functions.
final class DevSupervisor: Service, Sendable {
    struct Settings: Sendable {
        var schema: String
        var project: String
        /// Where the project and schema came from, for the banner.
        var origins: String
        /// `demo`, or a file of documents.
        var seed: String?
        var importPath: String?
        var exportOnExit: String?
        var messages: [String]
        var reads: [String]
        var startFunctions: Bool
        /// Functions running elsewhere: name → service URL.
        var remote: [String: String]
        var exitWhenIdle: Bool
        var dataDescription: String
        /// Processes per event function (`--instances`).
        var instances = 1
        /// What other machines reach, when the cloud listens beyond loopback (for the banner).
        var exposure: String?
    }

    let settings: Settings
    let cloud: LocalCloud
    /// The external Firestore (`--firestore`), or nil for the embedded one.
    let external: FirestoreClient?
    let ports: AsyncStream<Int>
    let console: Console
    let failure = Mutex<(any Error)?>(nil)
    /// The function processes started, for the console's Functions view.
    let running = Mutex<[FunctionProcess]>([])

    /// Polls `external` unless it takes triggers.
    let watcher: ExternalFirestoreWatcher?

    /// Google's emulator to start first (`--firestore google`).
    let emulator: GoogleEmulatorLauncher?

    init(
        command: Dev, cloud: LocalCloud, external: FirestoreClient?, watcher: ExternalFirestoreWatcher?, emulator: GoogleEmulatorLauncher?,
        ports: AsyncStream<Int>, console: Console
    ) {
        self.external = external
        self.watcher = watcher
        self.emulator = emulator
        settings = Settings(
            schema: Self.absolute(schema: command.chosenSchema.value), project: command.chosenProject.value,
            origins: "project from \(command.chosenProject.source), schema from \(command.chosenSchema.source)", seed: command.seed,
            importPath: command.importPath, exportOnExit: command.exportOnExit,
            messages: command.messages, reads: command.reads,
            startFunctions: !command.noFunctions && command.remoteFunctions.isEmpty,
            remote: Dictionary(command.remoteFunctions.compactMap(Dev.parseRemote), uniquingKeysWith: { _, last in last }),
            exitWhenIdle: command.exitWhenIdle,
            dataDescription: command.firestore.map { "documents in the Firestore at \($0)" }
                ?? (command.ephemeral ? "temporary database" : "data in \(command.data)/"),
            instances: command.instances, exposure: Self.exposure(host: command.host, adminNetworks: command.adminNetworks))
        self.cloud = cloud
        self.ports = ports
        self.console = console
    }

    static var functionNames: [String] { FunctionCatalog.names }

    /// The function executables that deploy (`Functions/NAME`, each its own product), beside this one:
    /// SwiftPM builds them with `herald` (HeraldCLI depends on them), and the herald image carries them.
    /// What `herald dev` runs is what a deployment runs, not this binary in another role.
    static func functionExecutables() throws -> [String: String] {
        let herald = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
        let folder = herald.deletingLastPathComponent()
        var found: [String: String] = [:]
        var missing: [String] = []
        for name in FunctionCatalog.names {
            let path = folder.appendingPathComponent(name).path
            if FileManager.default.isExecutableFile(atPath: path) { found[name] = path } else { missing.append(name) }
        }
        guard missing.isEmpty else {
            throw DevError(
                "the function executables \(missing.joined(separator: ", ")) are not beside herald in \(folder.path): build them with `swift build` (or run `swift run herald dev …`, which builds them)"
            )
        }
        return found
    }

    /// What other machines reach through `host`, for the banner: nil on loopback.
    static func exposure(host: String, adminNetworks: [String]) -> String? {
        guard !["127.0.0.1", "localhost", "::1"].contains(host) else { return nil }
        let trusted = adminNetworks.isEmpty ? "" : " and \(adminNetworks.joined(separator: ", "))"
        return "  exposed on \(host): other machines reach the Firestore API (REST, gRPC, WebChannel) only; "
            + "the console, admin, FCM sink, token and trace endpoints answer this machine\(trusted)"
    }

    /// A schema file by its absolute path: the functions run it from their own working directory.
    static func absolute(schema: String) -> String {
        guard Schema.presets[schema] == nil, !schema.hasPrefix("{"), !schema.hasPrefix("/") else { return schema }
        return URL(fileURLWithPath: schema).standardizedFileURL.path
    }

    /// The functions `herald dev` runs, with the trigger each one needs in this schema (none for one
    /// that only runs on a schedule), and Cloud Scheduler's job for those that run on one.
    static func functions(schema: String) throws -> [(name: String, trigger: Trigger?, job: (name: String, schedule: String, path: String)?)] {
        let settings = try FunctionSettings.reading(schema: schema)
        return try FunctionCatalog.all.map { function in
            (function.name, try function.trigger(settings: settings), function.schedule.map { ($0.job, $0.cron, $0.path) })
        }
    }

    func run() async throws {
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { return }
        cloud.consoleDomain = DemoConsole(world: DemoWorld(schema: try Schema.named(settings.schema), project: settings.project), supervisor: self)
        let base = "http://127.0.0.1:\(port)"
        var processes: [FunctionProcess] = []
        var emulatorProcess: ChildProcess?
        do {
            if let emulator {
                console.print("firestore  starting Google's Firestore emulator on \(emulator.host) (sending its events to 127.0.0.1:\(port))")
                emulatorProcess = try await emulator.start(functionsHost: "127.0.0.1:\(port)")
            }
            if settings.startFunctions { processes = try await startFunctions(base: base) }
            running.withLock { [processes] in $0 = processes }
            for (name, trigger, job) in try Self.functions(schema: settings.schema) {
                if let service = settings.remote[name] { try register(name: name, trigger: trigger, job: job, service: service) }
            }
            if let external, let watcher { await connectTriggers(external, watcher: watcher, port: port) }
            if settings.seed == "demo" { try await seedDemo() }
            printBanner(base: base, processes: processes)
            try await sendMessages()
            if !settings.reads.isEmpty {
                try await waitUntilIdle()
                try await markRead()
            }
            if settings.exitWhenIdle {
                try await waitUntilIdle()
            } else {
                try? await gracefulShutdown()
            }
        } catch {
            failure.withLock { $0 = error }
        }
        for process in processes { process.markStopping() }
        for process in processes { await process.stop() }
        if let directory = settings.exportOnExit { await export(to: directory) }
        if let emulatorProcess { _ = await emulatorProcess.stop() }
        await printDeadLetters()
    }

    /// Registers the triggers with the external Firestore (Google's emulator), or says it will be polled.
    func connectTriggers(_ external: FirestoreClient, watcher: ExternalFirestoreWatcher, port: Int) async {
        let emulator = EmulatorTriggers(firestore: external, project: settings.project, transport: .shared)
        do {
            let count = try await emulator.connect(cloud.triggers.all, probes: cloud.emulatorProbes)
            watcher.exactTriggers.store(true, ordering: .relaxed)
            console.print(
                "events  \(external.endpointHost) sends each write's event (\(count) trigger patterns registered with it)")
        } catch {
            console.print(
                "events  polling \(external.endpointHost) every 250 ms, so writes between two looks are one event: \(error). "
                    + "Google's emulator started with --functions_emulator 127.0.0.1:\(port) sends each write's event.")
        }
    }

    func startFunctions(base: String) async throws -> [FunctionProcess] {
        let keyFile = try cloud.writeKeyFile(baseURL: base)
        let executables = try Self.functionExecutables()
        let environment = [
            "GOOGLE_CLOUD_PROJECT": settings.project, "GOOGLE_APPLICATION_CREDENTIALS": keyFile,
            "FIRESTORE_ENDPOINT": external == nil ? base : "", "FIRESTORE_EMULATOR_HOST": external.map { $0.endpointHost } ?? "",
            "FCM_ENDPOINT": base, "HERALD_SCHEMA": settings.schema, "LOG_FORMAT": "json",
            "HERALD_DEV_PARENT": String(getpid()), "HERALD_OIDC_JWKS_URL": "\(base)/herald/oidc/jwks",
            // The local cloud's account is the only caller, as the trigger's and scheduler's are on Google Cloud.
            "HERALD_ALLOWED_CALLERS": cloud.identity.clientEmail,
            // Their spans, for the console to show under each event (as Cloud Trace would).
            "OTEL_EXPORTER_OTLP_ENDPOINT": "\(base)/herald/otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
        ].merging(pushServiceEnvironment) { _, new in new }
        let functions = try Self.functions(schema: settings.schema)
        func launch(
            _ function: (name: String, trigger: Trigger?, job: (name: String, schedule: String, path: String)?), port: Int, service: String
        ) async throws -> FunctionProcess {
            // Like Cloud Run without unauthenticated access: every caller needs an identity token for this
            // service (every instance checks the service's audience).
            try await FunctionProcess.start(
                name: function.name, port: port, executable: executables[function.name] ?? function.name,
                environment: environment.merging(["HERALD_REQUIRE_OIDC_AUDIENCE": service]) { _, new in new },
                printLine: console.print,
                recordLine: { [console, name = function.name] line in
                    // Parsed once for both.
                    let json = try? JSONValue(parsing: Array(line.utf8))
                    console.functionLog.append(json, function: name)
                    return console.seeding.absorbs(functionLine: json)
                })
        }
        var processes: [FunctionProcess] = []
        // Each process: its function, its port, and the service (audience) its instances share.
        var placed: [(function: Int, port: Int, service: String)] = []
        for (index, function) in functions.enumerated() {
            // An event function as several instances (`--instances`): Eventarc spreads events over them.
            let ports = try (0..<(function.trigger == nil ? 1 : settings.instances)).map { _ in try freeLoopbackPort() }
            let service = "http://127.0.0.1:\(ports[0])/"
            for port in ports {
                processes.append(try await launch(function, port: port, service: service))
                placed.append((index, port, service))
            }
        }
        func registerAll() throws {
            for (index, function) in functions.enumerated() {
                let urls = placed.filter { $0.function == index }.map { "http://127.0.0.1:\($0.port)/" }
                guard let first = urls.first, let service = placed.first(where: { $0.function == index })?.service else { continue }
                try register(
                    name: function.name, trigger: function.trigger, job: function.job, service: first, instances: Array(urls.dropFirst()), audience: service)
            }
        }
        try registerAll()
        for index in processes.indices {
            var attempts = 1
            while await !processes[index].waitUntilHealthy() {
                let failed = processes[index]
                // A process that ended at start may have lost its port to another socket between the choice
                // and the bind: it gets another port (and its trigger the new URL), twice at most.
                guard attempts < 3, failed.process?.hasExited ?? true else {
                    for p in processes { await p.stop() }
                    throw DevError("\(failed.name) did not start; see its output above")
                }
                attempts += 1
                await failed.stop()
                placed[index].port = try freeLoopbackPort()
                processes[index] = try await launch(functions[placed[index].function], port: placed[index].port, service: placed[index].service)
                try registerAll()
            }
        }
        return processes
    }

    /// How the functions reach the Expo and APNs stand-ins, as a deployment reaches Expo and Apple.
    var pushServiceEnvironment: [String: String] { cloud.pushStandIns.functionEnvironment }

    /// Registers the function's trigger and Cloud Scheduler job against its service URL.
    func register(
        name: String, trigger: Trigger?, job: (name: String, schedule: String, path: String)?, service: String, instances: [String] = [],
        audience: String? = nil
    ) throws {
        if let trigger {
            // As many deliveries in flight as the deployed service takes (Infra/: its concurrency per instance).
            cloud.triggers.register(
                function: name, pattern: trigger.pattern, kinds: trigger.kinds, url: service, instances: instances, audience: audience,
                concurrency: FunctionCatalog.named(name)?.deployment.concurrency)
        }
        if let job {
            // Cloud Scheduler's jobs, as Infra/ declares them (run one now: POST /herald/scheduler/jobs/NAME:run).
            cloud.scheduler.register(
                ScheduledJob(
                    name: job.name, schedule: try CronSchedule(job.schedule),
                    url: String(service.dropLast()) + job.path, audience: audience ?? service))
        }
    }

    /// `--import DIR` and `--seed FILE`, read, checked and committed before the cloud listens: no client
    /// ever sees the store without them, or writes where a refused import would have gone. (`--seed demo`
    /// comes once the functions run: its writes fire their triggers.)
    func loadData() async throws {
        if let importPath = settings.importPath { try await importDocuments(from: importPath, existing: .replace) }
        if let seed = settings.seed, seed != "demo" { try await importDocuments(from: seed, existing: .keep) }
    }

    /// `--import` and `--seed FILE`: documents stored as they are, no trigger fired; Firebase Auth's users
    /// too where the folder holds them (`auth_export/accounts.json`, as `herald export` and Google's emulator write it).
    func importDocuments(from path: String, existing: DocumentArchive.Existing) async throws {
        try await importUsers(from: path)
        let verb = existing == .replace ? "import " : "seed   "
        let status = try await DocumentArchive.importDocuments(from: path, into: cloud.firestore, project: settings.project, existing: existing) {
            [console] progress in
            if progress.documents % 20_000 == 0, progress.documents > 0 { console.print("\(verb) \(progress.documents) documents so far…") }
        }
        let kept = status.documents - status.written
        console.print("\(verb) \(path): \(status.written) documents written\(kept > 0 ? ", \(kept) left as they were" : "") (no triggers fired)")
    }

    func importUsers(from path: String) async throws {
        let file = (path as NSString).appendingPathComponent(AuthArchive.exportFile)
        guard FileManager.default.fileExists(atPath: file) else { return }
        guard let size = try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int, size <= 256 << 20 else {
            throw DevError("\(file) is over 256 MiB")
        }
        let json = try JSONValue(parsing: Array(try Data(contentsOf: URL(fileURLWithPath: file))))
        let added = try await cloud.auth.archive.importAccounts(json, project: settings.project)
        console.print("import  \(file): \(added) Firebase Auth users")
    }

    func export(to directory: String) async {
        do {
            let users = try await cloud.auth.archive.exportAccounts(project: settings.project)
            let file = (directory as NSString).appendingPathComponent(AuthArchive.exportFile)
            try FileManager.default.createDirectory(atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(users.serialized().utf8).write(to: URL(fileURLWithPath: file))
        } catch {
            console.print("export  Firebase Auth's users failed: \(error)")
        }
        await exportDocuments(to: directory)
    }

    func exportDocuments(to directory: String) async {
        do {
            let count = try await DocumentArchive.export(cloud.firestore, to: directory, project: settings.project)
            console.print("export  \(count) documents to \(directory)/\(DocumentArchive.documentsFile)")
        } catch {
            console.print("export  failed: \(error)")
            failure.withLock { $0 = $0 ?? error }
        }
    }

    func seedDemo() async throws {
        let world = DemoWorld(schema: try Schema.named(settings.schema), project: settings.project)
        var created = 0
        let writes = try world.seed()
        console.seeding.begin(documents: writes.map(\.document.path))
        // One write at a time: a second `--seed demo` on kept data leaves existing documents alone.
        for write in writes where try await commit(write) { created += 1 }
        console.print("seed    demo world: \(created) documents written (Alice, Bob, Carol, Dave, Erin; chats \"family\", \"alice-bob\" and \"book-club\")")
        // Each person a Firebase Auth user too, their uid their user document's id: an app can sign in as them.
        for person in DemoWorld.people {
            try await cloud.auth.ensureUser(
                uid: person.id, email: DemoWorld.email(of: person), password: DemoWorld.password, displayName: person.name, project: settings.project)
        }
        console.print("auth    sign in as alice@example.com, bob@…, carol@…, dave@… or erin@example.com, password \"\(DemoWorld.password)\"")
        // Their events (tokenCleanup for each user or token document) as one line; a bounded wait, so that functions that
        // cannot answer never hold the banner.
        _ = try? await cloud.waitUntilIdle(timeout: .seconds(20), quiet: 5, interval: .milliseconds(100))
        if let summary = console.seeding.end() { console.print(summary) }
    }

    func sendMessages() async throws {
        let world = DemoWorld(schema: try Schema.named(settings.schema), project: settings.project)
        for text in settings.messages {
            guard let (write, parsed) = try world.message(sending: text, at: .now()) else { continue }
            guard try await commit(write) else { throw DevError("\(write.document.path) already exists; the message was not written") }
            console.print("write   \(write.document.path): \(parsed.sender) → \(parsed.conversation): \"\(parsed.text)\"")
        }
    }

    func markRead() async throws {
        for text in settings.reads {
            guard let (reader, conversation) = DemoWorld.parseRead(text) else { continue }
            let count = try await open(conversation, by: reader)
            console.print("read    \(reader) opened \(conversation): \(count) message(s) marked read")
        }
    }

    /// What the app writes when `reader` opens `conversation`: each message it did not send, read. Returns how many.
    func open(_ conversation: String, by reader: String) async throws -> Int {
        let world = DemoWorld(schema: try Schema.named(settings.schema), project: settings.project)
        let (parent, query) = try world.messagesQuery(in: conversation)
        let messages =
            if let external { try await external.runQuery(query, parent: parent) } else {
                try await cloud.firestore.runQuery(
                    query, parent: parent.map { $0.path } ?? "", database: "projects/\(settings.project)/databases/(default)")
            }
        let reads = world.reads(by: reader, of: messages)
        for write in reads { _ = try await commit(write) }
        return reads.count
    }

    /// The first `limit` documents of a top-level collection, in id order, wherever the documents live.
    func documents(in collection: String, limit: Int) async throws -> [FirestoreDocument] {
        let query = StructuredQuery(collectionID: collection, orderBy: [.init(FieldPath(["__name__"]))], limit: limit)
        if let external { return try await external.runQuery(query, parent: nil) }
        return try await cloud.firestore.runQuery(query, parent: "", database: "projects/\(settings.project)/databases/(default)")
    }

    /// Commits one write to wherever the documents live; false if its `exists: false` precondition failed.
    func commit(_ write: Write) async throws -> Bool {
        do {
            if let external {
                _ = try await external.commit([write])
            } else {
                _ = try await cloud.firestore.commit([write], databaseName: write.document.databaseName)
            }
            return true
        } catch let error as LocalAPIError where error.status == "ALREADY_EXISTS" {
            return false
        } catch let error as GoogleAPIError where error.status == .alreadyExists {
            return false
        }
    }

    /// Until no delivery is pending for a moment (functions' own writes cause more events).
    func waitUntilIdle() async throws {
        while try await !cloud.waitUntilIdle(timeout: .seconds(60), quiet: 5, interval: .milliseconds(200)) { try Task.checkCancellation() }
    }

    func printBanner(base: String, processes: [FunctionProcess]) {
        let database = "projects/\(settings.project)/databases/(default)"
        let firestore =
            external.map { "http://\($0.endpointHost)/v1/\(database)/documents   (external)" }
            ?? "\(base)/v1/\(database)/documents   (FIRESTORE_EMULATOR_HOST=127.0.0.1:\(base.split(separator: ":").last!))"
        var lines = [
            "Herald local cloud on \(base)  (project \(settings.project), schema \(settings.schema), \(settings.dataDescription))",
            "  settings         \(settings.origins)",
            "  Firestore REST   \(firestore)",
            "  console          \(base)/   (open it in a browser)",
            "  Firebase Auth    \(base)   (connectAuthEmulator(auth, \"\(base)\"); the SDKs' Identity Toolkit calls)",
            "  pushes           \(base)/herald/fcm/messages, /herald/expo/messages, /herald/apns/messages",
            "  Expo push API    http://127.0.0.1:\(cloud.options.expoPort)/--/api/v2/push/send",
            "  APNs             https://127.0.0.1:\(cloud.options.apnsPort)/3/device/…   (HTTP/2; trust \(cloud.pushStandIns.credentials.authorityFile))",
            "  deliveries       \(base)/herald/deliveries   (dead letters: ?state=dead)",
        ]
        for process in processes { lines.append("  \(process.name.padding(toLength: 17, withPad: " ", startingAt: 0))http://127.0.0.1:\(process.port)/") }
        if let exposure = settings.exposure { lines.append(exposure) }
        lines.append("Send a message:  swift run herald send --url \(base) 'alice→family: Dinner at 6pm'    Stop: Ctrl-C")
        console.print(lines.joined(separator: "\n"))
    }

    func printDeadLetters() async {
        guard let dead = try? await cloud.deliveries(state: "dead"), !dead.isEmpty else { return }
        console.print("dead letters: \(dead.count) event(s) could not be delivered:")
        for item in dead.prefix(20) { console.print("  \(item.serialized())") }
    }
}
