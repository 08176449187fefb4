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

    /// One layout's tokenCleanup and the documents of its story, all holding the phone's token.
    struct World {
        let layout: Layout
        let cleanup: TokenCleanup
        let token = TokenCleanupTests.good[2]

        init(_ layout: Layout) throws {
            self.layout = layout
            cleanup = TokenCleanup(schema: try Schema.load("app.json", file: layout.file))
        }

        func device(_ user: String, _ token: String? = nil, at seconds: Int64) throws -> FirestoreDocument {
            FirestoreDocument(
                name: try DocumentName(project: "p", path: layout.path(user)),
                fields: ["token": .string(token ?? self.token), "timestamp": .timestamp(Timestamp(seconds: seconds))], updateTime: Timestamp(seconds: seconds))
        }

        func signIn(_ document: FirestoreDocument, over old: FirestoreDocument? = nil) -> DocumentChange {
            DocumentChange(eventID: "e", kind: .written, time: document.updateTime!, document: document.name, oldDocument: old, newDocument: document)
        }

        var lookup: ValueLookup { layout.lookup(token) }

        /// The token's claim document, naming `user`'s sign-in at `seconds`.
        func claim(by user: String, at seconds: Int64) throws -> FirestoreDocument {
            let name = try #require(cleanup.firstReads(for: signIn(try device("x", at: 1)))?.documents.last)
            return FirestoreDocument(
                name: name, fields: ["user": .string(layout.path(user)), "gainedAt": .timestamp(Timestamp(seconds: seconds))],
                updateTime: Timestamp(seconds: seconds + 1))
        }

        /// The plan for `change`, with its document as it is `now`, the claim as recorded and the holders found.
        func plan(_ change: DocumentChange, now: FirestoreDocument, claim: FirestoreDocument? = nil, holders: [FirestoreDocument] = []) -> Plan {
            var found = [now.name: now]
            if let claim { found[claim.name] = claim }
            return cleanup.plan(for: change, given: DocumentsRead(found: found, lookups: [lookup: holders + [now]])).plan
        }
    }

    @Test(arguments: layouts)
    func aDeviceThatChangesAccountsLeavesThePreviousUsersTokenDocument(layout: Layout) throws {
        let world = try World(layout)
        #expect(world.cleanup.trigger.pattern == layout.pattern, "tokenCleanup watches the token documents, not the users")
        let bob = try world.device("bob", at: 9)
        let alice = try world.device("alice", at: 7)
        let reads = try #require(world.cleanup.firstReads(for: world.signIn(bob)))
        #expect(reads.documents.first == bob.name && reads.documents.count == 2, "Bob's token document and the token's claim")
        #expect(reads.lookups == [world.lookup])
        #expect(world.lookup.matches(alice) && world.lookup.matches(bob))
        let plan = world.plan(world.signIn(bob), now: bob, holders: [alice])
        #expect(plan.writes.contains(Write(.delete(alice.name), precondition: .updateTime(Timestamp(seconds: 7)))))
        #expect(!plan.writes.contains { $0.document == bob.name }, "Bob keeps the phone")
        #expect(plan.writes.count == 2, "the removal and the token's claim: \(plan.writes)")

        // Carol signed in on the phone at 12 and her event came first: Bob's late one gives it up.
        let late = world.plan(world.signIn(bob), now: bob, claim: try world.claim(by: "carol", at: 12), holders: [alice])
        #expect(late.writes == [Write(.delete(bob.name), precondition: .updateTime(Timestamp(seconds: 9)))])

        let malformed = try world.device("dave", "not a token", at: 5)
        #expect(
            world.plan(world.signIn(malformed), now: malformed).writes == [Write(.delete(malformed.name), precondition: .updateTime(Timestamp(seconds: 5)))])
    }

    /// Nothing but its device writes a token document, so each write is a sign-in there: the guide's app
    /// rewrites it at each start, and a phone that comes back to Bob writes the same token again. Bob's
    /// rewrite claims the phone from Alice; a late event of Bob's earlier sign-in neither deletes the
    /// document he wrote since nor takes the phone from a holder whose document changed after it.
    @Test(arguments: layouts)
    func aTokenDocumentWrittenAgainIsASignInOfItsOwn(layout: Layout) throws {
        let world = try World(layout)
        let bob = try world.device("bob", at: 20)
        let rewrite = world.signIn(bob, over: try world.device("bob", at: 9))
        let plan = world.plan(rewrite, now: bob, claim: try world.claim(by: "alice", at: 15), holders: [try world.device("alice", at: 15)])
        #expect(
            plan.writes.contains(Write(.delete(try world.device("alice", at: 15).name), precondition: .updateTime(Timestamp(seconds: 15)))), "\(plan.writes)")
        #expect(plan.writes.contains { $0.document.path.hasPrefix("_herald/tokens/claims/") }, "the claim moves to Bob at 20")

        // Bob signed in at 9, Alice at 12 (her claim), Bob again at 14: the event of 9 arrives last.
        let earlier = try world.device("bob", at: 9)
        let again = try world.device("bob", at: 14)
        let late = world.plan(world.signIn(earlier), now: again, claim: try world.claim(by: "alice", at: 12), holders: [try world.device("alice", at: 12)])
        #expect(!late.writes.contains { $0.document == bob.name }, "the sign-in at 14 stays: \(late.writes)")

        // The claim named Alice at 5; her document changed at 10, after Bob's sign-in at 9: hers may be the later one.
        let changedSince = world.plan(
            world.signIn(earlier), now: earlier, claim: try world.claim(by: "alice", at: 5), holders: [try world.device("alice", at: 10)])
        #expect(!changedSince.writes.contains { $0.isDeletion }, "\(changedSince.writes)")
    }

    /// A collection group reaches every collection of the name: a team's `teams/x/devices` holding the
    /// same token is not the users' and stays.
    @Test func aHolderOutsideTheUsersIsLeftAlone() throws {
        let world = try World(Self.layouts[1])
        let bob = try world.device("bob", at: 9)
        let team = FirestoreDocument(
            name: try DocumentName(project: "p", path: "teams/x/devices/kiosk"), fields: ["token": .string(world.token)], updateTime: Timestamp(seconds: 3))
        #expect(world.lookup.matches(team))
        let plan = world.plan(world.signIn(bob), now: bob, holders: [team, try world.device("alice", at: 7)])
        #expect(plan.writes.filter { $0.isDeletion }.map(\.document.path) == ["users/alice/devices/phone-alice"], "\(plan.writes)")
    }

    /// A subcollection's document keyed by its token and holding none in a field: no query finds other
    /// holders by a name, so there is nothing to claim or look up (no reads at all). An id that is no
    /// token (a device named by the app, not yet given one) is left alone, not deleted as malformed.
    @Test func aTokenKeptOnlyAsTheDocumentIdNeedsNothing() throws {
        let cleanup = TokenCleanup(schema: try Schema.load("app.json", file: Self.layouts[1].file))
        let token = TokenCleanupTests.good[4]
        let phone = FirestoreDocument(name: try DocumentName(project: "p", path: "users/bob/devices/\(token)"), fields: [:], updateTime: Timestamp(seconds: 9))
        let change = DocumentChange(eventID: "e", kind: .written, time: Timestamp(seconds: 9), document: phone.name, oldDocument: nil, newDocument: phone)
        #expect(cleanup.firstReads(for: change) == nil)
        #expect(cleanup.plan(for: change, given: DocumentsRead(found: [phone.name: phone])).plan.writes.isEmpty)
        let named = FirestoreDocument(
            name: try DocumentName(project: "p", path: "users/bob/devices/Bob’s iPad"), fields: [:], updateTime: Timestamp(seconds: 9))
        let unnamed = DocumentChange(eventID: "n", kind: .written, time: Timestamp(seconds: 9), document: named.name, oldDocument: nil, newDocument: named)
        #expect(cleanup.firstReads(for: unnamed) == nil)
    }
}

extension Write {
    fileprivate var isDeletion: Bool { if case .delete = operation { true } else { false } }
}
