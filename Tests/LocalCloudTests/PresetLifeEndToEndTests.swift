import AsyncHTTPClient
import ChatFunctions
import Foundation
import Glibc
import FirestoreModel
import GoogleClients
import HeraldTesting
import Synchronization
import Testing

/// A day in the life of each preset on `herald dev --ephemeral` with all four functions: people come
/// online and stop heartbeating, a group message, a reader on one of two devices, a phone that changes
/// accounts, a message after it; then the scheduler's presence sweep. The final documents and the raw
/// push records are checked against what the PRDs describe.
@Suite(.serialized) struct PresetLifeEndToEndTests {
    @Test(arguments: ["default", "prd000", "prd001", "prd004"])
    func peopleComeAndGoMessageReadAndSwitchAccounts(preset: String) async throws {
        let schema = try #require(Schema.presets[preset])
        let dev = try await RunningDev.start(["--schema", preset, "--seed", "demo"],
                                 environment: ["HERALD_PRESENCE_STALE_AFTER": "2", "HERALD_TYPING_STALE_AFTER": "1"])
        defer { dev.kill() }
        let db = FirestoreClient(project: "e2e", endpoint: dev.base, credentials: EmulatorCredentials(), httpClient: .shared)
        let world = DemoWorld(schema: schema, project: "e2e")
        let now = { Timestamp(microsecondsOf: Date()) }

        // Everyone comes online; Alice starts typing in the family chat. Then Alice and Bob stop heartbeating.
        let lastHeartbeat = now()
        _ = try await db.commit(try ["alice", "bob", "carol"].map { try world.heartbeat(of: $0, at: lastHeartbeat) }
            + [try world.typing("alice", in: "family", at: lastHeartbeat), try world.typing("carol", in: "family", at: lastHeartbeat)].compactMap { $0 })
        _ = try await db.commit([try world.message(from: "alice", in: "family", text: "Dinner at 6pm", id: "m1", at: now())])
        try await dev.waitUntilIdle()
        // Bob reads on his phone; his iPad's badge must clear too.
        let (parent, query) = try world.messagesQuery(in: "family")
        _ = try await db.commit(world.reads(by: "bob", of: try await db.runQuery(query, parent: parent)))
        try await dev.waitUntilIdle()
        // Carol signs in on Alice's phone: it must stop getting Alice's messages.
        _ = try await db.commit([try world.signIn("carol", onDeviceWith: "tok-alice-phone")])
        try await dev.waitUntilIdle()
        _ = try await db.commit([try world.message(from: "bob", in: "family", text: "On my way", id: "m2", at: now())])
        try await dev.waitUntilIdle()

        // Presence: past the 2 s threshold Carol heartbeats again, Alice and Bob do not; the scheduler's job runs.
        try await Task.sleep(for: .milliseconds(2500))
        _ = try await db.commit([try world.heartbeat(of: "carol", at: now())])
        let run = try await HTTPClient.shared.post("\(dev.base)/herald/scheduler/jobs/presence-sweep:run", headers: [:], body: [])
        #expect(run.body.contains("\"status\":200"), "\(preset): \(run.body)")
        let cleanup = try await HTTPClient.shared.post("\(dev.base)/herald/scheduler/jobs/token-cleanup:run", headers: [:], body: [])
        #expect(cleanup.body.contains("\"status\":200"), "\(preset): \(cleanup.body)")
        try await dev.waitUntilIdle()

        let user = { (id: String) in try #require(try await db.get(try db.name("\(schema.userCollection)/\(id)"))) }
        let offline = schema.offlineStatusValue.map(FirestoreValue.string) ?? .boolean(false)
        for id in ["alice", "bob"] {
            let person = try await user(id)
            #expect(person[schema.onlineField] == offline, "\(preset): \(id) went offline")
            #expect(person[schema.lastSeenField ?? schema.heartbeatField] == .timestamp(lastHeartbeat), "\(preset): \(id) last seen at the last heartbeat")
        }
        let carol = try await user("carol")
        #expect(carol[schema.onlineField] != offline, "\(preset): Carol kept heartbeating")
        if let typing = schema.typingField {
            #expect(try await user("alice")[typing] == nil && carol[typing] == nil, "\(preset): stale typing cleared")
        }

        // The phone moved from Alice to Carol.
        let tokens = TokensOf(schema: schema)
        #expect(tokens.of(try await user("alice")).isEmpty, "\(preset)")
        #expect(tokens.of(carol).contains("tok-alice-phone"), "\(preset)")

        // Counts: Alice has Bob's message unread, Bob nothing, Carol both.
        let family = try #require(try await db.get(try db.name("\(schema.conversationCollection)/family")))
        #expect(family[schema.unreadCountField] == .map(["alice": .integer(1), "bob": .integer(0), "carol": .integer(2)]), "\(preset)")
        for (id, badge) in [("alice", 1), ("bob", 0), ("carol", 2)] {
            #expect(try await user(id)[schema.badgeField] == .integer(Int64(badge)), "\(preset): badge of \(id)")
        }

        // Raw push records: each (message, device) exactly once, none to the phone for Alice after it changed hands.
        let records = try await dev.pushes()
        func notified(_ token: String) -> [String] {
            records.filter { $0["message"]?["token"]?.stringValue == token && $0["message"]?["notification"] != nil }
                .compactMap { $0["message"]?["notification"]?["body"]?.stringValue }.sorted()
        }
        let single = if case .single = schema.tokens { true } else { false }
        #expect(notified("tok-bob-phone") == ["Dinner at 6pm"], "\(preset)")
        #expect(notified("tok-bob-ipad") == (single ? [] : ["Dinner at 6pm"]), "\(preset)")
        #expect(notified("tok-carol-phone") == (single ? ["Dinner at 6pm"] : ["Dinner at 6pm", "On my way"]), "\(preset)")
        #expect(notified("tok-alice-phone") == ["On my way"], "\(preset): the phone gets Carol's message only")
        let toPhone = records.first { $0["message"]?["token"]?.stringValue == "tok-alice-phone" }
        #expect(toPhone?["message"]?["apns"]?["payload"]?["aps"]?["badge"] == 2, "\(preset): with Carol's badge")
        let silent = records.filter { $0["message"]?["notification"] == nil }.compactMap { $0["message"]?["token"]?.stringValue }.sorted()
        #expect(silent == (single ? ["tok-bob-phone"] : ["tok-bob-ipad", "tok-bob-phone"]), "\(preset): Bob's badge cleared on every device")
        let dead = try await dev.deadLetters()
        #expect(dead.isEmpty, "\(preset): \(dead.map { $0.serialized() }.joined(separator: "\n"))")

        let exit = try await dev.stop()
        #expect(exit == 0, "\(preset): \(dev.output.suffix(2000))")
    }
}

/// Tokens as the schema stores them (array, single or map keys).
struct TokensOf {
    let schema: Schema
    func of(_ user: FirestoreDocument) -> [String] {
        switch schema.tokens {
        case .single(let field): user[field]?.stringValue.map { [$0] } ?? []
        case .array(let field): user[field]?.arrayValue?.compactMap(\.stringValue) ?? []
        case .mapKeys(let field): user[field]?.mapValue?.keys.sorted() ?? []
        case .subcollection: []
        }
    }
}

/// `herald dev --ephemeral --port 0` running in the background, its output collected.
final class RunningDev: Sendable {
    final class Transcript: Sendable { let text = Mutex("") }
    let process: Process
    let transcript: Transcript
    let base: String

