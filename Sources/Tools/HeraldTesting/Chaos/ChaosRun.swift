import AsyncHTTPClient
import ChatDemo
import ChatFunctions
import FirestoreModel
import Foundation
import GoogleClients
import HeraldCore
import HeraldHTTPClient
import HeraldRuntime
import PushTokens
import Supervision
import Synchronization
import WireFormats

#if canImport(Glibc)
import Glibc
#endif

/// How hard a chaos run pushes `herald dev`.
public struct ChaosSettings: Sendable {
    public var schema = "default"
    public var users = 200
    public var conversations = 120
    public var messages = 2000
    /// App writers running at once.
    public var writers = 12
    /// After each message, the chance that some member opens a conversation (reads it), and that some user heartbeats.
    public var readProbability = 0.35
    public var heartbeatProbability = 0.5
    /// Of those reads, the share made by two of the reader's devices at once.
    public var twoDevicesReadProbability = 0.3
    public var roamingDevices = 10
    public var tokenMoves = 60
    /// Share of Herald's requests to Firestore, FCM and the token endpoint that fail.
    public var faultRate = 0.1
    /// A function process is SIGKILLed about this often (nil: never).
    public var killInterval: Duration? = .seconds(4)
    public var duplicateProbability = 0.05
    public var dropResponseProbability = 0.05
    public var maximumDelay: Duration = .milliseconds(300)
    /// Message events delivered without their data (as Eventarc sends one over its size limit).
    public var omitDataProbability = 0.05
    /// Messages the sender deletes (unsends) at once, before or after their events are handled.
    public var unsendProbability = 0.03
    /// How long FCM takes to answer a `slow` fault: past the functions' wait for it (60% of the push lease).
    public var slowFCM: Duration = .seconds(12)
    /// How long the backlog may take to drain once the faults stop.
    public var settleTimeout: Duration = .seconds(300)
    public var seed: UInt64 = 1

    public init() {}

    /// `herald dev` for a chaos run: API timeouts and push leases short enough for failures to resolve
    /// within the run, deliveries retried as often as a real trigger would but at most 8 s apart (the
    /// functions answer 503 within seconds, so a backlog would otherwise wait out minute-long backoffs),
    /// and access tokens that expire every few seconds, so functions keep going back to the (failing)
    /// token endpoint.
    public static let devArguments = ["--max-attempts", "40", "--max-backoff", "8", "--access-token-lifetime", "305"]
    public static let devEnvironment = ["HERALD_API_TIMEOUT": "2", "HERALD_PUSH_LEASE": "10"]
    /// The apps' own requests carry this user agent and get no faults: the faults are Google's, on Herald's traffic.
    public static let appUserAgent = "herald-chaos-app"
}

/// Drives `herald dev` with concurrent app writers while Google's APIs fail and function processes
/// die, then checks the documents and pushes against the truth computed from the messages.
public struct ChaosRun: Sendable {
    public let settings: ChaosSettings
    public let dev: RunningDev
    public let project: String
    /// Messages the writers deleted, with their conversation and sender.
    let unsent = SharedTable<(conversation: String, sender: String)>()

    public init(settings: ChaosSettings, dev: RunningDev, project: String = "e2e") {
        self.settings = settings
        self.dev = dev
        self.project = project
    }

