import ChatFunctions
import ChatSchemaTools
import FirestoreEvents
import FirestoreModel
import HeraldCore
import Testing
import WireFormats

/// Tokens kept as Firebase's Friendly Chat codelab keeps them: a document per device in a collection of
/// their own, keyed by the token and naming its user, `fcmTokens/{token}` `{uid}`. A user's devices are
/// found by a query on that field; a device that changes accounts names its new user, so it is in one
/// account only by its shape.
@Suite struct TokenDocumentPerTokenTests {
    static let file: JSONValue = [
        "extends": "default", "tokens": ["documentPerToken": ["collection": "fcmTokens", "userField": "uid"]], "tokensUpdatedAtField": "timestamp",
    ]
    static var schema: Schema { get throws { try Schema.load("codelab.json", file: file) } }

    static func device(_ token: String, of user: String, at seconds: Int64) throws -> FirestoreDocument {
        FirestoreDocument(
            name: try DocumentName(project: "p", path: "fcmTokens/\(token)"),
            fields: ["uid": .string(user), "timestamp": .timestamp(Timestamp(seconds: seconds))],
            updateTime: Timestamp(seconds: seconds))
    }

    /// Each recipient's devices are asked for in the step that reads the users (one query each, none for
    /// the sender); each gets a push, and a dead one deletes its document as it was read. A device now
    /// naming someone else is theirs.
    @Test func pushesGoToEveryDeviceNamingTheRecipient() throws {
        let schema = try Self.schema
        let layout = try #require(schema.tokens.layout as? TokenDocumentPerToken)
        let (change, read) = try PreferencesWorld(schema).event()
        var documents = Array(read.found.values)
        documents += [try Self.device("tok-bob-ipad", of: "bob", at: 8), try Self.device("tok-mallory", of: "mallory", at: 9)]
        let (plan, steps) = OnMessageCreated(schema: schema).plan(for: change, from: documents)
        #expect(plan.pushes.map(\.token).sorted() == ["tok-bob", "tok-bob-ipad", "tok-carol"])
        #expect(plan.pushes.first { $0.token == "tok-bob" }?.body == "Family • Alice: Dinner at 6pm")
        let ipad = try #require(plan.pushes.first { $0.token == "tok-bob-ipad" })
        #expect(
            ipad.removal == Write(.delete(try DocumentName(project: "p", path: "fcmTokens/tok-bob-ipad")), precondition: .updateTime(Timestamp(seconds: 8))))
        let step = try #require(steps.first { $0.documents.contains { $0.path == "users/bob" } })
        #expect(Set(step.lookups) == Set(["bob", "carol"].map(layout.lookup(of:))), "\(step.lookups)")
        #expect(layout.lookup(of: "bob").query.filter == .field(FieldPath("uid"), .equal, .string("bob")))

