import AsyncHTTPClient
import FirestoreModel
import Foundation
import GoogleClients
import HeraldHTTPClient
import HeraldTesting
import Testing

/// The Firestore client against Herald's local cloud and Google's own Firestore emulator: the same
/// wire format and semantics from both.
@Suite(.serialized) struct FirestoreClientTests {
    static func withBackend(_ backend: FirestoreBackend, _ body: @Sendable (FirestoreClient) async throws -> Void) async throws {
        _ = try await backend.run { host in
            let project = "herald-\(UInt32.random(in: 0...UInt32.max))"
            try await body(FirestoreClient(project: project, endpoint: "http://\(host)", credentials: EmulatorCredentials(), httpClient: .shared))
        }
    }

    /// batchWrite: each write on its own, any number (sent 500 per request), outcomes in order.
    @Test(arguments: FirestoreBackend.allCases) func batchWritesApplyEachWriteOnItsOwn(backend: FirestoreBackend) async throws {
        try await Self.withBackend(backend) { db in
            // Every 100th document exists already: its create fails alone.
            _ = try await db.commit(try [99, 199, 299, 399, 499].map { Write(.update(try db.name("users/u\($0)"), fields: [:], mask: nil)) })
            let writes = try (0..<520).map { i in
                Write(.update(try db.name("users/u\(i)"), fields: ["n": .integer(Int64(i))], mask: nil), precondition: .exists(false))
            }
            let outcomes = try await db.batchWrite(writes)
            #expect(outcomes.count == 520)
            for (i, outcome) in outcomes.enumerated() {
                switch outcome {
                case .applied(let time): #expect(i % 100 != 99 && time != nil, "write \(i)")
                case .failed(let error): #expect(i % 100 == 99 && error.status == .alreadyExists, "write \(i): \(error)")
                }
            }
            #expect(try await db.count(StructuredQuery(collectionID: "users", filter: .unary(FieldPath("n"), .isNotNull))) == 515)
            #expect(try await db.batchWrite([]).isEmpty)
            // One document twice in one request is refused as a whole, as Google does.
            let twice = Write(.update(try db.name("users/twice"), fields: [:], mask: nil))
            await #expect { try await db.batchWrite([twice, twice]) } throws: { ($0 as? GoogleAPIError)?.status == .invalidArgument }
        }
    }

    @Test(arguments: FirestoreBackend.allCases) func documentsWritesPreconditionsAndTransforms(backend: FirestoreBackend) async throws {
        try await Self.withBackend(backend) { db in
            let conversation = try db.name("conversations/c1")
            let missing = try db.name("conversations/nope")
            let create = Write(
                .update(
                    conversation,
                    fields: [
                        "members": .array([.string("alice"), .string("bob")]), "unreadCount": .map(["user.1": .integer(2)]), "max": .integer(5),
                        "tags": .array([.string("a")]),
                    ], mask: nil), precondition: .exists(false))
            let created = try await db.commit([create])
            #expect(created.updateTimes.count == 1)

            // A second create of the same document: ALREADY_EXISTS, and nothing changes.
            await #expect { try await db.commit([create]) } throws: { ($0 as? GoogleAPIError)?.status == .alreadyExists }
            // Updating a missing document with exists=true: NOT_FOUND.
            await #expect {
                try await db.commit([Write(.update(missing, fields: ["a": .integer(1)], mask: [FieldPath("a")]), precondition: .exists(true))])
            } throws: { ($0 as? GoogleAPIError)?.status == .notFound }
            // A stale updateTime: FAILED_PRECONDITION.
            await #expect {
                try await db.commit([
                    Write(
                        .update(conversation, fields: ["a": .integer(1)], mask: [FieldPath("a")]),
                        precondition: .updateTime(Timestamp(seconds: 1)))
                ])
            } throws: { ($0 as? GoogleAPIError)?.status == .failedPrecondition }

            // Every transform, with a map key that needs backticks.
            let updated = try await db.commit([
                Write(
                    .update(conversation, fields: ["lastText": .string("hi")], mask: [FieldPath("lastText")]),
                    transforms: [
                        FieldTransform(FieldPath("unreadCount", "user.1"), .increment(.integer(3))),
                        FieldTransform(FieldPath("max"), .maximum(.integer(9))),
                        FieldTransform(FieldPath("min"), .minimum(.double(-1.5))),
                        FieldTransform(FieldPath("updatedAt"), .setToRequestTime),
                        FieldTransform(FieldPath("tags"), .appendMissingElements([.string("a"), .string("b")])),
                        FieldTransform(FieldPath("members"), .removeAllFromArray([.string("bob")])),
                    ], precondition: .updateTime(created.updateTimes[0]!))
            ])
            let doc = try #require(try await db.get(conversation))
            #expect(doc["unreadCount"] == .map(["user.1": .integer(5)]))
            #expect(doc["max"] == .integer(9))
            #expect(doc["min"] == .double(-1.5))
            // Firestore sets REQUEST_TIME to the commit time; Google's emulator to a time a few ms earlier.
            let serverTime = try #require(doc["updatedAt"]?.timestampValue)
            #expect(abs(serverTime.seconds - updated.commitTime.seconds) <= 1)
            #expect(doc["tags"] == .array([.string("a"), .string("b")]))
            #expect(doc["members"] == .array([.string("alice")]))
            #expect(doc["lastText"] == .string("hi"))
            #expect(doc.updateTime == updated.updateTimes[0])