    init(process: Process, transcript: Transcript, base: String) {
        self.process = process
        self.transcript = transcript
        self.base = base
    }

    static func start(_ arguments: [String], environment: [String: String] = [:]) async throws -> RunningDev {
        let process = Process()
        process.executableURL = TestPaths.executable("herald")
        process.arguments = ["dev", "--ephemeral", "--port", "0", "--project", "e2e"] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        let transcript = Transcript()
        output.fileHandleForReading.readabilityHandler = { handle in
            let chunk = handle.availableData
            if chunk.isEmpty { handle.readabilityHandler = nil } else { transcript.text.withLock { $0 += String(decoding: chunk, as: UTF8.self) } }
        }
        try process.run()
        var base: String?
        for _ in 0..<600 where base == nil && process.isRunning {
            let text = transcript.text.withLock { $0 }
            if text.contains("Stop: Ctrl-C"), let range = text.range(of: #"Herald local cloud on (http://[0-9.:]+)"#, options: .regularExpression) {
                base = String(text[range].dropFirst("Herald local cloud on ".count))
            } else {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        guard let base else { throw DevDidNotStart(output: transcript.text.withLock { $0 }) }
        return RunningDev(process: process, transcript: transcript, base: base)
    }

    struct DevDidNotStart: Error, CustomStringConvertible {
        let output: String
        var description: String { "herald dev did not come up: \(output.suffix(2000))" }
    }

    var output: String { transcript.text.withLock { $0 } }

    /// Until no delivery is pending twice in a row (a function's writes make new events).
    func waitUntilIdle() async throws {
        var quiet = 0
        for _ in 0..<300 {
            let pending = try JSONValue(parsing: Array(try await HTTPClient.shared.get("\(base)/herald/deliveries?state=pending").body.utf8))
            quiet = pending["deliveries"]?.arrayValue?.isEmpty == true ? quiet + 1 : 0
            if quiet >= 3 { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("deliveries still pending after 30 s")
    }

    func pushes() async throws -> [JSONValue] {
        try JSONValue(parsing: Array(try await HTTPClient.shared.get("\(base)/herald/fcm/messages").body.utf8))["messages"]?.arrayValue ?? []
    }

    func deadLetters() async throws -> [JSONValue] {
        try JSONValue(parsing: Array(try await HTTPClient.shared.get("\(base)/herald/deliveries?state=dead").body.utf8))["deliveries"]?.arrayValue ?? []
    }

    /// Ctrl-C, and the exit status.
    func stop() async throws -> Int32 {
        Glibc.kill(process.processIdentifier, SIGINT)
        for _ in 0..<300 where process.isRunning { try await Task.sleep(for: .milliseconds(100)) }
        return process.isRunning ? -1 : process.terminationStatus
    }

    func kill() { if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) } }
}
