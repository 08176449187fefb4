import ChatFunctions
import FirestoreModel
import Foundation
import GoogleClients
import HeraldCore
import HeraldRuntime
import HeraldTesting
import Logging
import Testing
import WireFormats

/// presenceSweeper's whole run against the local cloud: query pages, batchWrite, preconditions, counts.
@Suite struct PresenceSweepRunTests {
    static let now = Timestamp(seconds: 1_800_000_000)
    let logger = Logger(label: "sweep") { _ in SwiftLogNoOpLogHandler() }

    func ago(_ seconds: Double) -> FirestoreValue { .timestamp(Self.now.adding(.seconds(-seconds))) }

    /// 1,250 users: even ones online with a heartbeat 5 minutes old, odd ones online and fresh, every tenth offline.
    func seed(_ firestore: FirestoreClient) async throws {
        var writes: [Write] = []
        for i in 0..<1250 {
            let heartbeat: FirestoreValue = i % 2 == 0 ? ago(300 + Double(i)) : ago(10)
            let typingAt: FirestoreValue = i % 4 == 0 ? ago(30) : ago(2)
            let fields: [String: FirestoreValue] = ["online": .boolean(i % 10 != 9), "heartbeatAt": heartbeat, "typingIn": .string("c1"), "typingAt": typingAt]
            writes.append(Write(.update(try firestore.name("users/u\(String(format: "%04d", i))"), fields: fields, mask: nil)))
        }
        _ = try await firestore.commitInBatches(writes)
    }

    @Test func staleUsersGoOfflinePageByPageAndASecondRunFindsNothing() async throws {
        try await withLocalCloud { cloud in
            let firestore = cloud.firestore()
            try await seed(firestore)
            let runner = SweepRunner(function: PresenceSweeper(schema: Schema.presets["default"]!), firestore: firestore, fcm: nil, pageSize: 300)
            let report = try await runner.run(at: Self.now, logger: logger)
            // Even users are stale; of them, those with i % 10 == 9 are never even (9 is odd), so all 625 are online.
            #expect(report["offline"].checked == 625 && report["offline"].written == 625 && report["offline"].raced == 0)
            // Typing marks 30 s old: every fourth user, less those the offline pass already cleared (all of them are even).
            #expect(report["typing"].checked == 0)

            let users = try await firestore.runQuery(StructuredQuery(collectionID: "users"))
            #expect(users.count == 1250)
            for user in users {
                let i = Int(user.name.documentID.dropFirst())!
                if i % 2 == 0 {
                    #expect(user["online"] == .boolean(false))
                    #expect(user["lastSeen"] == ago(300 + Double(i)), "last seen is the last heartbeat, not the sweep time")
                    #expect(user["typingIn"] == nil && user["typingAt"] == nil)
                } else {
                    #expect(user["online"] == .boolean(i % 10 != 9) && user["lastSeen"] == nil && user["typingIn"] == .string("c1"))
                }
            }
            let again = try await runner.run(at: Self.now, logger: logger)
            #expect(again["offline"].checked == 0 && again["offline"].written == 0)
        }
    }

    /// A user whose document changed after the query read it keeps what the client wrote.
    @Test func aWriteRacingTheSweepWinsAndIsCounted() async throws {
        try await withLocalCloud { cloud in
            let firestore = cloud.firestore()
            try await seed(firestore)
            let runner = SweepRunner(
                function: ChangedUnderneath(wrapped: PresenceSweeper(schema: Schema.presets["default"]!)),
                firestore: firestore, fcm: nil, pageSize: 500)
            let report = try await runner.run(at: Self.now, logger: logger)
            #expect(report["offline"].checked == 625)
            #expect(report["offline"].raced == 209 && report["offline"].written == 416)  // every third of the 625 even users
            let raced = try #require(try await firestore.get(try firestore.name("users/u0000")))
            #expect(raced["online"] == .boolean(true) && raced["lastSeen"] == nil)
        }
    }

    @Test func aDryRunCountsButWritesNothing() async throws {
        try await withLocalCloud { cloud in
            let firestore = cloud.firestore()
            try await seed(firestore)
            let report = try await SweepRunner(function: PresenceSweeper(schema: Schema.presets["default"]!), firestore: firestore, fcm: nil, dryRun: true)
                .run(at: Self.now, logger: logger)
            #expect(report["offline"].written == 625 && report.dryRun)
            #expect(try await firestore.count(StructuredQuery(collectionID: "users", filter: .field(FieldPath("online"), .equal, .boolean(false)))) == 125)
        }
    }

