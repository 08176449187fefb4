import FirestoreModel
import HeraldCore
import PushTokens
import WireFormats

/// A layout keeping tokens in documents of their own, one per device (or one per user): tokenCleanup
/// watches those documents, a dead token deletes its document, and the nightly sweep ages each by the
/// time the app writes in it.
public protocol TokenDocumentLayout: TokenLayout {
    /// The collection's id.
    var collection: String { get }
    /// Under each user document (`users/{uid}/tokens`), else a top-level collection.
    static var underUsers: Bool { get }
    /// The schema file's key naming the collection, for errors: `tokens.documentPerUser`.
    var collectionKey: String { get }
}

/// A document layout the schema file names by its collection alone (`{"subcollection": "tokens"}`).
public protocol TokenCollectionLayout: TokenDocumentLayout {
    init(collection: String)
}

extension TokenCollectionLayout {
    public init(schemaValue: JSONValue) throws(SchemaError) {
        self.init(collection: try SchemaCheck.collection(schemaValue, key: "tokens.\(Self.key)"))
    }
    public var schemaValue: JSONValue { .string(collection) }
}

extension TokenDocumentLayout {
    public var userDocumentField: String? { nil }
    public var documents: TokenDocuments? { TokenDocuments(collection: collection, underUsers: Self.underUsers) }
    public var collectionKey: String { "tokens.\(Self.key)" }

    public func tokens(inWritten document: FirestoreDocument) -> [String] { [TokenDocuments.token(of: document)] }

    /// Other token documents holding the token in their `token` field. One found only by its id cannot
    /// be: a collection group is not queried by the last part of a name.
    public func holders(of token: String, in schema: Schema) -> ValueLookup? {
        ValueLookup(collectionID: collection, allDescendants: Self.underUsers, field: FieldPath("token"), .equals, .string(token))
    }

    /// A token document holds one device: a superseded token takes it away, and so does a malformed one
    /// in its token field (a document id is not a token field the app wrote).
    public func normalization(of document: FirestoreDocument, dropping superseded: Set<String>) -> TokenFix? {
        guard let token = tokens(inWritten: document).first else { return nil }
        let malformed = document["token"]?.stringValue.map { !PushToken.isWellFormed($0) } ?? false
        return malformed || superseded.contains(token) ? .delete : nil
    }

    public func problem(in schema: Schema) -> String? { problemOfCollection(in: schema) }

    /// A dead token deletes its document: a top-level collection must hold nothing else.
    func problemOfCollection(in schema: Schema) -> String? {
        guard !Self.underUsers else { return nil }
        let segments = schema.messagePattern.split(separator: "/")
        guard
            [schema.userCollection, schema.conversationCollection, schema.badgeCollection].contains(collection)
                || (segments.count == 2 && segments[0] == Substring(collection))
        else { return nil }
        return
            "key \"\(collectionKey)\" names \"\(collection)\", the collection of other documents: a dead token deletes its document, so the tokens need a collection of their own"
    }

    /// Documents keyed by auto-ids, the token in a field of another name: Herald would push to the ids.
    public func misfits(of user: FirestoreDocument, tokenDocuments: [FirestoreDocument], kind: (FirestoreValue) -> String) -> [TokenMisfit] {
        tokenDocuments.filter { $0["token"] == nil }.compactMap { device in
            device.fields.filter { PushToken.looksLikeToken($0.value.stringValue ?? "") }.keys.sorted().first.map {
                TokenMisfit(device, "no token field: Herald takes the document id for the token, and the token is in \($0)")
            }
        }
    }
}
