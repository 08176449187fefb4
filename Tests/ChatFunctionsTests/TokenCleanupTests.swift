import ChatFunctions
import FirestoreEvents
import FirestoreModel
import HeraldCore
import Testing

@Suite struct TokenCleanupTests {
    static let good = (0..<12).map { "dGVzdC10b2tlbi0\($0):APA91bH-abcdefghijklmnopqrstuvwxyz_\($0)" }

    func change(_ fields: [String: FirestoreValue]) throws -> DocumentChange {
        let name = try DocumentName(project: "p", path: "users/u1")
        return DocumentChange(eventID: "e", kind: .written, time: Timestamp(seconds: 10), document: name,
                              newDocument: FirestoreDocument(name: name, fields: fields, updateTime: Timestamp(seconds: 9)))
    }

    func plan(_ schema: String, _ fields: [String: FirestoreValue]) throws -> Plan {
        TokenCleanup(schema: Schema.presets[schema]!).plan(for: try change(fields), documents: DocumentsRead())
    }

    @Test func arraysAreDedupedCleanedAndCappedKeepingTheNewest() throws {
        let messy: [FirestoreValue] = [.string(Self.good[0]), .string(""), .string("not a token"), .string(Self.good[1]), .string(Self.good[0])]
            + Self.good[2...].map { .string($0) }
        let plan = try plan("default", ["fcmTokens": .array(messy)])
        let write = try #require(plan.writes.first)
        guard case .update(_, let fields, let mask) = write.operation else { Issue.record("expected an update"); return }
        #expect(mask == [FieldPath("fcmTokens")])
        #expect(write.precondition == .updateTime(Timestamp(seconds: 9)))
        // good[0] counts at its newest position (after good[1]); the oldest beyond ten are dropped.
        let expected = Array(([Self.good[1], Self.good[0]] + Self.good[2...]).suffix(10))
        #expect(fields["fcmTokens"] == .array(expected.map { .string($0) }))
        // Its own write triggers the function again: now a no-op, so it can never loop.
        #expect(try self.plan("default", fields).decision == .skip(reason: "tokens already normal"))
    }

    @Test func aMalformedSingleTokenIsClearedAndAGoodOneLeftAlone() throws {
        #expect(try plan("prd004", ["fcmToken": .string(Self.good[0])]).decision == .skip(reason: "tokens already normal"))
        #expect(try plan("prd004", [:]).decision == .skip(reason: "no token stored"))
        let clear = try #require(try plan("prd004", ["fcmToken": .string("  ")]).writes.first)
        guard case .update(_, let fields, let mask) = clear.operation else { Issue.record("expected an update"); return }
        #expect(fields.isEmpty && mask == [FieldPath("fcmToken")])  // masked and absent: the field is deleted
    }

    @Test func malformedMapKeysAreDeleted() throws {
        var schema = Schema.presets["default"]!
        schema.tokens = .mapKeys(field: "notificationTokens")
        let fields: [String: FirestoreValue] = ["notificationTokens": .map([Self.good[0]: .boolean(true), "bad token": .boolean(true)])]
        let plan = TokenCleanup(schema: schema).plan(for: try change(fields), documents: DocumentsRead())
        guard case .update(_, let set, let mask) = plan.writes.first?.operation else { Issue.record("expected an update"); return }
        #expect(set.isEmpty)
        #expect(mask == [FieldPath("notificationTokens", "bad token")])
    }

    @Test func aDeletedUserNeedsNothing() throws {
        let name = try DocumentName(project: "p", path: "users/u1")
        let deleted = DocumentChange(eventID: "e", kind: .written, time: Timestamp(seconds: 1), document: name,
                                     oldDocument: FirestoreDocument(name: name, fields: [:]))
        #expect(TokenCleanup(schema: Schema.presets["default"]!).plan(for: deleted, documents: DocumentsRead()).decision
            == .skip(reason: "the user document was deleted"))
    }
}
