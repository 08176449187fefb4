import AsyncHTTPClient
import ChatDemo
import ChatFunctions
import FirestoreModel
import Foundation
import GoogleClients
import HeraldTesting
import Testing
import WireFormats

/// What one message costs on Firestore and Cloud Run, from `herald dev`'s own count (`GET /herald/billed`),
/// for a 3-member and a 100-member group: documents the functions read, wrote and deleted, and the
/// function invocations the message caused. Printed for BENCHMARKS.md; checked against what the plan
/// must do and against herald dev's independent count of document writes applied.
@Suite struct MessageBillTests {
    struct Bill: CustomStringConvertible {
        var reads = 0
        var writes = 0
        var deletes = 0
        var appWrites = 0
        var invocations: [String: Int] = [:]
        /// Reads and writes (deletes included) by each function.
        var byFunction: [String: [Int]] = [:]
        var description: String {
            func list(_ items: [String: String]) -> String { items.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") }
            return
                "reads \(reads), writes \(writes), deletes \(deletes) (\(list(byFunction.mapValues { "\($0[0])r/\($0[1])w" }))); invocations \(list(invocations.mapValues { String($0) }))"
        }
    }

    static func billed(_ dev: RunningDev) async throws -> (bill: Bill, written: Int) {
        let json = try JSONValue(parsing: Array(try await HTTPClient.shared.get("\(dev.base)/herald/billed").body.utf8))
        var bill = Bill()
        for (requester, counts) in json["firestore"]?.objectValue ?? [:] {
            let (reads, writes, deletes) = (counts["reads"]?.int64Value ?? 0, counts["writes"]?.int64Value ?? 0, counts["deletes"]?.int64Value ?? 0)
            if requester == "app" {
                bill.appWrites += Int(writes + deletes)
            } else {
                (bill.reads, bill.writes, bill.deletes) = (bill.reads + Int(reads), bill.writes + Int(writes), bill.deletes + Int(deletes))
                bill.byFunction[requester] = [Int(reads), Int(writes + deletes)]
            }
        }
        for (trigger, attempts) in json["invocations"]?.objectValue ?? [:] { bill.invocations[trigger] = Int(attempts.int64Value ?? 0) }
        let writes = try JSONValue(parsing: Array(try await HTTPClient.shared.get("\(dev.base)/herald/writes").body.utf8))
        return (bill, Int(writes["written"]?.int64Value ?? 0))
    }

    static func difference(_ after: Bill, _ before: Bill) -> Bill {
        var bill = Bill(
            reads: after.reads - before.reads, writes: after.writes - before.writes, deletes: after.deletes - before.deletes,
            appWrites: after.appWrites - before.appWrites)
        for (trigger, count) in after.invocations where count != before.invocations[trigger, default: 0] {
            bill.invocations[trigger] = count - before.invocations[trigger, default: 0]
        }
        for (function, counts) in after.byFunction {
            let was = before.byFunction[function] ?? [0, 0]
            if counts != was { bill.byFunction[function] = [counts[0] - was[0], counts[1] - was[1]] }
        }
        return bill
    }

