import ChatDemo
import ChatFunctions
import ChatSchemaTools
import FirestoreEvents
import FirestoreModel
import Foundation
import HeraldCore
import HeraldTesting
import Testing
import WireFormats

/// `herald schema infer` and `check` on data: the custom layout no preset has, every preset's demo
/// world, planted misfits, and hostile or odd data.
@Suite struct SchemaInferenceTests {
    /// A herald export's documents (the fixtures are herald exports: one REST document per line).
    static func export(_ folder: String) throws -> [FirestoreDocument] {
        let text = try String(contentsOf: TestPaths.fixture("custom-layout/\(folder)/documents.jsonl"), encoding: .utf8)
        return try text.split(separator: "\n").compactMap { try FirestoreJSON.document(from: try JSONValue(parsing: String($0))) }
    }

    static var teamSchema: [String: JSONValue] {
        get throws {
            let file = try JSONValue(parsing: try String(contentsOf: TestPaths.fixture("custom-layout/schema.json"), encoding: .utf8))
            return try #require(file.objectValue).filter { !$0.key.hasPrefix("//") && $0.key != "extends" }
        }
    }

    /// Every key the team's own schema file sets is proposed with the same value, with its evidence.
    @Test func theCustomLayoutIsInferredKeyByKey() throws {
        let proposal = try SchemaInference.propose(from: AppData(try Self.export("export")))
        for (key, value) in try Self.teamSchema {
            #expect(proposal[key] == value, "\(key): proposed \(String(describing: proposal[key])), the team wrote \(value)")
        }
        let evidence = Dictionary(proposal.entries.map { ($0.key, $0.evidence) }, uniquingKeysWith: { a, _ in a })
        #expect(evidence["memberFields"] == "participantIds: array of user ids (users/…) in 14 of 14 rooms")
        #expect(evidence["senderIDField"]?.contains("authorId: a member of its conversation in 140 of 140 posts") == true)
        #expect(evidence["tokens"] == "devices: token documents under 14 of 14 users (21 FCM)")
        #expect(evidence["badgeField"] == "badgeCount: integer in 14 of 14 users")
        #expect(proposal.undecided.isEmpty, "\(proposal.undecided)")
        // The proposal is a schema file that loads, and reads back to the same decisions.
        let loaded = try Schema.load("proposed.json", file: try JSONValue(parsing: proposal.text))
        #expect(loaded.messagePattern == "rooms/{roomId}/posts/{postId}" && loaded.conversationCollection == "rooms")
        #expect(loaded.tokens == .subcollection(collection: "devices"))
    }

    @Test func tokensAsMapKeysAreInferred() throws {
        let proposal = try SchemaInference.propose(from: AppData(try Self.export("map-keys")))
        #expect(proposal["tokens"] == ["mapKeys": "pushTokens"], "\(proposal.text)")
    }

    /// Each preset's demo world (as its apps write it) is read back to the preset's own layout.
    @Test(arguments: ["default", "prd000", "prd001", "prd004"])
    func eachPresetsDemoWorldIsReadBackToItsLayout(preset: String) throws {
        let schema = try #require(Schema.presets[preset])
        let documents = try DemoWorldDocuments.make(schema)
        let proposal = try SchemaInference.propose(from: AppData(documents))
        let proposed = try proposal.schema()
        #expect(Trigger(pattern: proposed.messagePattern, kinds: [.created]).match(documents.first { $0.name.path.contains("m0-0") }!.name) != nil)
        #expect(proposed.conversationIDField == schema.conversationIDField, "\(preset)")
        #expect(proposed.userCollection == schema.userCollection && proposed.conversationCollection == schema.conversationCollection)
        #expect(Set(proposed.memberFields) == Set(schema.memberFields), "\(preset): \(proposed.memberFields)")
        #expect(proposed.senderIDField == schema.senderIDField && proposed.textField == schema.textField, "\(preset)")
        #expect(proposed.timestampField == schema.timestampField && proposed.tokens == schema.tokens, "\(preset): \(proposal.text)")
        #expect(proposed.badgeField == schema.badgeField && proposed.displayNameField == schema.displayNameField, "\(preset)")
        #expect(proposed.readByField == schema.readByField, "\(preset)")
    }

