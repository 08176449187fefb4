import ChatFunctions
import ChatSchemaTools
import FirestoreModel
import HeraldCore
import Testing
import WireFormats

/// Tokens kept as Firebase's guide to managing tokens keeps them: one document per user in a
/// collection of their own, `fcmTokens/{uid}` `{token, timestamp}`. Herald had no storage for it: a
/// team following the guide could not name its tokens at all.
@Suite struct TokenDocumentPerUserTests {
    static let file: JSONValue = ["extends": "default", "tokens": ["documentPerUser": "fcmTokens"], "tokensUpdatedAtField": "timestamp"]
    static var schema: Schema { get throws { try Schema.load("guide.json", file: file) } }

    /// Each recipient's token is read from their own document; a dead one deletes that document, only
    /// as it was read; a recipient with none is counted and gets no push.
    @Test func pushesGoToEachUsersTokenDocument() throws {
        let world = PreferencesWorld(try Self.schema)
        let plan = try world.plan()
        #expect(plan.pushes.map(\.token).sorted() == ["tok-bob", "tok-carol"])
        let bob = try #require(plan.pushes.first { $0.token == "tok-bob" })
        #expect(bob.body == "Family • Alice: Dinner at 6pm")
        #expect(bob.removal == Write(.delete(try DocumentName(project: "p", path: "fcmTokens/bob")), precondition: .updateTime(Timestamp(seconds: 6))))
        // Read in the step that reads the users, from the documents there are.
        let (change, read) = try world.event()
        let (answered, steps) = OnMessageCreated(schema: try Self.schema).plan(for: change, from: Array(read.found.values))
        #expect(answered.pushes.map(\.token).sorted() == ["tok-bob", "tok-carol"])
        let step = try #require(steps.first { $0.documents.contains { $0.path == "users/bob" } })
        #expect(Set(step.documents.map(\.path)).isSuperset(of: ["fcmTokens/bob", "fcmTokens/carol"]))
    }

    @Test func theTokenCollectionMustBeItsOwn() throws {
        for taken in ["users", "conversations", "badges"] {
            let error = #expect(throws: SchemaError.self) {
                try Schema.load("guide.json", file: ["extends": "default", "tokens": ["documentPerUser": .string(taken)]])
            }
            #expect(error?.description.contains("the tokens need a collection of their own") == true, "\(taken): \(String(describing: error))")
        }
        #expect(try Schema.load("back.json", file: try JSONValue(parsing: try Self.schema.fileText)).tokens == .documentPerUser(collection: "fcmTokens"))
    }

    /// The daily pass asks the token collection itself for documents older than 60 days by the time the
    /// app wrote beside the token, and deletes them (or checks them, with validation on, for the user the
    /// document is keyed by). tokenCleanup's trigger on the user document has nothing to do.
    @Test func theDailyPassDeletesStaleTokenDocuments() throws {
        let day: Int64 = 86_400
        let now = Timestamp(seconds: 20_000 * day)
        let cleanup = TokenCleanup(schema: try Self.schema)
        let sweep = try #require(cleanup.sweeps(at: now).first)
        #expect(sweep.query.collectionID == "fcmTokens" && !sweep.query.allDescendants)
        #expect(sweep.query.filter == .field(FieldPath("timestamp"), .lessThan, .timestamp(Timestamp(seconds: now.seconds - 60 * day))))
        // Firestore recorded each device's document when the app wrote its time.
        func device(_ fields: [String: FirestoreValue]) throws -> FirestoreDocument {
            FirestoreDocument(name: try DocumentName(project: "p", path: "fcmTokens/bob"), fields: fields, updateTime: fields["timestamp"]?.timestampValue)
        }
        let token = FirestoreValue.string(TokenCleanupTests.good[0])
        let stale = try device(["token": token, "timestamp": .timestamp(Timestamp(seconds: now.seconds - 61 * day))])
        #expect(cleanup.plan(sweep, for: stale, at: now).writes == [Write(.delete(stale.name), precondition: .updateTime(stale.updateTime!))])
        let doubtful = try device(["token": token, "timestamp": .timestamp(Timestamp(seconds: now.seconds - 40 * day))])
        #expect(cleanup.plan(sweep, for: doubtful, at: now).isEmpty)
        let checks = TokenCleanup(schema: try Self.schema, validate: true).plan(sweep, for: doubtful, at: now).checks
        #expect(checks.map(\.userID) == ["bob"] && checks.map(\.token) == [TokenCleanupTests.good[0]])
        #expect(cleanup.plan(sweep, for: try device(["timestamp": stale["timestamp"]!]), at: now).isEmpty, "no token: not Herald's to delete")
        #expect(cleanup.trigger.pattern == "fcmTokens/{userId}", "tokenCleanup watches the token documents, not the users")
    }

    /// An app keeping times as epoch milliseconds may still write `serverTimestamp()` beside a token, as
    /// the guide does: the pass asks for both kinds (Firestore compares a filter within one type).
    @Test func tokenTimesOfEitherKindAreSweptUnderNumericTimes() throws {
        let day: Int64 = 86_400
        let now = Timestamp(seconds: 20_000 * day)
        var schema = try Self.schema
        schema.timeFormat = .epochMilliseconds
        let cleanup = TokenCleanup(schema: schema)
        let sweeps = cleanup.sweeps(at: now)
        let cutoff = Timestamp(seconds: now.seconds - 60 * day)
        #expect(
            sweeps.prefix(2).map(\.query.filter) == [
                .field(FieldPath("timestamp"), .lessThan, .timestamp(cutoff)), .field(FieldPath("timestamp"), .lessThan, .integer(cutoff.seconds * 1000)),
            ])
        let device = FirestoreDocument(
            name: try DocumentName(project: "p", path: "fcmTokens/bob"),
            fields: ["token": .string(TokenCleanupTests.good[0]), "timestamp": .integer((now.seconds - 61 * day) * 1000)],
            updateTime: Timestamp(seconds: now.seconds - 61 * day))
        #expect(cleanup.plan(sweeps[1], for: device, at: now).writes.count == 1)
        #expect(
            TokenCleanup(schema: Schema.presets["default"]!).sweeps(at: now).count == 2,
            "a user document's own stamp: one query for old stamps, one for those from the future")
    }

    /// `schema infer` finds the guide's layout in an app's data: documents keyed by user ids, each with
    /// a token and the time it was written.
    @Test func inferProposesTheGuidesLayout() throws {
        let data = try SchemaInferenceOfForeignLayoutsTests.exportWithDevices { project, user in
            FirestoreDocument(
                name: try project.sibling(path: "fcmTokens/u\(user)"),
                fields: [
                    "token": .string("dGVzdC10b2tlbi0u\(user):APA91bH-abcdefghijklmnopqrstuvwxyz_0123456789-ABCDEFGHIJ"),
                    "timestamp": .timestamp(Timestamp(seconds: 1_780_000_000)),
                ])
        }
        let proposal = try SchemaInference.propose(from: data)
        #expect(proposal["tokens"] == ["documentPerUser": "fcmTokens"], "\(proposal.text)")
        #expect(proposal["tokensUpdatedAtField"] == "timestamp", "\(proposal.text)")
        let fit = SchemaFit.check(try proposal.schema(), against: data, newestMessages: 3)
        #expect(!fit.misfits.contains { $0.problem.contains("token") }, "\(fit.text)")
        #expect(fit.outcomes.contains { !$0.pushes.isEmpty }, "\(fit.text)")
    }
}