    /// On the default preset, whose badge is kept apart (`badgeCollection`), where a badge write does not
    /// trigger tokenCleanup; and with the badge in the user document (`"badgeCollection": null`), where it does.
    @Test(arguments: [true, false]) func aMessagesBillInASmallAndABigGroup(badgeApart: Bool) async throws {
        var schema = Schema.presets["default"]!
        var arguments: [String] = []
        let scratch = try Scratch.directory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        if !badgeApart {
            schema.badgeCollection = nil
            let file = scratch.appendingPathComponent("badge-in-user.json")
            try #"{"extends": "default", "badgeCollection": null}"#.write(to: file, atomically: true, encoding: .utf8)
            arguments = ["--schema", file.path]
        }
        let dev = try await RunningDev.start(arguments)
        defer { dev.kill() }
        try await dev.pauseJobs()
        let world = DemoWorld(schema: schema, project: "e2e")
        let people = (0..<100).map { DemoWorld.Person(id: "u\($0)", name: "User \($0)", tokens: ["tok-u\($0)"]) }
        let small = DemoWorld.Conversation(id: "small", members: ["u0", "u1", "u2"], group: "Small")
        let big = DemoWorld.Conversation(id: "big", members: people.map(\.id), group: "Big")
        _ = try await dev.app.commit(try world.seed(people: people, conversations: [small, big]))
        try await dev.waitUntilIdle()
        var badgesWritten: Set<String> = []
        for conversation in [small, big] {
            let (before, writtenBefore) = try await Self.billed(dev)
            let pushesBefore = try await dev.pushes().count
            _ = try await dev.app.commit([
                try world.message(from: "u0", in: conversation.id, text: "hello", id: "m-\(conversation.id)", at: Timestamp(seconds: 1_800_000_000, nanos: 0))
            ])
            try await dev.waitUntilIdle()
            let (after, writtenAfter) = try await Self.billed(dev)
            let bill = Self.difference(after, before)
            let recipients = conversation.members.count - 1
            print("a message to \(conversation.members.count) members\(badgeApart ? "" : ", badge in the user document"): \(bill)")
            #expect(try await dev.deadLetters().isEmpty)
            #expect(try await dev.pushes().count - pushesBefore == recipients, "one alert per recipient device")
            // The app wrote the message; the functions wrote the rest, and herald dev's other count agrees.
            #expect(bill.appWrites == 1, "\(bill)")
            #expect(bill.writes + bill.deletes + bill.appWrites == writtenAfter - writtenBefore, "\(bill), \(writtenAfter - writtenBefore) written")
            // Writes: each recipient's unread total once (the badge), the conversation, the message's status and
            // the event's ledger entry (made, then its pushes recorded): no more.
            #expect(bill.writes == recipients + 4, "\(bill)")
            // Reads: the message and its conversation, each member's user document, and each recipient's badge
            // after sending (the stored counts the badges sent are checked against); and, kept apart, each
            // badge document the instance writes for the first time, once, before that commit (no plan
            // reads it; the coalescer learns its version, docs/architecture.md "Busy groups").
            let firstBadgeWrites = badgeApart ? Set(conversation.members.filter { $0 != "u0" }).subtracting(badgesWritten).count : 0
            badgesWritten.formUnion(conversation.members.filter { $0 != "u0" })
            #expect(bill.reads == 2 + conversation.members.count + recipients + firstBadgeWrites, "\(bill)")
            // The message's event, its status change (onReadReceipt's trigger) and, with the badge in the user
            // document, each badge write (tokenCleanup's: Eventarc cannot filter by field).
            let badgeWrites = badgeApart ? [:] : ["tokenCleanup": recipients]
            #expect(bill.invocations == ["onMessageCreated": 1, "onReadReceipt": 1].merging(badgeWrites) { $1 }, "\(bill)")
        }
        // Where the badge is, it counts: u1 has one unread in each conversation, reads the small one, and
        // the silent push takes the badge down to what is stored.
        #expect(try await Self.badge(of: "u1", schema: schema, dev) == 2)
        let (before, _) = try await Self.billed(dev)
        let message = try #require(try await dev.app.get(try dev.app.name("conversations/small/messages/m-small")))
        _ = try await dev.app.commit(world.reads(by: "u1", of: [message]))
        try await dev.waitUntilIdle()
        let (after, _) = try await Self.billed(dev)
        #expect(try await Self.badge(of: "u1", schema: schema, dev) == 1)
        let last = try await dev.pushes().last(where: { $0["message"]?["token"] == "tok-u1" })
        #expect(last?["message"]?["apns"]?["payload"]?["aps"]?["badge"] == .number("1"), "\(String(describing: last))")
        let read = Self.difference(after, before)
        #expect((read.invocations["tokenCleanup"] ?? 0) == (badgeApart ? 0 : 1), "\(read)")
        #expect(try await dev.deadLetters().isEmpty)
    }

    static func badge(of user: String, schema: Schema, _ dev: RunningDev) async throws -> Int64? {
        try await dev.app.get(try dev.app.name(schema.badgePath(of: user)))?[schema.badgeField]?.integerValue
    }
}