    /// An app keeping heartbeats as epoch milliseconds (`timeFormat`; an integer, or a double as some
    /// clients write one): the query compares numbers as Firestore does, so stale users go offline with
    /// last seen as a number. A heartbeat kept as a timestamp is not found (Firestore compares a filter
    /// within one type; `schema check` names such a user).
    @Test func heartbeatsKeptAsEpochMillisecondsExpire() async throws {
        let schema = try Schema.load("ms.json", file: try JSONValue(parsing: #"{"extends": "default", "timeFormat": "epochMilliseconds"}"#))
        let now = Self.now.seconds * 1000
        let heartbeats: [String: FirestoreValue] = [
            "stale": .integer(now - 300_000), "staleDouble": .double(Double(now - 200_000)), "fresh": .integer(now - 5_000), "timestamp": ago(300),
        ]
        try await withLocalCloud { cloud in
            let firestore = cloud.firestore()
            _ = try await firestore.commitInBatches(
                try heartbeats.map {
                    Write(.update(try firestore.name("users/\($0.key)"), fields: ["online": .boolean(true), "heartbeatAt": $0.value], mask: nil))
                })
            let report = try await SweepRunner(function: PresenceSweeper(schema: schema), firestore: firestore, fcm: nil).run(at: Self.now, logger: logger)
            #expect(report["offline"].written == 2)
            var users: [String: FirestoreDocument] = [:]
            for user in try await firestore.runQuery(StructuredQuery(collectionID: "users")) { users[user.name.documentID] = user }
            #expect(users["stale"]?["online"] == .boolean(false) && users["stale"]?["lastSeen"] == .integer(now - 300_000))
            #expect(users["staleDouble"]?["online"] == .boolean(false) && users["staleDouble"]?["lastSeen"] == .integer(now - 200_000))
            #expect(users["fresh"]?["online"] == .boolean(true) && users["timestamp"]?["online"] == .boolean(true))
        }
    }

    /// A heartbeat dated year 9999 is found by its own query, set back to when Firestore recorded it plus
    /// a minute, and then ages like any other: the user goes offline.
    @Test func aUserWithAHeartbeatFromTheFutureGoesOfflineAfterAll() async throws {
        try await withLocalCloud { cloud in
            let firestore = cloud.firestore()
            let name = try firestore.name("users/forger")
            let forged = Timestamp(seconds: 253_402_300_799)
            _ = try await firestore.commit(
                [
                    Write(
                        .update(
                            name,
                            fields: ["online": .boolean(true), "heartbeatAt": .timestamp(forged), "typingIn": .string("c1"), "typingAt": .timestamp(forged)],
                            mask: nil))
                ],
                transaction: nil)
            let written = try #require(try await firestore.get(name)?.updateTime)
            let runner = SweepRunner(function: PresenceSweeper(schema: Schema.presets["default"]!), firestore: firestore, fcm: nil)
            let first = try await runner.run(at: written.adding(.seconds(5)), logger: logger)
            #expect(first["heartbeats from the future"].written == 1 && first["typing from the future"].written == 1)
            #expect(first["offline"].checked == 0)
            let setBack = try #require(try await firestore.get(name))
            #expect(setBack["heartbeatAt"] == .timestamp(written.adding(.seconds(60))) && setBack["online"] == .boolean(true))
            let later = try await runner.run(at: written.adding(.seconds(300)), logger: logger)
            #expect(later["offline"].written == 1 && later["heartbeats from the future"].checked == 0)
            let gone = try #require(try await firestore.get(name))
            #expect(gone["online"] == .boolean(false) && gone["lastSeen"] == .timestamp(written.adding(.seconds(60))) && gone["typingAt"] == nil)
        }
    }
}

/// Plans like the wrapped function, but as if every third document had changed since the query read it.
struct ChangedUnderneath<Wrapped: ScheduledFunction>: ScheduledFunction {
    static var name: String { Wrapped.name }
    static var summary: String { Wrapped.summary }
    let wrapped: Wrapped
    func sweeps(at now: Timestamp) -> [Sweep] { wrapped.sweeps(at: now) }
    func plan(_ sweep: Sweep, for document: FirestoreDocument, at now: Timestamp) -> SweepStep {
        var step = wrapped.plan(sweep, for: document, at: now)
        guard let i = Int(document.name.documentID.dropFirst()), (i / 2) % 3 == 0 else { return step }
        step.writes = step.writes.map {
            var write = $0
            write.precondition = .updateTime(Timestamp(seconds: 1))
            return write
        }
        return step
    }
}
