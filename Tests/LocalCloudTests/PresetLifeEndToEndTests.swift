import AsyncHTTPClient
import ChatDemo
import ChatFunctions
import FirestoreModel
import Foundation
import GoogleClients
import HeraldHTTPClient
import HeraldTesting
import Testing
import WireFormats

/// A day in the life of each preset on `herald dev --ephemeral` with every function: people come
/// online and stop heartbeating, a group message, a reader on one of two devices, a phone that changes
/// accounts, a message after it; then the scheduler's presence sweep. The final documents and the raw
/// push records are checked against what the PRDs describe.
@Suite(.serialized) struct PresetLifeEndToEndTests {
    @Test(arguments: ["default", "prd000", "prd001", "prd004"])
    func peopleComeAndGoMessageReadAndSwitchAccounts(preset: String) async throws {
        let schema = try #require(Schema.presets[preset])
        let dev = try await RunningDev.start(
            ["--schema", preset, "--seed", "demo"],
            environment: ["HERALD_PRESENCE_STALE_AFTER": "60", "HERALD_TYPING_STALE_AFTER": "60"])
        defer { dev.kill() }
        // Only the test runs the sweep, once everything is in place: the backdated heartbeats are stale from the start.
        try await dev.pauseJobs()
        let db = FirestoreClient(project: "e2e", endpoint: dev.base, credentials: EmulatorCredentials(), httpClient: .shared)
        let world = DemoWorld(schema: schema, project: "e2e")
        let now = { Timestamp.now() }

        // Everyone comes online; Alice starts typing in the family chat. Then Alice and Bob stop heartbeating.
        // Their last heartbeat and typing marks are dated two minutes back: stale by the 60 s thresholds without waiting for them.
        let lastHeartbeat = now().adding(.seconds(-120))
        _ = try await db.commit(
            try ["alice", "bob", "carol"].map { try world.heartbeat(of: $0, at: lastHeartbeat) }
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

        // Presence: Carol heartbeats again, Alice and Bob do not; the scheduler's job runs.
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
            #expect(try await db.storedBadge(of: id, schema: schema) == .integer(Int64(badge)), "\(preset): badge of \(id)")
        }

        // Raw push records of every service (Carol's phone through Expo, Bob's iPad through APNs): each
        // (message, device) exactly once, none to the phone for Alice after it changed hands.
        let records = try await DevicePush.all(at: dev.base)
        func notified(_ token: String) -> [String] {
            records.filter { $0.token == token && !$0.isSilent }
                // The message's text, however the preset frames it ("Family • Alice: Dinner at 6pm" or "Dinner at 6pm").
                .compactMap { $0.body?.components(separatedBy: ": ").last }.sorted()
        }
        let single = schema.tokens.layout is SingleTokenField
        #expect(notified("tok-bob-phone") == ["Dinner at 6pm"], "\(preset)")
        #expect(notified(DemoWorld.bobsIPad) == (single ? [] : ["Dinner at 6pm"]), "\(preset)")
        #expect(notified(DemoWorld.carolsPhone) == (single ? ["Dinner at 6pm"] : ["Dinner at 6pm", "On my way"]), "\(preset)")
        #expect(notified("tok-alice-phone") == ["On my way"], "\(preset): the phone gets Carol's message only")
        let toPhone = records.first { $0.token == "tok-alice-phone" }
        #expect(toPhone?.badge == 2, "\(preset): with Carol's badge")
        let silent = records.filter(\.isSilent).map(\.token).sorted()
        #expect(silent == (single ? ["tok-bob-phone"] : [DemoWorld.bobsIPad, "tok-bob-phone"]), "\(preset): Bob's badge cleared on every device")
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
        schema.tokens(of: user)
    }
}