        // Bob's iPad signed in as Carol: the document names her now.
        documents = documents.filter { $0.name.documentID != "tok-bob-ipad" } + [try Self.device("tok-bob-ipad", of: "carol", at: 10)]
        let moved = OnMessageCreated(schema: schema).plan(for: change, from: documents).plan
        #expect(moved.pushes.filter { $0.userID == "carol" }.map(\.token).sorted() == ["tok-bob-ipad", "tok-carol"])
        #expect(moved.pushes.filter { $0.userID == "bob" }.map(\.token) == ["tok-bob"])
    }

    /// The daily pass asks the collection for documents older than 60 days by the time beside the token
    /// and deletes them, or checks them for the user the document names; tokenCleanup watches the
    /// devices' documents (one holding a token in a `token` field may share it with another).
    @Test func theDailyPassAndTokenCleanupWatchTheDevices() throws {
        let day: Int64 = 86_400
        let now = Timestamp(seconds: 20_000 * day)
        let cleanup = TokenCleanup(schema: try Self.schema, validate: true)
        #expect(cleanup.trigger.pattern == "fcmTokens/{tokenId}")
        let sweep = try #require(cleanup.sweeps(at: now).first)
        #expect(sweep.query.collectionID == "fcmTokens" && !sweep.query.allDescendants)
        let token = TokenCleanupTests.good[0]
        let stale = try Self.device(token, of: "bob", at: now.seconds - 61 * day)
        #expect(cleanup.plan(sweep, for: stale, at: now).writes == [Write(.delete(stale.name), precondition: .updateTime(stale.updateTime!))])
        let checks = cleanup.plan(sweep, for: try Self.device(token, of: "bob", at: now.seconds - 40 * day), at: now).checks
        #expect(checks.map(\.userID) == ["bob"] && checks.map(\.token) == [token])
    }

    @Test func theTokenCollectionMustBeItsOwnAndTheKeyWhole() throws {
        let taken: JSONValue = ["extends": "default", "tokens": ["documentPerToken": ["collection": "users", "userField": "uid"]]]
        let error = #expect(throws: SchemaError.self) { try Schema.load("codelab.json", file: taken) }
        #expect(error?.description.contains("\"tokens.documentPerToken.collection\" names \"users\"") == true, "\(String(describing: error))")
        let half: JSONValue = ["extends": "default", "tokens": ["documentPerToken": "fcmTokens"]]
        let usage = #expect(throws: SchemaError.self) { try Schema.load("codelab.json", file: half) }
        #expect(usage?.description.contains("{\"documentPerToken\": {\"collection\": NAME, \"userField\": FIELD}}") == true, "\(String(describing: usage))")
        let token: JSONValue = ["extends": "default", "tokens": ["documentPerToken": ["collection": "fcmTokens", "userField": "token"]]]
        let named = #expect(throws: SchemaError.self) { try Schema.load("codelab.json", file: token) }
        #expect(named?.description.contains("name the field that holds the user's id") == true, "\(String(describing: named))")
        let back = try Schema.load("back.json", file: try JSONValue(parsing: try Self.schema.fileText))
        #expect(back.tokens == .documentPerToken(collection: "fcmTokens", userField: "uid"))
    }

    /// `schema infer` finds the codelab's layout: documents keyed by tokens, each naming a user in a
    /// field; `schema check` reads them and dry-runs pushes to them.
    @Test func inferProposesTheCodelabsLayout() throws {
        let project = try #require(try SchemaInferenceTests.export("export").first).name
        let data = try SchemaInferenceOfForeignLayoutsTests.exportWithDevices { project, user in
            FirestoreDocument(
                name: try project.sibling(path: "fcmTokens/dGVzdC10b2tlbi0u\(user):APA91bH-abcdefghijklmnopqrstuvwxyz_0123456789-ABCDEFGHIJ"),
                fields: ["uid": .string("u\(user)"), "timestamp": .timestamp(Timestamp(seconds: 1_780_000_000))])
        }
        let proposal = try SchemaInference.propose(from: data)
        #expect(proposal["tokens"] == ["documentPerToken": ["collection": "fcmTokens", "userField": "uid"]], "\(proposal.text)")
        #expect(proposal["tokensUpdatedAtField"] == "timestamp", "\(proposal.text)")
        let fit = SchemaFit.check(try proposal.schema(), against: data, newestMessages: 3)
        #expect(!fit.misfits.contains { $0.problem.contains("token") }, "\(fit.text)")
        #expect(fit.outcomes.contains { !$0.pushes.isEmpty }, "\(fit.text)")
        let ghost = FirestoreDocument(
            name: try project.sibling(path: "fcmTokens/dGVzdC10b2tlbi1naG9zdA:APA91bH-abcdefghijklmnopqrstuvwxyz_0123456789-ABCDEFGHIJ"),
            fields: ["uid": .integer(7)])
        let noted = SchemaFit.check(try proposal.schema(), against: AppData(data.groups.values.flatMap { $0 } + [ghost]), newestMessages: 1)
        #expect(noted.notes.contains { $0.hasPrefix("1 of 15 fcmTokens documents name no user in uid") }, "\(noted.text)")

        // A log of notifications sent holds tokens and user ids too, but a dead token would delete its entries.
        let log = AppData(
            data.groups.values.flatMap { $0 }.map { document in
                guard document.name.segments.first == "fcmTokens" else { return document }
                return FirestoreDocument(name: try! project.sibling(path: "notifications/\(document.name.documentID)"), fields: document.fields)
            })
        let logged = try SchemaInference.propose(from: log)
        #expect(logged["tokens"]?["documentPerToken"] == nil, "\(logged.text)")
    }

    /// Devices keeping their token in a field, under auto-ids: two may hold one token, and the later
    /// sign-in deletes the other's document. One keyed by its token has nothing to claim.
    @Test func aDeviceDocumentHoldingItsTokenInAFieldLeavesTheOtherHolder() throws {
        let cleanup = TokenCleanup(schema: try Self.schema)
        let token = TokenCleanupTests.good[1]
        func device(_ id: String, of user: String, at seconds: Int64) throws -> FirestoreDocument {
            FirestoreDocument(
                name: try DocumentName(project: "p", path: "fcmTokens/\(id)"), fields: ["uid": .string(user), "token": .string(token)],
                updateTime: Timestamp(seconds: seconds))
        }
        let bob = try device("a1", of: "bob", at: 9)
        let alice = try device("a0", of: "alice", at: 7)
        let change = DocumentChange(eventID: "e", kind: .written, time: Timestamp(seconds: 9), document: bob.name, oldDocument: nil, newDocument: bob)
        let lookup = ValueLookup(collectionID: "fcmTokens", field: FieldPath("token"), .equals, .string(token))
        #expect(cleanup.firstReads(for: change)?.lookups == [lookup])
        let plan = cleanup.plan(for: change, given: DocumentsRead(found: [bob.name: bob], lookups: [lookup: [alice, bob]])).plan
        #expect(plan.writes.contains(Write(.delete(alice.name), precondition: .updateTime(Timestamp(seconds: 7)))), "\(plan.writes)")
        let keyed = try Self.device(token, of: "bob", at: 9)
        let rewritten = DocumentChange(eventID: "k", kind: .written, time: Timestamp(seconds: 9), document: keyed.name, oldDocument: nil, newDocument: keyed)
        #expect(cleanup.firstReads(for: rewritten) == nil, "keyed by its token: nothing to claim")
    }
}
