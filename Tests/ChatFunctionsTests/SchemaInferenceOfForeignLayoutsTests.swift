import ChatFunctions
import ChatSchemaTools
import FirestoreModel
import Testing
import WireFormats

/// `herald schema infer` on shapes real apps keep that the custom layout does not: fields that look
/// like what Herald needs but are not (a recipient, an id, a file name, a uid), and places Herald cannot
/// use as they are. Each was once proposed as certain, and `schema check` then said everything fit.
@Suite struct SchemaInferenceOfForeignLayoutsTests {
    /// The custom layout's export with `change` applied to each document (nil drops it), plus `added`.
    static func export(_ change: (inout FirestoreDocument) -> Bool = { _ in true }, added: [FirestoreDocument] = []) throws -> AppData {
        let documents = try SchemaInferenceTests.export("export").compactMap { document -> FirestoreDocument? in
            var document = document
            return change(&document) ? document : nil
        }
        return AppData(documents + added)
    }

    /// The custom layout with its device subcollections replaced by `device(project, n)` for n in 1…14
    /// (users u1…u14).
    static func exportWithDevices(_ device: (DocumentName, Int) throws -> FirestoreDocument) throws -> AppData {
        let project = try #require(try SchemaInferenceTests.export("export").first).name
        return try export({ !($0.name.segments.count == 4 && $0.name.segments[2] == "devices") }, added: try (1...14).map { try device(project, $0) })
    }

    static func isPost(_ document: FirestoreDocument) -> Bool { document.name.segments.count == 4 && document.name.segments[2] == "posts" }
    static func isRoom(_ document: FirestoreDocument) -> Bool { document.name.segments.count == 2 && document.name.segments[0] == "rooms" }

    /// In a room the recipient is a member as much as the sender, and Firebase's presence recipe keeps a
    /// `status/{uid}` document per user: ties the data cannot break were broken by a dictionary's order
    /// (a different answer on each run). The names decide: `userId` over `toUserId`, `users` over `status`.
    @Test func aRecipientBesideTheSenderAndAStatusCollectionBesideTheUsersDecideByName() throws {
        var statuses: [FirestoreDocument] = []
        let data = try Self.export { document in
            if Self.isPost(document), let author = document.fields.removeValue(forKey: "authorId") {
                document.fields["userId"] = author
                // Everyone in these rooms is a member: the recipient is always one.
                document.fields["toUserId"] = author == .string("u1") ? .string("u2") : .string("u1")
            }
            if document.name.segments.count == 2, document.name.segments[0] == "users" {
                statuses.append(
                    FirestoreDocument(name: try! document.name.sibling(path: "status/\(document.name.documentID)"), fields: ["state": .string("online")]))
            }
            return true
        }
        var withStatus = data
        withStatus.add(statuses)
        let proposal = try SchemaInference.propose(from: withStatus)
        #expect(proposal["senderIDField"] == "userId", "\(proposal.text)")
        #expect(proposal["userCollection"] == "users", "\(proposal.text)")
    }

    /// A message's own id copied into it, another id, or its time as ISO text are long strings too: the
    /// text is the field of varied text with words in it.
    @Test func anIdOrATimeWrittenAsTextIsNotTheMessageText() throws {
        let data = try Self.export { document in
            if Self.isPost(document) {
                let room = document.name.segments[1]
                let post = document.name.documentID
                document.fields["id"] = .string("Xq7\(room)Lm2Pz9Rk4Tw8Yb6Nc5Vd3\(post)")
                document.fields["createdAt"] = .string("2026-11-01T10:\(room.count + post.count)\(post.suffix(1)):51.000+00:00")
            }
            return true
        }
        let proposal = try SchemaInference.propose(from: data)
        #expect(proposal["textField"] == "body", "\(proposal.text)")
    }

