import ChatFunctions
import FirestoreEvents
import FirestoreModel
import HeraldCore
import Testing
import WireFormats

/// A phone signed in as Alice is signed in as Bob: the app writes the phone's token under Bob, in a
/// document of its own (`fcmTokens/bob`, Firebase's guide; `users/bob/devices/{id}`, a subcollection),
/// and Alice's document still holds it. Alice's messages would reach Bob's screen. tokenCleanup,
/// triggered by Bob's token document, deletes Alice's as it was read; a sign-in that a later one
/// elsewhere has superseded gives its own document up instead, and so does a malformed token.
@Suite struct TokenDocumentRoamingTests {
    struct Layout: Sendable, CustomStringConvertible {
        let file: JSONValue
        let pattern: String
        let lookup: @Sendable (String) -> ValueLookup
        let path: @Sendable (_ user: String) -> String
        var description: String { pattern }
    }

    static let layouts = [
        Layout(
            file: ["extends": "default", "tokens": ["documentPerUser": "fcmTokens"], "tokensUpdatedAtField": "timestamp"], pattern: "fcmTokens/{userId}",
            lookup: { ValueLookup(collectionID: "fcmTokens", field: FieldPath("token"), .equals, .string($0)) }, path: { "fcmTokens/\($0)" }),
        Layout(
            file: ["extends": "default", "tokens": ["subcollection": "devices"]], pattern: "users/{userId}/devices/{tokenId}",
            lookup: { ValueLookup(collectionID: "devices", allDescendants: true, field: FieldPath("token"), .equals, .string($0)) },
            path: { "users/\($0)/devices/phone-\($0)" }),
    ]

    @Test(arguments: layouts)
    func aDeviceThatChangesAccountsLeavesThePreviousUsersTokenDocument(layout: Layout) throws {
        let cleanup = TokenCleanup(schema: try Schema.load("app.json", file: layout.file))
        #expect(cleanup.trigger.pattern == layout.pattern, "tokenCleanup watches the token documents, not the users")
        let token = TokenCleanupTests.good[2]
        func device(_ user: String, _ token: String, at seconds: Int64) throws -> FirestoreDocument {
            FirestoreDocument(
                name: try DocumentName(project: "p", path: layout.path(user)),
                fields: ["token": .string(token), "timestamp": .timestamp(Timestamp(seconds: seconds))], updateTime: Timestamp(seconds: seconds))
        }
        func signIn(_ document: FirestoreDocument) -> DocumentChange {
            DocumentChange(eventID: "e", kind: .written, time: document.updateTime!, document: document.name, oldDocument: nil, newDocument: document)
        }
        let bob = try device("bob", token, at: 9)
        let alice = try device("alice", token, at: 7)
        let change = signIn(bob)
        let reads = try #require(cleanup.firstReads(for: change))
        #expect(reads.documents.first == bob.name && reads.documents.count == 2, "Bob's token document and the token's claim")
        #expect(reads.lookups == [layout.lookup(token)])
        let lookup = layout.lookup(token)
        #expect(lookup.matches(alice) && lookup.matches(bob))
        let plan = cleanup.plan(for: change, given: DocumentsRead(found: [bob.name: bob], lookups: [lookup: [alice, bob]])).plan
        #expect(plan.writes.contains(Write(.delete(alice.name), precondition: .updateTime(Timestamp(seconds: 7)))))
        #expect(!plan.writes.contains { $0.document == bob.name }, "Bob keeps the phone")
        #expect(plan.writes.count == 2, "the removal and the token's claim: \(plan.writes)")

        // Carol signed in on the phone at 12 and her event came first: Bob's late one gives it up.
        let claim = try #require(reads.documents.last)
        let carolsClaim = FirestoreDocument(
            name: claim, fields: ["user": .string(layout.path("carol")), "gainedAt": .timestamp(Timestamp(seconds: 12))], updateTime: Timestamp(seconds: 13))
        let late = cleanup.plan(for: change, given: DocumentsRead(found: [bob.name: bob, claim: carolsClaim], lookups: [lookup: [alice, bob]])).plan
        #expect(late.writes == [Write(.delete(bob.name), precondition: .updateTime(Timestamp(seconds: 9)))])

        let malformed = try device("dave", "not a token", at: 5)
        let cleared = cleanup.plan(for: signIn(malformed), given: DocumentsRead(found: [malformed.name: malformed])).plan
        #expect(cleared.writes == [Write(.delete(malformed.name), precondition: .updateTime(Timestamp(seconds: 5)))])
        let unchanged = DocumentChange(eventID: "h", kind: .written, time: bob.updateTime!, document: bob.name, oldDocument: bob, newDocument: bob)
        #expect(cleanup.firstReads(for: unchanged) == nil, "the app rewriting the time beside the same token needs nothing")
    }

    /// A subcollection's documents keyed by their token and holding none in a field: the token is the
    /// id, and no query finds other holders by it (nothing is taken, nothing is lost).
    @Test func aTokenKeptOnlyInTheDocumentIdIsNotLookedUp() throws {
        let cleanup = TokenCleanup(schema: try Schema.load("app.json", file: Self.layouts[1].file))
        let token = TokenCleanupTests.good[4]
        let phone = FirestoreDocument(name: try DocumentName(project: "p", path: "users/bob/devices/\(token)"), fields: [:], updateTime: Timestamp(seconds: 9))
        let change = DocumentChange(eventID: "e", kind: .written, time: Timestamp(seconds: 9), document: phone.name, oldDocument: nil, newDocument: phone)
        let reads = try #require(cleanup.firstReads(for: change))
        #expect(reads.lookups == [Self.layouts[1].lookup(token)])
        let plan = cleanup.plan(for: change, given: DocumentsRead(found: [phone.name: phone], lookups: [Self.layouts[1].lookup(token): []])).plan
        #expect(plan.writes.count == 1 && plan.writes[0].document.path.hasPrefix("_herald/tokens/claims/"), "only the claim: \(plan.writes)")
    }
}
