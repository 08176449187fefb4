import FirestoreModel
import HeraldTesting
import Testing
import WireFormats

/// The byte-level text helpers and name parsing on every event's path, against the standard
/// library's character-level forms they replace.
@Suite struct TextAndNameTests {
    static let pieces = ["", "a", "/", "//", "é", "e\u{301}", "👩‍👩‍👧", "(default)", "x y", "\u{0}", "Ω/", "/ǅ", "ab/cd"]

    @Test func splittingAtAByteGivesWhatSplitGives() {
        var rng = SeededRandom(seed: 11)
        for _ in 0..<2_000 {
            let text = (0..<Int.random(in: 0...6, using: &rng)).map { _ in Self.pieces.randomElement(using: &rng)! }.joined()
            let expected = text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            #expect(text.parts(splitAt: "/") == expected, "\(text.debugDescription)")
        }
    }

    @Test func asciiTokensLowercaseAndTrimAsHTTPSays() {
        #expect("Content-Type".asciiLowercased == "content-type")
        #expect("already lower".asciiLowercased == "already lower")
        #expect("ÀPPLICATION/JSON".asciiLowercased == "Àpplication/json")
        #expect(" \tapplication/json \t".trimmingSpacesAndTabs == "application/json")
        #expect(" \t ".trimmingSpacesAndTabs == "")
        #expect("\u{A0}x\u{A0}".trimmingSpacesAndTabs == "\u{A0}x\u{A0}")
    }

    @Test func parsedNamesAreEqualExactlyWhenTheirResourceNamesAre() throws {
        let paths = ["users/u1", "users/u2", "conversations/c1/messages/m1", "conversations/c1/messages/m2", "a/b/c/d"]
        var names: [DocumentName] = []
        for project in ["p", "q"] {
            for database in ["(default)", "other"] {
                for path in paths { names.append(try DocumentName(project: project, database: database, path: path)) }
            }
        }
        for a in names {
            let reparsed = try DocumentName(resourceName: a.resourceName)
            #expect(reparsed == a && reparsed.hashValue == a.hashValue)
            for b in names { #expect((a == b) == (a.resourceName == b.resourceName)) }
        }
        #expect(Set(names).count == names.count)
    }

    @Test func badNamesAreStillRefused() {
        for path in ["users", "users/", "/users/u1", "users//u1", "users/u1/", "users/.", "users/..", "a/b/c"] {
            #expect(throws: DocumentNameError.self, "\(path)") { try DocumentName(project: "p", path: path) }
        }
        #expect(throws: DocumentNameError.self) { try DocumentName(project: "p", segments: ["users", "u/1"]) }
        #expect(throws: DocumentNameError.self) { try DocumentName(project: "p/q", path: "users/u1") }
        #expect(throws: DocumentNameError.self) { try DocumentName(resourceName: "projects/p/databases/d/documents/users/u1/x") }
        #expect(throws: DocumentNameError.self) { try DocumentName(resourceName: "projects/p/databases//documents/users/u1") }
    }

    @Test func patternsBindWildcardsAndCompareLiteralsExactly() throws {
        let pattern = DocumentPattern("conversations/{conversationId}/messages/{messageId}")
        let name = try DocumentName(project: "p", path: "conversations/c1/messages/m1")
        #expect(pattern.match(name) == ["conversationId": "c1", "messageId": "m1"])
        #expect(pattern.match(try DocumentName(project: "p", path: "Conversations/c1/messages/m1")) == nil)
        #expect(pattern.match(try DocumentName(project: "p", path: "conversations/c1")) == nil)
        #expect(DocumentPattern("/users/{id}/").match(try DocumentName(project: "p", path: "users/u1")) == ["id": "u1"])
    }
}

/// `Write.merging` searches a plan's few writes in place and indexes a sweep's many: both give what
/// the indexed form gives for any mix of updates, transforms, deletes and preconditions, and
/// `Write.mergedCount` counts as many.
@Suite struct WriteMergingTests {
    static func indexed(_ writes: [Write]) -> [Write] {
        var result: [Write] = []
        var position: [DocumentName: Int] = [:]
        for write in writes {
            if let index = position[write.document], let merged = result[index].merged(with: write) {
                result[index] = merged
            } else {
                position[write.document] = result.count
                result.append(write)
            }
        }
        return result
    }

    @Test(arguments: [3, 16, 17, 60, 200])
    func mergingMatchesTheIndexedForm(count: Int) throws {
        var rng = SeededRandom(seed: UInt64(count))
        let names = try (0..<4).map { try DocumentName(project: "p", path: "conversations/c\($0)") }
        for _ in 0..<200 {
            let writes = (0..<count).map { _ -> Write in
                let name = names.randomElement(using: &rng)!
                let field = ["a", "b", "c"].randomElement(using: &rng)!
                let precondition: Precondition? = [nil, .exists(true), .exists(false)].randomElement(using: &rng)!
                switch Int.random(in: 0..<4, using: &rng) {
                case 0: return Write(.update(name, fields: [field: .integer(1)], mask: [FieldPath(field)]), precondition: precondition)
                case 1: return Write(.transform(name), transforms: [FieldTransform(FieldPath(field), .increment(.integer(1)))])
                case 2: return Write(.update(name, fields: [field: .string("x")], mask: nil))
                default: return Write(.delete(name), precondition: precondition)
                }
            }
            #expect(Write.merging(writes) == Self.indexed(writes))
            #expect(Write.mergedCount([writes]) == Self.indexed(writes).count)
            #expect(Write.mergedCount([Array(writes.prefix(count / 2)), [], Array(writes.dropFirst(count / 2))]) == Self.indexed(writes).count)
        }
    }