    /// Token documents keyed by auto-ids with the token in `fcmToken`: Herald reads a token document's
    /// `token` field or its id, so the key is left open with what to change, not proposed to send to ids.
    /// A user's `uid` field is never taken for a token.
    @Test func tokensHeraldCouldNotReadAreNotProposed() throws {
        var index = 0
        let data = try Self.export { document in
            if document.name.segments.count == 4, document.name.segments[2] == "devices" {
                index += 1
                let token = document["token"]!
                document = FirestoreDocument(
                    name: try! document.name.sibling(path: "users/\(document.name.segments[1])/devices/aB3dE5gH7jK9mN1pQ\(100 + index)"),
                    fields: ["fcmToken": token, "platform": .string("android")])
            }
            if document.name.segments.count == 2, document.name.segments[0] == "users" {
                document.fields["uid"] = .string("\(document.name.documentID)Zx8Wv6Ut4Sr2Qp0On9Ml7")
            }
            return true
        }
        let proposal = try SchemaInference.propose(from: data)
        #expect(proposal["tokens"] == nil, "\(proposal.text)")
        let open = proposal.undecided.first { $0.key == "tokens" }?.reason ?? ""
        #expect(open.contains("devices: token documents hold the token in fcmToken"), "\(proposal.text)")
    }

    /// A `name` on a message that is an attachment's file name is not the sender's name; one equal to
    /// the sender's display name is.
    @Test func theSendersNameIsAFieldThatHoldsIt() throws {
        let names = ["u1": "Ann"]
        let files = try SchemaInference.propose(
            from: try Self.export { document in
                if Self.isPost(document) { document.fields["fileName"] = .string("IMG_\(document.name.documentID).jpg") }
                return true
            })
        #expect(files["senderNameField"] == nil, "\(files.text)")
        let authors = try SchemaInference.propose(
            from: try Self.export { document in
                if Self.isPost(document), let author = document["authorId"]?.stringValue, let name = names[author] {
                    document.fields["authorName"] = .string(name)
                }
                return true
            })
        #expect(authors["senderNameField"] == "authorName", "\(authors.text)")
    }

    /// The app's own last-message map ({content, from, ts}) gets a map of Herald's own beside it.
    @Test func theAppsOwnLastMessageMapIsNotWrittenOver() throws {
        let data = try Self.export { document in
            if Self.isRoom(document) {
                document.fields["lastMessage"] = .map([
                    "content": .string("see you"), "from": .string("u1"), "ts": .timestamp(Timestamp(seconds: 1_780_000_000)),
                ])
            }
            return true
        }
        let proposal = try SchemaInference.propose(from: data)
        #expect(proposal["lastMessage"] == ["map": "heraldLastMessage"], "\(proposal.text)")
        #expect(proposal.text.contains("holds content, from, ts of your app's"), "\(proposal.text)")
        let herald = try SchemaInference.propose(
            from: try Self.export { document in
                if Self.isRoom(document) { document.fields["lastMessage"] = .map(["text": .string("see you"), "senderId": .string("u1")]) }
                return true
            })
        #expect(herald["lastMessage"] == ["map": "lastMessage"], "\(herald.text)")
    }

    /// A field Herald cannot use (a name with a dot: `group.name`) leaves its key open with the reason;
    /// the proposal still loads, where it once refused the whole data for it.
    @Test func aFieldNameWithADotLeavesItsKeyOpenNotTheWholeProposal() throws {
        let data = try Self.export { document in
            if Self.isRoom(document), let title = document.fields.removeValue(forKey: "title") { document.fields["room.title"] = title }
            return true
        }
        let proposal = try SchemaInference.propose(from: data)
        #expect(proposal["groupNameField"] == nil, "\(proposal.text)")
        let open = proposal.undecided.first { $0.key == "groupNameField" }?.reason ?? ""
        #expect(open.contains("\"room.title\" is not a field name"), "\(proposal.text)")
        let loaded = try Schema.load("proposed.json", file: try JSONValue(parsing: proposal.text))
        #expect(loaded.messagePattern == "rooms/{roomId}/posts/{postId}")
    }

    /// A sender kept in a top-level field whose name holds a dot is proposed as a path of one segment
    /// (`` `from.id` ``), which reads that field, not `id` inside a map `from`.
    @Test func aSenderFieldNameWithADotIsProposedAsOneSegment() throws {
        let data = try Self.export { document in
            if Self.isPost(document), let author = document.fields.removeValue(forKey: "authorId") { document.fields["from.id"] = author }
            return true
        }
        let proposal = try SchemaInference.propose(from: data)
        #expect(proposal["senderIDField"] == "`from.id`", "\(proposal.text)")
        let schema = try Schema.load("proposed.json", file: try JSONValue(parsing: proposal.text))
        let post = try #require(data.documents(in: ["rooms", "posts"]).first)
        #expect(Schema.value(of: schema.senderIDField, in: post) == post["from.id"])
    }

