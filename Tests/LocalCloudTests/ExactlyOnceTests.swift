import ChatDemo
import ChatFunctions
import FirestoreModel
import Foundation
import GoogleClients
import HeraldTesting
import LocalCloud
import Testing
import WireFormats

/// onMessageCreated's real executable behind the local cloud, with deliveries duplicated, answers
/// dropped (so events come again after they were applied) and events held back so they overtake
/// each other. The end state must be what the messages alone say it should be.
@Suite(.serialized) struct ExactlyOnceTests {
    @Test func duplicatedDroppedAndReorderedEventsChangeNothingTwice() async throws {
        var options = LocalCloudOptions.testing
        options.delivery.faults = DeliveryFaults(duplicateProbability: 0.5, dropResponseProbability: 0.3, maximumDelay: .milliseconds(300))
        options.delivery.maximumAttempts = 50
        try await withLocalCloud(options) { local in
            let function = try await local.serve("onMessageCreated")
            defer { function.stop() }
            let db = local.firestore()
            let world = DemoWorld(schema: Schema.presets["default"]!, project: "herald-test")
            _ = try await db.commit(try world.seed())

            // Twelve messages in the family group from all three, written concurrently, timestamps in send order.
            let senders = ["alice", "bob", "carol", "alice", "carol", "bob", "bob", "alice", "carol", "alice", "bob", "carol"]
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (i, sender) in senders.enumerated() {
                    group.addTask {
                        let write = try world.message(
                            from: sender, in: "family", text: "message \(i)", id: "m\(i)",
                            at: Timestamp(seconds: 1_795_165_200 + Int64(i)))
                        _ = try await db.commit([write])
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await local.cloud.waitUntilIdle(timeout: .seconds(60)))
            #expect(try await local.cloud.deliveries(state: "dead").isEmpty)

            let family = try #require(try await db.get(try db.name("conversations/family")))
            var unread: [String: FirestoreValue] = [:]
            for person in ["alice", "bob", "carol"] { unread[person] = .integer(Int64(senders.filter { $0 != person }.count)) }
            #expect(family["unreadCount"] == .map(unread))
            #expect(family.value(at: ["lastMessage", "text"]) == .string("message 11"), "the newest message, whatever order the events came in")
            // Each badge is kept apart, in `badges/{userId}` (every preset).
            for person in ["alice", "bob", "carol"] {
                #expect(try await db.get(try db.name("badges/\(person)"))?["unreadTotal"] == unread[person])
            }
            // Every (message, device) pair got exactly one alert: raw sink records, not collapsed ones. Badge-only
            // pushes correct a count that changed while an alert was on its way: each device's last push
            // shows its user's total as stored.
            var pushes: [String: Int] = [:]
            var lastBadge: [String: FirestoreValue] = [:]
            // Every service's records: Carol's phone is reached through Expo, Bob's iPad through APNs.
            for push in try await DevicePush.all(at: local.baseURL) {
                lastBadge[push.token] = push.badge.map { FirestoreValue.integer(Int64($0)) }
                if push.data["type"] == "badge" { continue }
                pushes["\(push.collapseID ?? "?") → \(push.token)", default: 0] += 1
            }
            for person in DemoWorld.members(of: "family") {
                for token in person.tokens { #expect(lastBadge[token] == unread[person.id], "\(token)") }
            }
            var expected: [String: Int] = [:]
            for (i, sender) in senders.enumerated() {
                for person in DemoWorld.members(of: "family") where person.id != sender {
                    for token in person.tokens { expected["m\(i) → \(token)"] = 1 }
                }
            }
            #expect(pushes == expected)
            let deliveries = try await local.cloud.deliveries()
            print(
                "ExactlyOnceTests: \(senders.count) events, \(deliveries.reduce(0) { $0 + Int($1["attempts"]?.int64Value ?? 0) }) deliveries attempted, \(pushes.values.reduce(0, +)) pushes recorded"
            )
        }
    }

    /// Messages and read receipts racing, with the same faults: every unread count and badge must equal
    /// a recount from the messages themselves, and a message every recipient read must say so.
    @Test func readsInAnyOrderEndAtTheExactCounts() async throws {
        var options = LocalCloudOptions.testing
        options.delivery.faults = DeliveryFaults(duplicateProbability: 0.3, dropResponseProbability: 0.2, maximumDelay: .milliseconds(200))
        options.delivery.maximumAttempts = 50
        try await withLocalCloud(options) { local in
            let created = try await local.serve("onMessageCreated")
            let receipts = try await local.serve("onReadReceipt")
            defer {
                for process in [created, receipts] { process.stop() }
            }
            let db = local.firestore()
            let world = DemoWorld(schema: Schema.presets["default"]!, project: "herald-test")
            _ = try await db.commit(try world.seed())

            var rng = SeededRandom(seed: 42)
            let senders = (0..<10).map { _ in ["alice", "bob", "carol"].randomElement(using: &rng)! }
            var reads: [(message: Int, reader: String)] = []
            for (i, sender) in senders.enumerated() {
                for reader in ["alice", "bob", "carol"] where reader != sender && Bool.random(using: &rng) { reads.append((i, reader)) }
            }
            reads.shuffle(using: &rng)
            let plannedReads = reads
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (i, sender) in senders.enumerated() {
                    group.addTask {
                        _ = try await db.commit([
                            try world.message(
                                from: sender, in: "family", text: "message \(i)", id: "m\(i)",
                                at: Timestamp(seconds: 1_795_165_200 + Int64(i)))
                        ])
                    }
                }
                try await group.waitForAll()
                // Receipts arrive while the messages' own events are still being delivered, as a client's arrayUnion.
                for (i, reader) in plannedReads {
                    group.addTask {
                        _ = try await db.commit([
                            Write(
                                .transform(try db.name("conversations/family/messages/m\(i)")),
                                transforms: [FieldTransform(FieldPath("readBy"), .appendMissingElements([.string(reader)]))])
                        ])
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await local.cloud.waitUntilIdle(timeout: .seconds(90)))
            #expect(try await local.cloud.deliveries(state: "dead").isEmpty)

            // The truth, recounted from the messages.
            let messages = try await db.runQuery(StructuredQuery(collectionID: "messages"), parent: try db.name("conversations/family"))
            #expect(messages.count == senders.count)
            var truth: [String: Int64] = ["alice": 0, "bob": 0, "carol": 0]
            for message in messages {
                let sender = message["senderId"]?.stringValue
                let readBy = Set(message["readBy"]?.arrayValue?.compactMap(\.stringValue) ?? [])
                let recipients = ["alice", "bob", "carol"].filter { $0 != sender }
                for person in recipients where !readBy.contains(person) { truth[person, default: 0] += 1 }
                #expect(message["status"] == .string(recipients.allSatisfy(readBy.contains) ? "read" : "sent"), "\(message.name.path)")
                let marks = Set(message["heraldUnread"]?.mapValue?.keys.map { $0 } ?? [])
                #expect(marks == Set(recipients.filter { !readBy.contains($0) }), "\(message.name.path): marks \(marks)")
            }
            let family = try #require(try await db.get(try db.name("conversations/family")))
            #expect(family["unreadCount"] == .map(truth.mapValues { .integer($0) }))
            for (person, count) in truth {
                #expect(try await db.get(try db.name("badges/\(person)"))?["unreadTotal"] == .integer(count), "badge of \(person)")
            }
            var notifications: [String: Int] = [:]
            for push in try await DevicePush.all(at: local.baseURL) where !push.isSilent {
                notifications["\(push.collapseID ?? "?") → \(push.token)", default: 0] += 1
            }
            #expect(notifications.values.allSatisfy { $0 == 1 }, "a notification went twice: \(notifications.filter { $0.value > 1 })")
            print("ExactlyOnceTests: \(senders.count) messages, \(plannedReads.count) receipts, unread \(truth)")
        }
    }
}
