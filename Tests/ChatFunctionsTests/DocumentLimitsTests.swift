import FirestoreModel
import HeraldCore
import Testing

/// A plan's writes that would take a document past Firestore's 1 MiB are left out before the commit,
/// with a warning; Firestore would refuse the whole commit, on every retry.
@Suite struct DocumentLimitsTests {
    static func name(_ path: String) -> DocumentName { try! DocumentName(project: "p", path: path) }
    static let conversation = name("conversations/c")
    static let message = name("conversations/c/messages/m")
    static let users = (0..<10).map { name("users/u\($0)") }

    /// A document of about `size` bytes: its name and a padding field.
    static func document(_ name: DocumentName, size: Int, fields: [String: FirestoreValue] = [:]) -> FirestoreDocument {
        let base = DocumentSize.of(name: name, fields: fields.merging(["pad": .string("")]) { a, _ in a })
        return FirestoreDocument(name: name, fields: fields.merging(["pad": .string(String(repeating: "p", count: size - base))]) { a, _ in a })
    }

    static func plan() -> Plan {
        let lastMessage = Write(
            .update(conversation, fields: ["lastMessage": .map(["text": .string(String(repeating: "t", count: 80))])], mask: [FieldPath("lastMessage")]))
        let groups = users.map { user in
            [
                Write(.update(message, fields: ["heraldUnread": .map([user.documentID: .boolean(true)])], mask: [FieldPath("heraldUnread", user.documentID)])),
                Write(.transform(user), transforms: [FieldTransform(FieldPath("unreadTotal"), .increment(.integer(1)))]),
            ]
        }
        return Plan(writes: [lastMessage], groups: groups)
    }

    @Test func aPlanFarFromTheLimitIsUnchanged() {
        let read = DocumentsRead(found: [Self.conversation: Self.document(Self.conversation, size: 2000), Self.message: Self.document(Self.message, size: 500)])
        #expect(Self.plan().fittingDocumentLimits(read) == Self.plan())
    }

    @Test func aWriteThatWouldOverfillItsDocumentIsLeftOutAlone() {
        let full = Self.document(Self.conversation, size: DocumentSize.maximumBytes - 50)
        let read = DocumentsRead(found: [Self.conversation: full, Self.message: Self.document(Self.message, size: 500)])
        let fitted = Self.plan().fittingDocumentLimits(read)
        #expect(fitted.writes.isEmpty)
        #expect(fitted.groups == Self.plan().groups, "every recipient is still counted")
        #expect(fitted.warnings.count == 1 && fitted.warnings[0].contains("conversations/c would be"), "\(fitted.warnings)")
    }

    /// The first mark adds 17 bytes to the message (the map and its entry), each later one 4: with 30
    /// bytes to spare the first four recipients fit, the rest are
    /// left out group by group (mark and badge together), never half.
    @Test func recipientsWhoseMarksDoNotFitAreLeftOutWhole() {
        let nearlyFull = Self.document(Self.message, size: DocumentSize.maximumBytes - 30)
        let read = DocumentsRead(found: [Self.conversation: Self.document(Self.conversation, size: 2000), Self.message: nearlyFull])
        let fitted = Self.plan().fittingDocumentLimits(read)
        #expect(fitted.writes == Self.plan().writes)
        #expect(fitted.groups.count == 4, "\(fitted.groups.count)")
        #expect(fitted.groups == Array(Self.plan().groups.prefix(fitted.groups.count)))
        #expect(fitted.warnings.count == 10 - fitted.groups.count)
        // What is left fits: the message as the kept marks leave it.
        var fields = nearlyFull.fields
        for write in fitted.groups.joined() where write.document == Self.message { fields = write.fields(after: fields, commitTime: .now()).fields! }
        #expect(DocumentSize.of(name: Self.message, fields: fields) <= DocumentSize.maximumBytes)
    }

    /// The write application the local cloud commits with and the plan is sized with: masks, transforms in order.
    @Test func aWritesEffectIsTheUpdateThenEachTransform() {
        let write = Write(
            .update(Self.conversation, fields: ["a": .map(["b": .integer(2)])], mask: [FieldPath("a", "b"), FieldPath("gone")]),
            transforms: [FieldTransform(FieldPath("n"), .maximum(.integer(0))), FieldTransform(FieldPath("n"), .increment(.integer(1)))])
        let (fields, results) = write.fields(after: ["a": .map(["c": .string("kept")]), "gone": .boolean(true), "n": .integer(-7)], commitTime: .now())
        #expect(fields == ["a": .map(["b": .integer(2), "c": .string("kept")]), "n": .integer(1)])
        #expect(results == [.integer(0), .integer(1)])
    }
}