            // batchGet: found and missing in one request.
            let both = try await db.batchGet([conversation, missing])
            #expect(both.count == 2)
            #expect(both[conversation]??.name == conversation)
            #expect(both[missing] == .some(nil))

            // Every value kind survives a write and a read.
            var rng = SeededRandom(seed: 8)
            for i in 0..<20 {
                let name = try db.name("values/v\(i)")
                let fields = RandomValues.fields(&rng, storable: true)
                _ = try await db.commit([Write(.update(name, fields: fields, mask: nil))])
                #expect(try await db.get(name)?.fields == fields, "values/v\(i)")
            }

            // Delete, then it is gone.
            _ = try await db.commit([Write(.delete(conversation), precondition: .exists(true))])
            #expect(try await db.get(conversation) == nil)

            // Limits are refused before anything is sent.
            let many = try (0...500).map { Write(.delete(try db.name("x/\($0)"))) }
            await #expect { try await db.commit(many) } throws: { "\($0)".contains("at most 500 writes") }
            let huge = Write(.update(try db.name("x/huge"), fields: ["blob": .bytes([UInt8](repeating: 0, count: 1_100_000))], mask: nil))
            await #expect { try await db.commit([huge]) } throws: { "\($0)".contains("limit is 1048576") }
            #expect(try await db.commitInBatches(many).count == 2)
        }
    }

    @Test(arguments: FirestoreBackend.allCases) func queriesPagingCountAndTransactions(backend: FirestoreBackend) async throws {
        try await Self.withBackend(backend) { db in
            var writes: [Write] = []
            for i in 0..<25 {
                writes.append(
                    Write(
                        .update(
                            try db.name("users/u\(String(format: "%02d", i))"),
                            fields: [
                                "online": .boolean(i % 2 == 0), "heartbeat": .integer(Int64(i)), "groups": .array([.string(i < 10 ? "family" : "work")]),
                            ], mask: nil)))
            }
            writes.append(Write(.update(try db.name("conversations/c1/messages/m1"), fields: ["n": .integer(1)], mask: nil)))
            writes.append(Write(.update(try db.name("chats/k/messages/m2"), fields: ["n": .integer(2)], mask: nil)))
            _ = try await db.commit(writes)

            let online = StructuredQuery(
                collectionID: "users",
                filter: .and([
                    .field(FieldPath("online"), .equal, .boolean(true)), .field(FieldPath("heartbeat"), .lessThan, .integer(10)),
                ]), orderBy: [.init(FieldPath("heartbeat"), .descending)])
            #expect(try await db.runQuery(online).map { $0["heartbeat"]! } == [8, 6, 4, 2, 0].map { .integer($0) })
            let family = StructuredQuery(collectionID: "users", filter: .field(FieldPath("groups"), .arrayContains, .string("family")))
            #expect(try await db.runQuery(family).count == 10)
            let some = StructuredQuery(
                collectionID: "users",
                filter: .or([
                    .field(FieldPath("heartbeat"), .in, .array([.integer(3), .integer(24)])), .field(FieldPath("heartbeat"), .equal, .integer(7)),
                ]))
            #expect(Set(try await db.runQuery(some).compactMap { $0["heartbeat"]?.integerValue }) == [3, 7, 24])
            let limited = StructuredQuery(collectionID: "users", orderBy: [.init(FieldPath("heartbeat"))], offset: 2, limit: 3)
            #expect(try await db.runQuery(limited).compactMap { $0["heartbeat"]?.integerValue } == [2, 3, 4])
            let group = StructuredQuery(collectionID: "messages", allDescendants: true)
            #expect(Set(try await db.runQuery(group).map(\.name.path)) == ["conversations/c1/messages/m1", "chats/k/messages/m2"])

            // Paging through everything, 7 at a time, sees each document once.
            var pages: [Int] = []
            var seen: [String] = []
            try await db.forEachPage(of: StructuredQuery(collectionID: "users"), pageSize: 7) { page in
                pages.append(page.count)
                seen += page.map(\.name.documentID)
            }
            #expect(pages == [7, 7, 7, 4])
            #expect(seen == (0..<25).map { "u" + String(format: "%02d", $0) })
            #expect(try await db.count(StructuredQuery(collectionID: "users")) == 25)
            #expect(try await db.count(family) == 10)

            // A transaction reads and writes atomically.
            let counter = try db.name("counters/c")
            for _ in 0..<3 {
                try await db.runTransaction { tx in
                    let current = try await tx.get([counter])[counter]??["n"]?.integerValue ?? 0
                    return ([Write(.update(counter, fields: ["n": .integer(current + 1)], mask: nil))], ())
                }
            }
            #expect(try await db.get(counter)?["n"] == .integer(3))
            let id = try await db.beginTransaction()
            try await db.rollback(id)
        }
    }
}