    /// Writes of separate commits joined: the stronger condition holds for both, in either order; two
    /// creations or two different versions cannot be one write.
    @Test func joinedWritesKeepTheStrongerCondition() throws {
        let name = try DocumentName(project: "p", path: "users/u1")
        let (v1, v2) = (Timestamp(seconds: 1), Timestamp(seconds: 2))
        func write(_ precondition: Precondition?) -> Write {
            Write(.transform(name), transforms: [FieldTransform(FieldPath("badge"), .increment(.integer(1)))], precondition: precondition)
        }
        let cases: [(Precondition?, Precondition?, Precondition??)] = [
            (nil, nil, .some(nil)), (nil, .exists(true), .exists(true)), (.exists(true), nil, .exists(true)),
            (nil, .updateTime(v1), .updateTime(v1)), (.exists(true), .updateTime(v1), .updateTime(v1)), (.updateTime(v1), .exists(true), .updateTime(v1)),
            (.updateTime(v1), .updateTime(v2), nil), (.exists(false), nil, nil), (nil, .exists(false), nil),
            // Two plans made on one version: the second was decided on what the first changes.
            (.updateTime(v1), .updateTime(v1), nil),
        ]
        for (first, second, expected) in cases {
            let joined = write(first).joined(with: write(second))
            #expect(joined?.precondition == expected.flatMap { $0 }, "\(String(describing: first)) + \(String(describing: second))")
            #expect((joined == nil) == (expected == nil), "\(String(describing: first)) + \(String(describing: second))")
            #expect(joined.map { $0.transforms.count == 2 } ?? true)
        }
    }

    /// Two "newest wins" updates made on one version join: the newer one's fields, both counts.
    @Test func updatesMadeOnOneVersionJoinWhenTheySayWhichIsNewer() throws {
        let name = try DocumentName(project: "p", path: "conversations/c1")
        let version = Timestamp(seconds: 5)
        func lastMessage(_ id: String, at seconds: Int64, latestBy: FieldPath? = FieldPath("lastMessage", "timestamp")) -> Write {
            Write(
                .update(
                    name, fields: ["lastMessage": .map(["messageId": .string(id), "timestamp": .timestamp(Timestamp(seconds: seconds))])],
                    mask: [FieldPath("lastMessage")]),
                transforms: [FieldTransform(FieldPath("unread", id), .increment(.integer(1)))], precondition: .updateTime(version), latestBy: latestBy)
        }
        for (first, second) in [(lastMessage("m11", at: 11), lastMessage("m3", at: 3)), (lastMessage("m3", at: 3), lastMessage("m11", at: 11))] {
            let joined = try #require(first.joined(with: second))
            guard case .update(_, let fields, let mask) = joined.operation, case .map(let shown)? = fields["lastMessage"] else {
                Issue.record("not an update of lastMessage")
                continue
            }
            #expect(shown["messageId"] == .string("m11"))
            #expect(mask == [FieldPath("lastMessage")])
            #expect(joined.transforms.count == 2 && joined.precondition == .updateTime(version))
        }
        #expect(lastMessage("a", at: 1, latestBy: nil).joined(with: lastMessage("b", at: 2, latestBy: nil)) == nil)
    }
}

@Suite struct FirstOccurrencesTests {
    /// In place below 17 elements, through a set above: both keep the first of each key, in order.
    @Test(arguments: [0, 5, 16, 17, 80])
    func firstOccurrencesKeepTheFirstOfEachKeyInOrder(count: Int) {
        var rng = SeededRandom(seed: UInt64(count + 1))
        let elements = (0..<count).map { i in (id: i, key: Int.random(in: 0..<max(count / 3, 1), using: &rng)) }
        var seen = Set<Int>()
        let expected = elements.filter { seen.insert($0.key).inserted }.map(\.id)
        #expect(elements.firstOccurrences { $0.key }.map(\.id) == expected)
    }
}

@Suite struct ByteChecksTests {
    @Test func byteChecksAgreeWithTheirDefinitions() {
        for text in ["", "abc", "a/b", "/", "é/", "ÀB", "content-type", "Content-Type", "ce-id", "x\u{0}", "🚀", "%41"] {
            #expect(text.containsByte(UInt8(ascii: "/")) == text.utf8.contains(UInt8(ascii: "/")), "\(text)")
            #expect(text.containsByte(UInt8(ascii: "%")) == text.utf8.contains(UInt8(ascii: "%")), "\(text)")
            #expect(text.isLowercaseASCII == (text.allSatisfy(\.isASCII) && text.asciiLowercased == text), "\(text)")
        }
    }
}

@Suite struct FirestoreNamesTests {
    /// The names Google's emulator refuses (`__x__`, an empty name; `____` it takes) and production's
    /// 1,500-byte limit, which the emulator does not enforce.
    @Test func fieldNamesAndIdsAreRefusedAsFirestoreRefusesThem() {
        for refused in ["", "__x__", "__reserved__", String(repeating: "a", count: 1501)] {
            #expect(FirestoreNames.fieldNameProblem(refused) != nil, "\(refused.prefix(20))")
            #expect(!FirestoreNames.isUsableAsIDAndFieldName(refused))
        }
        for taken in ["a", "____", "__x", "x__", "_x_", "é", String(repeating: "a", count: 1500), "tok-1"] {
            #expect(FirestoreNames.fieldNameProblem(taken) == nil, "\(taken.prefix(20))")
            #expect(FirestoreNames.idProblem(taken) == nil, "\(taken.prefix(20))")
        }
        for refusedID in [".", "..", "a/b", "__id__", ""] { #expect(FirestoreNames.idProblem(refusedID) != nil, "\(refusedID)") }
        #expect(FirestoreNames.fieldNameProblem(String(repeating: "é", count: 751))?.contains("1502 bytes") == true)
    }
}
