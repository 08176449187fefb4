import ChatDemo
import FirestoreModel
import GoogleClients
import HeraldTesting
import Testing
import WireFormats

/// Herald kept each badge in the user document until 2026-11-28; every preset now keeps it in
/// `badges/{userId}`. A badge an earlier deployment left in the user document moves with the user's
/// next count, however many events count at once and in however many instances: the badge document
/// starts from it exactly once, the field leaves the user document, and every device's last push shows
/// the total as stored.
@Suite struct BadgeMoveTests {
    @Test func aBadgeLeftInTheUserDocumentMovesOnceWhileEventsRace() async throws {
        let dev = try await RunningDev.start(["--seed", "demo", "--instances", "2"])
        defer { dev.kill() }
        try await dev.waitUntilIdle()
        let world = DevWorld(dev: dev)
        try await world.set("users/bob", ["unreadTotal": .integer(3)])
        try await world.set("users/carol", ["unreadTotal": .integer(5)])
        try await dev.waitUntilIdle()
        // Eight messages to the family at once, from Alice; Bob opens the chat while they are handled.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for n in 0..<8 {
                group.addTask {
                    _ = try await dev.app.commit([try world.demo.message(from: "alice", in: "family", text: "Move \(n)", id: "move-\(n)", at: .now())])
                }
            }
            try await group.waitForAll()
        }
        let (parent, query) = try world.demo.messagesQuery(in: "family")
        let messages = try await dev.app.runQuery(query, parent: parent)
        #expect(messages.count == 8)
        _ = try await dev.app.commit(world.demo.reads(by: "bob", of: Array(messages.prefix(3))))
        try await dev.waitUntilIdle(timeout: .seconds(120))
        #expect(try await dev.deadLetters().isEmpty, "\(dev.output.suffix(3000))")

        let unread = try await world.document("conversations/family")?["unreadCount"]?.mapValue ?? [:]
        #expect(unread["bob"] == .integer(5) && unread["carol"] == .integer(8), "\(unread)")
        // What was left in the user document, once, plus what is unread now.
        #expect(try await world.badge("bob") == .integer(3 + 5))
        #expect(try await world.badge("carol") == .integer(5 + 8))
        for user in ["bob", "carol"] {
            #expect(try await world.document("users/\(user)")?["unreadTotal"] == nil, "\(user)'s badge left the user document")
        }
        let last = DeviceBadges.last(in: try await dev.pushes())
        for (token, user) in [("tok-bob-phone", "bob"), (DemoWorld.bobsIPad, "bob"), (DemoWorld.carolsPhone, "carol")] {
            #expect(last[token].map { FirestoreValue.integer($0) } == (try await world.badge(user)), "\(token)")
        }
        #expect(try await dev.stop() == 0)
    }
}