    public func run() async throws -> ChaosReport {
        let schema = try Schema.load(FunctionSettings.reading(schema: settings.schema))
        guard schema.tokens.layout.userDocumentField != nil, !(schema.tokens.layout is SingleTokenField) else {
            throw StillBusy(description: "chaos runs need a schema that keeps several tokens per user in the user document")
        }
        let world = ChaosWorld(users: settings.users, conversations: settings.conversations, roamingDevices: settings.roamingDevices, seed: settings.seed)
        let demo = DemoWorld(schema: schema, project: project)
        let app = FirestoreClient(
            project: project, endpoint: dev.base, credentials: EmulatorCredentials(), httpClient: .shared,
            userAgent: ChaosSettings.appUserAgent)
        _ = try await app.commitInBatches(try demo.seed(people: world.people, conversations: world.conversations))
        try await dev.waitUntilIdle(timeout: .seconds(120))

        try await setFaults(on: true)
        let clock = ContinuousClock()
        let started = clock.now
        let done = Flag()
        let calm = Flag()
        let nextMessage = Counter()
        let writerErrors = Counter()
        let kills = Counter()
        enum Finished: Sendable {
            case writer, killer
            case mover(owners: [String: String])
            case drained(after: Duration)
        }
        var (owners, driven, drained): ([String: String], Duration, Duration) = ([:], .zero, .zero)
        try await withThrowingTaskGroup(of: Finished.self) { group in
            for _ in 0..<settings.writers {
                group.addTask {
                    while true {
                        let n = nextMessage.take()
                        guard n < settings.messages else { return .writer }
                        do { try await appTurn(n, world: world, demo: demo, app: app) } catch { writerErrors.increment() }
                    }
                }
            }
            group.addTask { .mover(owners: try await moveDevices(world: world, demo: demo, app: app, done: done, errors: writerErrors)) }
            if let interval = settings.killInterval {
                // Functions die while the writers write and while the backlog drains.
                group.addTask {
                    while !calm.isSet {
                        try await Task.sleep(for: interval * Double.random(in: 0.5...1.5))
                        if !calm.isSet, killOneFunction() { kills.increment() }
                    }
                    return .killer
                }
            }
            var writersLeft = settings.writers
            while let finished = try await group.next() {
                switch finished {
                case .writer:
                    writersLeft -= 1
                    guard writersLeft == 0 else { continue }
                    done.set()
                    driven = clock.now - started
                    // The faults go on until every event so far is handled.
                    group.addTask {
                        let start = clock.now
                        do {
                            try await dev.waitUntilIdle(timeout: settings.settleTimeout)
                        } catch let error as StillBusy {
                            // What would not settle, to see why.
                            let stuck = (try? await dev.deliveries(state: "pending")) ?? []
                            let inFlight = (try? await dev.deliveries(state: "in_flight")) ?? []
                            throw StillBusy(
                                description: "\(error.description): \(stuck.count) pending, \(inFlight.count) in flight: "
                                    + (stuck + inFlight).prefix(10).map { "\($0)" }.joined(separator: "\n") + "\n" + dev.output.suffix(6000))
                        }
                        calm.set()
                        return .drained(after: clock.now - start)
                    }
                case .mover(let last): owners = last
                case .drained(let after): drained = after
                case .killer: break
                }
            }
        }
        try await setFaults(on: false)
        let settleStart = clock.now
        try await dev.waitUntilIdle(timeout: .seconds(60))
        let settled = drained + (clock.now - settleStart)
        // Restarts print asynchronously; give the last one a moment.
        try await Task.sleep(for: .seconds(1))

        // Every service's records, in FCM's shape: the same checks whichever service carried a push.
        let pushes = try await dev.pushes()
        let output = dev.output
        let interrupted = Self.interruptedMessages(in: output)
        let truth = try await ChaosTruth(
            world: world, schema: schema, demo: demo, app: app, owners: owners, interrupted: interrupted,
            unanswered: Self.unansweredPushes(in: output), unsent: unsent.all
        ).check(pushes: pushes)
        let deliveries =
            try JSONValue(parsing: Array(try await HTTPClient.shared.get("\(dev.base)/herald/deliveries").body.utf8))["deliveries"]?.arrayValue ?? []
        let faults = try JSONValue(parsing: Array(try await HTTPClient.shared.get("\(dev.base)/herald/faults").body.utf8))["injected"]?.objectValue ?? [:]
        func lines(containing text: String) -> Int { output.components(separatedBy: text).count - 1 }
        return ChaosReport(
            messages: settings.messages, users: world.people.count, conversations: world.conversations.count,
            events: deliveries.count, attempts: deliveries.reduce(0) { $0 + (Int($1["attempts"]?.serialized() ?? "") ?? 0) },
            faults: faults.mapValues { Int($0.serialized()) ?? 0 },
            injectedDuplicates: lines(containing: "[injected: duplicate"), droppedAnswers: lines(containing: "[injected: response dropped]"),
            dataOmitted: lines(containing: "[injected: data omitted"), unsent: unsent.all.count,
            unanswered: lines(containing: "it may have been delivered and is sent once more"),
            unansweredTwice: lines(containing: "it may have been delivered and is not sent a third time"),
            resentDeliveredTwice: truth.resentDeliveredTwice, unansweredUndelivered: truth.unansweredUndelivered,
            kills: kills.value, restarts: lines(containing: "starting it again"),
            duplicatesSeen: lines(containing: "duplicate delivery: already applied"),
            pushesRecorded: pushes.count, duplicatesEmitted: truth.duplicatesEmitted, repeatsAfterKill: truth.repeatsAfterKill,
            interruptedDeliveries: interrupted.count, checks: truth.checks, badgesChecked: truth.badgesChecked,
            mismatches: truth.mismatches,
            deadLetters: try await dev.deadLetters().map { "\($0["document"]?.stringValue ?? "?"): \($0["lastError"]?.stringValue ?? "no reason")" },
            writerErrors: writerErrors.value, pushesGivenUp: lines(containing: "failed for good:"), driven: driven, settled: settled)
    }

