import FirestoreModel
import HeraldCore
import WireFormats

/// One document per device in a top-level collection, keyed by its token (or holding it in a `token`
/// field), the user's id in `userField`: Firebase's Friendly Chat codelab keeps `fcmTokens/{token}`
/// `{uid}`. A user's tokens are found by a query on that field, at most `ValueLookup.maximumFound`.
public struct TokenDocumentPerToken: TokenDocumentLayout, Hashable {
    public static let key = "documentPerToken"
    public static let valueForm = "{\"collection\": NAME, \"userField\": FIELD}"
    public static let underUsers = false
    public let collection: String
    public let userField: String
    public init(collection: String, userField: String) {
        self.collection = collection
        self.userField = userField
    }
    public init(schemaValue: JSONValue) throws(SchemaError) {
        guard case .object(let parts) = schemaValue, Set(parts.keys) == ["collection", "userField"], let collection = parts["collection"],
            let userField = parts["userField"]
        else { throw SchemaError("key \"tokens\" must be {\"\(Self.key)\": \(Self.valueForm)}") }
        self.init(
            collection: try SchemaCheck.collection(collection, key: "tokens.\(Self.key).collection"),
            userField: try SchemaCheck.field(userField, key: "tokens.\(Self.key).userField"))
    }
    public var schemaValue: JSONValue { ["collection": .string(collection), "userField": .string(userField)] }
    public var summary: String { "a document per token in `\(collection)`, the user in `\(userField)`" }
    public func place(in schema: Schema) -> String { "\(collection)/* by \(userField)" }
    public var collectionKey: String { "tokens.\(Self.key).collection" }

    /// A dead token deletes its document: the user field must be neither the token nor its time.
    public func problem(in schema: Schema) -> String? {
        if userField == "token" || userField == schema.tokensUpdatedAtField {
            return "key \"tokens.\(Self.key).userField\" names \"\(userField)\", which holds the token or its time: name the field that holds the user's id"
        }
        return problemOfCollection(in: schema)
    }

    /// The query for a user's device documents.
    public func lookup(of userID: String) -> ValueLookup { ValueLookup(collectionID: collection, field: FieldPath(userField), .equals, .string(userID)) }

    public func reads(for user: DocumentName) -> TokenReads { TokenReads(lookups: [lookup(of: user.documentID)]) }

    public func tokens(of user: FirestoreDocument, in read: DocumentsRead) -> [String] {
        Self.oldestFirst(devices(of: user.name, in: read)).map(TokenDocuments.token(of:))
    }

    /// Deletes the device's document as it was found: one written since (another account's sign-in) stays.
    public func removal(of token: String, from user: FirestoreDocument, in read: DocumentsRead) -> Write? {
        let holder = devices(of: user.name, in: read).first { TokenDocuments.token(of: $0) == token }
        return holder.flatMap { holder in holder.updateTime.map { Write(.delete(holder.name), precondition: .updateTime($0)) } }
    }

    func devices(of user: DocumentName, in read: DocumentsRead) -> [FirestoreDocument] {
        let lookup = lookup(of: user.documentID)
        return (read.lookups[lookup] ?? []).filter(lookup.matches)
    }

    public func triggerPattern(in schema: Schema) -> String { "\(collection)/{tokenId}" }
    public func owner(ofWritten document: FirestoreDocument) -> String { document[userField]?.stringValue ?? "" }

    /// Device documents no push can reach (their user field names no user), and users with more than a
    /// message reads (only the first `ValueLookup.maximumFound` by name are read, then the ten newest).
    public func notes(onAll tokenDocuments: [FirestoreDocument], userIDs: Set<String>) -> [String] {
        var notes: [String] = []
        let owners = tokenDocuments.map { $0[userField]?.stringValue }
        let orphans = owners.filter { !($0.map(userIDs.contains) ?? false) }.count
        if orphans > 0 {
            notes.append(
                "\(orphans) of \(tokenDocuments.count) \(collection) documents name no user in \(userField) (missing, not a string, or no such user): no push reaches them"
            )
        }
        let crowded = Dictionary(grouping: owners.compactMap { $0 }, by: { $0 }).filter { $0.value.count > ValueLookup.maximumFound }.keys.sorted()
        if !crowded.isEmpty {
            notes.append(
                "\(crowded.count) users have more than \(ValueLookup.maximumFound) \(collection) documents (\(crowded.prefix(5).joined(separator: ", "))): a message reads only the first \(ValueLookup.maximumFound) by name, and a device beyond them gets no push"
            )
        }
        return notes
    }

    public func seed(_ tokens: [String], of user: DocumentName, stamp: String?) throws -> TokenSeed {
        TokenSeed(writes: try tokens.map { try signIn($0, of: user, stamp: stamp) })
    }

    /// The device's one document, keyed by its token as the codelab keeps it: signed in as someone
    /// else, it names them instead.
    public func signIn(_ token: String, of user: DocumentName, stamp: String?) throws -> Write {
        Self.tokenDocument(try user.sibling(path: "\(collection)/\(token)"), fields: [userField: .string(user.documentID)], stamp: stamp)
    }
}