    /// Members kept as a map (`{uid: true}`, or `{uid: {role}}`; `false` for one who left), as apps from
    /// before array-contains queries do: infer proposes the map, and Herald reads its keys.
    @Test func membersKeptAsAMapAreProposedAndRead() throws {
        let data = try Self.export { document in
            if Self.isRoom(document), let ids = document.fields.removeValue(forKey: "participantIds")?.arrayValue {
                var members = Dictionary(uniqueKeysWithValues: ids.compactMap(\.stringValue).map { ($0, FirestoreValue.boolean(true)) })
                members["u99"] = .boolean(false)
                document.fields["participants"] = .map(members)
            }
            return true
        }
        let proposal = try SchemaInference.propose(from: data)
        #expect(proposal["memberFields"] == ["participants"], "\(proposal.text)")
        #expect(proposal.text.contains("participants: map keyed by user ids"), "\(proposal.text)")
        let schema = try Schema.load("team.json", file: try JSONValue(parsing: proposal.text))
        let room = try #require(data.document(try DocumentName(project: "herald-local", path: "rooms/r1")))
        let members = schema.members(of: room)
        #expect(!members.isEmpty && !members.contains("u99") && members == members.sorted(), "\(members)")
        let report = SchemaFit.check(schema, against: data, newestMessages: 3)
        #expect(!report.misfits.contains { $0.problem.contains("member") }, "\(report.text)")
    }