    /// After a failed run: keeps `herald dev`'s log past the run, and prints where and what it says about the mismatches.
    public static func printEvidence(of report: ChaosReport, dev: RunningDev) {
        let kept = FileManager.default.temporaryDirectory.appendingPathComponent("herald-chaos-\(UUID().uuidString.prefix(8)).log")
        try? FileManager.default.copyItem(at: dev.log, to: kept)
        print("herald dev's log is kept at \(kept.path); what it says about the mismatches:")
        for line in evidence(for: report.mismatches, in: dev.output).prefix(200) { print("  " + line) }
    }

    /// The lines of `herald dev`'s log that may explain the mismatches: the deliveries of each message
    /// named, the functions' lines for those events, and every push given up on.
    public static func evidence(for mismatches: [String], in log: String) -> [String] {
        let messages = mismatches.compactMap { text -> String? in
            text.range(of: #"^m[0-9]+"#, options: .regularExpression).map { "/messages/\(text[$0]) " }
        }
        let lines = log.split(separator: "\n").map(String.init)
        let events = Set(
            lines.filter { line in messages.contains { line.contains($0) } }.compactMap { line in
                line.range(of: #"\(event [0-9a-f]{8}\)"#, options: .regularExpression).map { String(line[$0]) }
            })
        return lines.filter { line in
            line.contains("failed for good:") || messages.contains { line.contains($0) } || events.contains { line.contains($0) }
        }
    }

    /// Messages whose onMessageCreated delivery got no answer because the process was killed under it.
    static func interruptedMessages(in output: String) -> Set<String> {
        Set(
            output.split(separator: "\n").compactMap { line -> String? in
                // The delivery itself, or its injected copy, cut off by a kill.
                guard line.contains("→ onMessageCreated: "), line.contains("no answer"),
                    line.contains("the connection closed before the answer was complete") || line.contains("remoteConnectionClosed"),
                    let range = line.range(of: #"/messages/m[0-9]+ "#, options: .regularExpression)
                else { return nil }
                return String(line[range].dropFirst("/messages/".count).dropLast())
            })
    }

    /// (message, user) pairs whose push its service (FCM, Expo's, APNs) had not answered by the send's deadline: `once` were sent
    /// once more by the next delivery (a device may then show the push twice in the sink, under one
    /// collapse id: one alert), `twice` were unanswered again and not sent a third time (a device may lack
    /// it when FCM took neither).
    static func unansweredPushes(in output: String) -> (once: Set<String>, twice: Set<String>) {
        var messageOfEvent: [String: String] = [:]
        var unanswered: [(user: String, event: String, again: Bool)] = []
        for line in output.split(separator: "\n") {
            guard let event = line.range(of: #"\(event [0-9a-f]+\)$"#, options: .regularExpression).map({ String(line[$0].dropFirst(7).dropLast()) })
            else { continue }
            if line.contains("→ onMessageCreated: "), let range = line.range(of: #"/messages/m[0-9]+ "#, options: .regularExpression) {
                messageOfEvent[event] = String(line[range].dropFirst("/messages/".count).dropLast())
            } else if PushTokenKind.allCases.contains(where: { line.contains("\($0.serviceName) had not answered a push to a device of ") }),
                let range = line.range(of: #"a device of [^ ]+ "#, options: .regularExpression)
            {
                unanswered.append((String(line[range].dropFirst("a device of ".count).dropLast()), event, line.contains("a second time")))
            }
        }
        func pairs(again: Bool) -> Set<String> {
            Set(unanswered.filter { $0.again == again }.compactMap { pair in messageOfEvent[pair.event].map { "\($0)/\(pair.user)" } })
        }
        return (pairs(again: false), pairs(again: true))
    }

    /// One app turn: message `n` in a random conversation; maybe someone opens a conversation, maybe someone heartbeats.
    func appTurn(_ n: Int, world: ChaosWorld, demo: DemoWorld, app: FirestoreClient) async throws {
        let conversation = world.conversations.randomElement()!
        let sender = conversation.members.randomElement()!
        // Message times follow n, so the newest message of a conversation is the one with the highest n.
        let time = ChaosRun.epoch.adding(.milliseconds(n))
        let message = try demo.message(from: sender, in: conversation.id, text: "Message \(n)", id: "m\(n)", at: time, senderName: world.name(of: sender))
        _ = try await app.commit([message])
        if Double.random(in: 0..<1) < settings.unsendProbability {
            try await Task.sleep(for: .milliseconds(Int64.random(in: 0...200)))
            unsent["m\(n)"] = (conversation.id, sender)
            _ = try await app.commit([Write(.delete(message.document))])
        }
        if Double.random(in: 0..<1) < settings.readProbability {
            // Often the conversation just written to, racing the new message's own event.
            let opened = Bool.random() ? conversation : world.conversations.randomElement()!
            let reader = opened.members.filter { $0 != sender || opened.members.count == 1 }.randomElement()!
            let (parent, query) = try demo.messagesQuery(in: opened.id)
            let unread = try await app.runQuery(query, parent: parent).filter {
                !(Schema.userIDs(in: $0[demo.schema.readByField])?.contains(reader) ?? false)
            }
            if Double.random(in: 0..<1) < settings.twoDevicesReadProbability {
                // A phone and a tablet opening the chat at once: two receipts for the same messages.
                async let phone = app.commitInBatches(demo.reads(by: reader, of: unread))
                async let tablet = app.commitInBatches(demo.reads(by: reader, of: unread))
                _ = try await (phone, tablet)
            } else {
                _ = try await app.commitInBatches(demo.reads(by: reader, of: unread))
            }
        }
        if Double.random(in: 0..<1) < settings.heartbeatProbability {
            _ = try await app.commit([try demo.heartbeat(of: world.people.randomElement()!.id, at: .now())])
        }
    }

    static let epoch = Timestamp.now()

    /// Signs roaming devices into users who have none and never had that one, one after another, until
    /// the writers are done; returns who has each device last.
    func moveDevices(world: ChaosWorld, demo: DemoWorld, app: FirestoreClient, done: Flag, errors: Counter) async throws -> [String: String] {
        var owners = world.initialOwners
        // A device never returns to an account it was in: a return that overtakes the events of the
        // moves before it is the one order tokenCleanup's claims do not settle (see TokenCleanup).
        var held = Set(owners.map { "\($0.key) \($0.value)" })
        var moves = 0
        while moves < settings.tokenMoves, !done.isSet, let device = world.roamingDevices.randomElement() {
            let taken = Set(owners.values)
            guard let user = world.people.map(\.id).filter({ !taken.contains($0) && !held.contains("\(device) \($0)") }).randomElement() else { break }
            held.insert("\(device) \(user)")
            do {
                _ = try await app.commit([try demo.signIn(user, onDeviceWith: device)])
                owners[device] = user
                moves += 1
            } catch {
                errors.increment()
            }
            try await Task.sleep(for: .milliseconds(Int64.random(in: 100...300)))
        }
        return owners
    }

    func setFaults(on: Bool) async throws {
        let everything = APIKinds.all
        let faults: JSONValue = [
            "rate": .number(on ? String(settings.faultRate) : "0"), "hangMilliseconds": 3000, "sparedUserAgent": .string(ChaosSettings.appUserAgent),
            "slowMilliseconds": .integer(Int64(settings.slowFCM / .milliseconds(1))),
            // FCM gets no fault after which it accepted the message and said so never: no sender can tell an
            // accepted send whose answer was lost from one that failed. A slow one answers, too late.
            "kinds": ["firestore": everything, "fcm": ["unavailable", "rateLimited", "reset", "timeout", "slow"], "token": everything],
        ]
        let delivery: JSONValue = [
            "duplicateProbability": .number(on ? String(settings.duplicateProbability) : "0"),
            "dropResponseProbability": .number(on ? String(settings.dropResponseProbability) : "0"),
            "maximumDelayMilliseconds": .integer(on ? Int64(settings.maximumDelay / .milliseconds(1)) : 0),
            "omitDataProbability": .number(on ? String(settings.omitDataProbability) : "0"),
            // Message documents can outgrow an event; user documents do not. (A deletion without its data
            // cannot say whom the message counted: that loss is known, and not what this run checks.)
            "omitDataTriggers": ["onMessageCreated", "onReadReceipt"],
        ]
        // Expo's and APNs's stand-ins answer 429 or 503 at the same rate (a failure both services document).
        let pushServices: JSONValue = ["rate": .number(on ? String(settings.faultRate) : "0")]
        for (path, body) in [("faults", faults), ("delivery/faults", delivery), ("expo/faults", pushServices), ("apns/faults", pushServices)] {
            let answer = try await HTTPClient.shared.post(
                "\(dev.base)/herald/\(path)", headers: ["content-type": "application/json"], body: Array(body.serialized().utf8))
            guard answer.status == 200 else { throw StillBusy(description: "cannot set \(path): \(answer.body)") }
        }
    }

    enum APIKinds {
        static let all: JSONValue = ["unavailable", "rateLimited", "reset", "resetAfterApplying", "timeout"]
    }

    /// SIGKILLs one of `herald dev`'s function processes; false when none is running.
    func killOneFunction() -> Bool {
        // herald dev's children are the function executables it started (`NAME serve …`).
        guard let victim = ChildProcesses.of(dev.process.pid).filter({ $0.commandLine.contains(" serve ") }).randomElement() else { return false }
        return kill(victim.pid, SIGKILL) == 0
    }
}

/// A process's children, read from /proc.
public enum ChildProcesses {
    public static func of(_ parent: Int32) -> [(pid: Int32, commandLine: String)] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap { entry in
            guard let pid = Int32(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return nil }
            // After the command name in parentheses: state, then the parent's pid.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 1, Int32(fields[1]) == parent else { return nil }
            let command = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(entry)/cmdline"))).map { String(decoding: $0, as: UTF8.self) } ?? ""
            return (pid, command.replacingOccurrences(of: "\0", with: " "))
        }
    }
}
