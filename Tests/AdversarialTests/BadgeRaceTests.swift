import ChatDemo
import ChatFunctions
import FirestoreModel
import Foundation
import GoogleClients
import HeraldTesting
import Testing
import WireFormats

/// What the phone shows after a race, as a user meets it in `herald dev`: messages arriving together,
/// a chat opened while they arrive, a phone and a tablet opening it at once. Each push's badge came
/// from what its plan read, so the last push a device got often carried a count another event had
/// already changed (3 tries in 5 left Carol's phone at 1 after she read everything).
@Suite struct BadgeRaceTests {
    @Test(arguments: ["default", "prd004"])
    func everyDevicesLastPushCarriesItsUsersStoredTotal(schema preset: String) async throws {
        let dev = try await RunningDev.start(["--seed", "demo", "--schema", preset])
        defer { dev.kill() }
        try await dev.waitUntilIdle()
        let schema = try #require(Schema.presets[preset])
        let demo = DemoWorld(schema: schema, project: "e2e")
        for round in 0..<3 {
            // Five messages to the family at once, from Alice.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for n in 0..<5 {
                    group.addTask {
                        _ = try await dev.app.commit([
                            try demo.message(from: "alice", in: "family", text: "Round \(round) message \(n)", id: "m\(round)-\(n)", at: Timestamp.now())
                        ])
                    }
                }
                try await group.waitForAll()
            }
            // Carol opens the chat while they are handled, Bob's phone and tablet at once.
            let (parent, query) = try demo.messagesQuery(in: "family")
            let messages = try await dev.app.runQuery(query, parent: parent)
            async let carol = dev.app.commitInBatches(demo.reads(by: "carol", of: Array(messages.prefix(3))))
            async let bobPhone = dev.app.commitInBatches(demo.reads(by: "bob", of: messages))
            async let bobTablet = dev.app.commitInBatches(demo.reads(by: "bob", of: messages))
            _ = try await (carol, bobPhone, bobTablet)
            try await dev.waitUntilIdle(timeout: .seconds(120))

            let last = DeviceBadges.last(in: try await dev.pushes())
            for person in DemoWorld.people where ["bob", "carol"].contains(person.id) {
                let stored = try await dev.app.storedBadge(of: person.id, schema: schema)
                let tokens = preset == "prd004" ? [person.tokens[0]] : person.tokens
                for token in tokens {
                    #expect(
                        last[token].map { FirestoreValue.integer($0) } == stored,
                        "round \(round), \(preset): \(token) shows \(last[token] ?? -1), stored \(String(describing: stored))")
                }
            }
        }
        #expect(try await dev.deadLetters().isEmpty)
    }
}