    /// `herald schema check` names each planted misfit by path, and finds none in the clean export.
    @Test func eachPlantedMisfitIsNamedByPath() throws {
        let schema = try Schema.load("team.json", file: .object(try Self.teamSchema))
        let clean = SchemaFit.check(schema, against: AppData(try Self.export("export")), newestMessages: 3)
        #expect(clean.misfits.isEmpty, "\(clean.text)")
        #expect(clean.outcomes.count == 3 && clean.outcomes.allSatisfy { $0.skipped == nil }, "\(clean.text)")
        let planted = try #require(
            try JSONValue(parsing: try String(contentsOf: TestPaths.fixture("custom-layout/misfits.json"), encoding: .utf8)).objectValue)
        let report = SchemaFit.check(schema, against: AppData(try Self.export("misfits")), newestMessages: 3)
        for (path, problem) in planted {
            let problem = try #require(problem.stringValue)
            #expect(report.misfits.contains { $0.path == path && $0.problem.contains(problem) }, "\(path): \(problem) not in\n\(report.text)")
        }
        #expect(Set(report.misfits.map(\.path)) == Set(planted.keys), "only the planted ones: \(report.text)")
    }

    /// The dry run shows the pushes the functions would send, with their text and badges.
    @Test func theDryRunShowsPushesAndWrites() throws {
        let schema = try Schema.load("team.json", file: .object(try Self.teamSchema))
        let report = SchemaFit.check(schema, against: AppData(try Self.export("export")), newestMessages: 14)
        let group = try #require(report.outcomes.first { $0.path == "rooms/r13/posts/p10" }, "\(report.text)")
        // Room 13 is a group (u13, u14, u1, u4); Nia (u14) wrote; u13 has seen it, so only u1 and u4 count it unread.
        #expect(group.pushes.filter { $0.contains("\"Team 12 • Nia: On my way (13.10)\"") }.count == 4, "\(group.pushes)")
        #expect(group.pushes.contains { $0.hasPrefix("to u1 on ") && $0.hasSuffix("badge 1") }, "\(group.pushes)")
        // The badge moves from the user document to its own (`badges`, as in every preset) with its first count.
        #expect(group.writes.contains { $0.hasPrefix("badges/u4: badgeCount +1") }, "\(group.writes)")
        #expect(group.writes.contains { $0 == "users/u4: badgeCount deleted" }, "\(group.writes)")
        #expect(report.notes.contains { $0.hasPrefix("14 of 14 users hold badgeCount: the badge is kept in badges/{userId}") }, "\(report.notes)")
        #expect(group.writes.contains { $0.hasPrefix("rooms/r13: ") && $0.contains("unreadCounts.u1 +1") && $0.contains("unreadCounts.u4 +1") })
        // Herald's unread mark is set inside its map, not deleted (a dotted mask path was looked up whole).
        let marks = try #require(group.writes.first { $0.hasPrefix("rooms/r13/posts/p10: ") }, "\(group.writes)")
        #expect(marks.contains("heraldUnread.u1 = true") && !marks.contains("deleted"), "\(marks)")
    }

    // MARK: Hostile or odd data: a clear answer, never a crash or a guess presented as certain.

    static func name(_ path: String) -> DocumentName { try! DocumentName(project: "p", path: path) }

    @Test func emptyDataIsSaidSo() {
        let error = #expect(throws: InferenceError.self) { try SchemaInference.propose(from: AppData([])) }
        #expect(error?.description.contains("holds no documents") == true)
    }

    @Test func tenThousandCollectionsGetABoundedClearAnswer() {
        var data = AppData()
        data.add((0..<10_000).map { FirestoreDocument(name: Self.name("c\($0)/d"), fields: ["x": .integer(1)]) })
        #expect(data.groupsLeftOut == 9_000 && data.limits.contains { $0.contains("beyond the first 1000") })
        let error = #expect(throws: InferenceError.self) { try SchemaInference.propose(from: data) }
        #expect(error?.description.contains("found no conversations") == true, "\(String(describing: error))")
    }

    /// Mixed types leave a key open (or Herald's own default) rather than a guess; deep maps are not walked.
    @Test func mixedTypesAndDeepMapsAreNotGuessed() throws {
        var documents = try Self.export("export")
        var deep = FirestoreValue.integer(1)
        for _ in 0..<100 { deep = .map(["next": deep]) }
        documents = documents.map { document in
            var document = document
            if document.name.path.hasPrefix("users/"), document.name.segments.count == 2 {
                // badgeCount an integer in some users, a string in most: no badge field is certain.
                if let number = Int(document.name.documentID.dropFirst()), number % 3 != 0 { document.fields["badgeCount"] = .string("many") }
                document.fields["profile"] = deep
            }
            return document
        }
        let proposal = try SchemaInference.propose(from: AppData(documents))
        #expect(proposal["badgeField"] != "badgeCount", "\(proposal.text)")
        #expect(proposal["messagePattern"] == "rooms/{roomId}/posts/{postId}")
    }

    /// A field the app keeps for itself under the name Herald would have written (a post's `status` of
    /// "edited", a room's `lastMessage` text) gets a field of Herald's own, and `schema check` names a
    /// status field that holds the app's values (Herald would write over them).
    @Test func fieldsTheAppKeepsForItselfAreNotProposedForHerald() throws {
        let documents = try Self.export("export").map { document in
            var document = document
            let segments = document.name.segments
            if segments.count == 4, segments[2] == "posts" { document.fields["status"] = .string("edited") }
            if segments.count == 2, segments[0] == "rooms" { document.fields["lastMessage"] = .string("see you") }
            return document
        }
        let proposal = try SchemaInference.propose(from: AppData(documents))
        #expect(proposal["statusField"] == "heraldStatus", "\(proposal.text)")
        #expect(proposal["lastMessage"] == ["map": "heraldLastMessage"], "\(proposal.text)")
        #expect(proposal.text.contains("status in "), "\(proposal.text)")
        var schema = try Schema.load("team.json", file: .object(try Self.teamSchema))
        schema.statusField = "status"
        let report = SchemaFit.check(schema, against: AppData(documents), newestMessages: 1)
        #expect(report.text.contains("status is \"edited\": Herald writes sent, delivered and read over it"), "\(report.text)")
    }

    /// A room's time of last activity is Herald's to set only where it is a timestamp named so: an
    /// `updatedAt` of the app's epoch milliseconds gets a field of Herald's own (and `schema check` names
    /// it), a `lastActivityAt` timestamp is proposed, and a `createdAt` timestamp never is.
    @Test func theLastActivityTimeIsProposedOnlyWhereHeraldMayWriteIt() throws {
        func rooms(_ fields: [String: FirestoreValue]) throws -> [FirestoreDocument] {
            try Self.export("export").map { document in
                var document = document
                if document.name.segments.count == 2, document.name.segments[0] == "rooms" { document.fields.merge(fields) { $1 } }
                return document
            }
        }
        let created = FirestoreValue.timestamp(Timestamp(seconds: 1_780_000_000, nanos: 0))
        let millis = try rooms(["updatedAt": .integer(1_780_000_000_000), "createdAt": created])
        let proposal = try SchemaInference.propose(from: AppData(millis))
        #expect(proposal["updatedAtField"] == "heraldUpdatedAt", "\(proposal.text)")
        let schema = try Schema.load("team.json", file: .object(try Self.teamSchema))
        #expect(schema.updatedAtField == "updatedAt")
        let report = SchemaFit.check(schema, against: AppData(millis), newestMessages: 1)
        #expect(
            report.misfits.contains { $0.path == "rooms/r1" && $0.problem.contains("updatedAt is epoch milliseconds, not a timestamp") }, "\(report.text)")
        let activity = try SchemaInference.propose(from: AppData(try rooms(["lastActivityAt": created, "createdAt": created])))
        #expect(activity["updatedAtField"] == "lastActivityAt", "\(activity.text)")
        let none = try SchemaInference.propose(from: AppData(try rooms(["createdAt": created])))
        #expect(none["updatedAtField"] == "updatedAt", "\(none.text)")
    }
}