    /// `schema check` on a room whose member list is empty says so, not "is array (an array is needed)".
    @Test func anEmptyMemberListIsCalledEmpty() throws {
        let data = try Self.export { document in
            if Self.isRoom(document), document.name.documentID == "r1" { document.fields["participantIds"] = .array([]) }
            return true
        }
        let schema = try Schema.load("team.json", file: .object(try SchemaInferenceTests.teamSchema))
        let report = SchemaFit.check(schema, against: data, newestMessages: 1)
        #expect(
            report.misfits.contains { $0.path == "rooms/r1" && $0.problem.hasPrefix("no member list: participantIds is an empty array") }, "\(report.text)")
    }

    /// Times kept as epoch milliseconds in one field where the app's others are timestamps are named
    /// where a timestamp was looked for and not found, with the key that would read them.
    @Test func timesKeptAsNumbersAreNamedWhereATimestampIsMissing() throws {
        let data = try Self.export { document in
            if Self.isPost(document), let sent = document["sentAt"]?.timestampValue { document.fields["sentAt"] = .integer(sent.seconds * 1000) }
            return true
        }
        let proposal = try SchemaInference.propose(from: data)
        let open = proposal.undecided.first { $0.key == "timestampField" }?.reason ?? ""
        #expect(open.contains(#"(sentAt holds epoch milliseconds: with "timeFormat": "epochMilliseconds" Herald reads it"#), "\(proposal.text)")
        #expect(proposal["timeFormat"] == nil, "one field of each: timestamps")
    }

    /// `schema check` on a hand-written schema file whose token place holds something else: a user's own
    /// id, or device documents keyed by auto-ids with the token in another field (Herald would push to
    /// the ids, and a dead token's removal would delete the id field or the device).
    @Test func aTokenPlaceHoldingIdsIsNamedByCheck() throws {
        var index = 0
        let data = try Self.export { document in
            if document.name.segments.count == 4, document.name.segments[2] == "devices" {
                index += 1
                document = FirestoreDocument(
                    name: try! document.name.sibling(path: "users/\(document.name.segments[1])/devices/aB3dE5gH7jK9mN1pQ\(100 + index)"),
                    fields: ["fcmToken": document["token"]!])
            }
            if document.name.segments.count == 2, document.name.segments[0] == "users" { document.fields["uid"] = .string(document.name.documentID) }
            return true
        }
        let schema = try Schema.load("team.json", file: .object(try SchemaInferenceTests.teamSchema))
        let devices = SchemaFit.check(schema, against: data, newestMessages: 1)
        #expect(
            devices.misfits.contains { $0.path.hasPrefix("users/u1/devices/aB3dE5gH7jK9mN1pQ") && $0.problem.contains("the token is in fcmToken") },
            "\(devices.text)")
        var uid = schema
        uid.tokens = .single(field: "uid")
        let ids = SchemaFit.check(uid, against: data, newestMessages: 1)
        #expect(ids.misfits.contains { $0.path == "users/u1" && $0.problem.hasPrefix("uid holds the user's own id, not a token") }, "\(ids.text)")
    }

    /// Device documents keyed by their token with no token field work for pushes, but tokenCleanup
    /// cannot find them from another account's sign-in: check says so, and not for the fixture's
    /// documents, which hold the token in a field too.
    @Test func tokenDocumentsKeyedOnlyByTheirTokenAreNoted() throws {
        let schema = try Schema.load("team.json", file: .object(try SchemaInferenceTests.teamSchema))
        let idOnly = try Self.export { document in
            if document.name.segments.count == 4, document.name.segments[2] == "devices" { document.fields["token"] = nil }
            return true
        }
        let noted = SchemaFit.check(schema, against: idOnly, newestMessages: 1)
        #expect(noted.notes.contains { $0.contains("token documents keep the token only as their id") }, "\(noted.text)")
        #expect(noted.misfits.isEmpty, "pushes still reach them: \(noted.text)")
        let fixture = SchemaFit.check(schema, against: try Self.export(), newestMessages: 1)
        #expect(!fixture.notes.contains { $0.contains("only as their id") }, "\(fixture.text)")
    }

    /// flyer_chat's users keep `firstName` and `lastName` and no full name: infer proposes both (alerts
    /// say "Ann Lee", not "Someone"), a message's `authorName` equal to them both is the sender's name,
    /// and check names a last name that is not a string.
    @Test func aNameInTwoFieldsIsProposedWhole() throws {
        let lastNames = ["u1": "Lee", "u2": "Park"]
        let data = try Self.export { document in
            if document.name.segments.count == 2, document.name.segments[0] == "users", let name = document.fields.removeValue(forKey: "displayName") {
                document.fields["firstName"] = name
                document.fields["lastName"] = .string(lastNames[document.name.documentID] ?? "Doe")
            }
            if Self.isPost(document), document["authorId"]?.stringValue == "u1" { document.fields["authorName"] = .string("Ann Lee") }
            return true
        }
        let proposal = try SchemaInference.propose(from: data)
        #expect(proposal["displayNameField"] == "firstName", "\(proposal.text)")
        #expect(proposal["familyNameField"] == "lastName", "\(proposal.text)")
        #expect(proposal.entries.first { $0.key == "displayNameField" }?.evidence.hasSuffix("shown as \"Ann Lee\"") == true, "\(proposal.text)")
        #expect(proposal["senderNameField"] == "authorName", "\(proposal.text)")

        var schema = try Schema.load("team.json", file: .object(try SchemaInferenceTests.teamSchema))
        schema.displayNameField = "firstName"
        schema.familyNameField = "lastName"
        var numbered = data
        numbered.add([
            FirestoreDocument(
                name: try DocumentName(project: "herald-local", path: "users/u99"), fields: ["firstName": .string("Zed"), "lastName": .integer(9)])
        ])
        let report = SchemaFit.check(schema, against: numbered, newestMessages: 1)
        #expect(report.misfits.contains { $0.path == "users/u99" && $0.problem == "lastName is integer, not a string" }, "\(report.text)")
    }

    /// react-native-gifted-chat keeps a message's sender in a map (`user: {_id, name, avatar}`): infer
    /// proposes the paths into it, and check finds every sender a member.
    @Test func aSenderInsideAMapIsProposedByItsPath() throws {
        let names = ["u1": "Ann", "u2": "Ben"]
        let data = try Self.export { document in
            if Self.isPost(document), let author = document.fields.removeValue(forKey: "authorId")?.stringValue {
                var user: [String: FirestoreValue] = ["_id": .string(author), "avatar": .string("https://example.com/\(author).png")]
                if let name = names[author] { user["name"] = .string(name) }
                document.fields["user"] = .map(user)
            }
            return true
        }
        let proposal = try SchemaInference.propose(from: data)
        #expect(proposal["senderIDField"] == "user._id", "\(proposal.text)")
        #expect(proposal["senderNameField"] == "user.name", "\(proposal.text)")
        let schema = try Schema.load("gifted.json", file: try JSONValue(parsing: proposal.text))
        let report = SchemaFit.check(schema, against: data, newestMessages: 3)
        #expect(!report.misfits.contains { $0.problem.contains("sender") || $0.problem.contains("user._id") }, "\(report.text)")
    }

    /// Readers kept as a map (`seenBy: {uid: timestamp}`) are proposed as the read state, and check takes them.
    @Test func readersKeptAsAMapAreProposed() throws {
        let data = try Self.export { document in
            if Self.isPost(document), let readers = document["seenBy"]?.arrayValue?.compactMap(\.stringValue) {
                document.fields["seenBy"] = .map(
                    Dictionary(uniqueKeysWithValues: readers.map { ($0, FirestoreValue.timestamp(Timestamp(seconds: 1_790_000_000))) }))
            }
            return true
        }
        let proposal = try SchemaInference.propose(from: data)
        #expect(proposal["readByField"] == "seenBy", "\(proposal.text)")
        #expect(proposal.entries.first { $0.key == "readByField" }?.evidence.hasPrefix("seenBy: maps keyed by user ids") == true, "\(proposal.text)")
        let report = SchemaFit.check(try Schema.load("team.json", file: try JSONValue(parsing: proposal.text)), against: data, newestMessages: 1)
        #expect(!report.misfits.contains { $0.problem.contains("seenBy") }, "\(report.text)")
    }

    /// An app writing `Date.now()` keeps every time as epoch milliseconds: infer found no message time and
    /// no heartbeat ("presence never expires"). It now proposes `timeFormat` with the fields, and check
    /// finds them fit; with timestamps declared instead, check names the numbers.
    @Test func timesKeptAsEpochMillisecondsAreProposedWithTheirFormat() throws {
        let data = try Self.export { document in
            for (field, value) in document.fields {
                if case .timestamp(let time) = value { document.fields[field] = .integer(time.seconds * 1000 + Int64(time.nanos / 1_000_000)) }
            }
            return true
        }
        let proposal = try SchemaInference.propose(from: data)
        #expect(proposal["timeFormat"] == "epochMilliseconds", "\(proposal.text)")
        #expect(proposal["timestampField"] == "sentAt", "\(proposal.text)")
        #expect(proposal["heartbeatField"] == "lastActiveAt", "\(proposal.text)")
        let fit = SchemaFit.check(try proposal.schema(), against: data, newestMessages: 3)
        #expect(!fit.misfits.contains { $0.problem.contains("epoch") || $0.problem.contains("timestamp") }, "\(fit.text)")

        let timestamps = try Schema.load("custom.json", file: .object(try SchemaInferenceTests.teamSchema.merging(["extends": "default"]) { $1 }))
        let misfits = SchemaFit.check(timestamps, against: data, newestMessages: 3).misfits
        #expect(misfits.contains { $0.problem.hasPrefix("sentAt is epoch milliseconds, not a timestamp") })
        #expect(misfits.contains { $0.problem.hasPrefix("lastActiveAt is epoch milliseconds, not a timestamp: presence never expires") })
    }

    /// Messages without a type field, some holding a photo's address in `image` (react-native-gifted-chat):
    /// infer proposes `mediaFields`, and check's dry run shows the label.
    @Test func mediaKeptInAFieldOfItsOwnIsProposed() throws {
        let data = try Self.export { document in
            guard Self.isPost(document) else { return true }
            document.fields["contentType"] = nil
            if document.name.documentID == "p10" {
                document.fields["body"] = .string("")
                document.fields["image"] = .string("https://example.com/\(document.name.segments[1]).jpg")
            }
            return true
        }
        let proposal = try SchemaInference.propose(from: data)
        #expect(proposal["mediaFields"] == ["image": "image"], "\(proposal.text)")
        let fit = SchemaFit.check(try proposal.schema(), against: data, newestMessages: 3)
        #expect(fit.text.contains("📷 Photo"), "\(fit.text)")
    }
}
