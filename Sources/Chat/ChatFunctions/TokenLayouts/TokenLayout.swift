import FirestoreModel
import HeraldCore
import WireFormats

/// How an app keeps its users' push tokens. Each layout is one conforming type in a file of its own,
/// registered in `TokenLayouts.standard`; everything Herald does with tokens goes through this
/// protocol: what a message reads and whom it pushes to, which write removes a dead token, what
/// tokenCleanup watches and normalises, what the nightly sweep queries, the schema file's key and its
/// check, `schema check --data`'s report, and what the demo's app writes at sign-in.
///
/// Two families share their defaults: `TokenFieldLayout` (tokens in a field of the user document) and
/// `TokenDocumentLayout` (one document per device or per user, in a collection of their own).
public protocol TokenLayout: Sendable {
    /// The layout's name in a schema file: `"tokens": {KEY: VALUE}`.
    static var key: String { get }
    /// What its value looks like, for the message that refuses a wrong one: `NAME`.
    static var valueForm: String { get }
    /// The layout a schema file's value describes, every name in it checked (`SchemaCheck`).
    init(schemaValue: JSONValue) throws(SchemaError)
    /// The value a schema file gives it; read back, the same layout.
    var schemaValue: JSONValue { get }
    /// How docs/schema.md's table shows it: "array `fcmTokens`".
    var summary: String { get }
    /// Where the tokens are, for a report: `fcmTokens`, `users/*/tokens`.
    func place(in schema: Schema) -> String
    /// Why this layout cannot go with the rest of `schema` (nil if it can), naming its key.
    func problem(in schema: Schema) -> String?

    /// The user document's field that holds the tokens; nil when they are in documents of their own.
    var userDocumentField: String? { get }
    /// The token documents, when tokens are kept in documents of their own; nil when in the user document.
    var documents: TokenDocuments? { get }

    /// What a message must read, besides the user document, to know the user's tokens.
    func reads(for user: DocumentName) -> TokenReads
    /// The user's tokens, oldest first, as `read` found them (blank and repeated ones included).
    func tokens(of user: FirestoreDocument, in read: DocumentsRead) -> [String]
    /// The write that removes a dead token, only if it is still where and as it was read.
    func removal(of token: String, from user: FirestoreDocument, in read: DocumentsRead) -> Write?

    /// The documents tokenCleanup watches (a user document, or a token document), as a trigger pattern.
    func triggerPattern(in schema: Schema) -> String
    /// The tokens a watched document holds.
    func tokens(inWritten document: FirestoreDocument) -> [String]
    /// The user a watched document's tokens belong to.
    func owner(ofWritten document: FirestoreDocument) -> String
    /// The query for other watched documents holding `token` (nil: none can be found).
    func holders(of token: String, in schema: Schema) -> ValueLookup?
    /// What makes a watched document's tokens normal: no malformed ones, none of `superseded`, at most
    /// `TokenCleanup.maximumTokensPerUser`, each once; nil when they are.
    func normalization(of document: FirestoreDocument, dropping superseded: Set<String>) -> TokenFix?
    /// When each token in the user document was last written, in seconds since 1970, for a layout
    /// whose values hold it (nil: the tokens age together).
    func refreshTimes(in user: FirestoreDocument) -> [String: Int64]?
    /// The user document's field paths whose removal drops `tokens`, for a layout with `refreshTimes`
    /// (the sweep clears the stale ones).
    func clearing(_ tokens: [String]) -> [FieldPath]

    /// What `schema check --data` finds wrong with a user's tokens and the token documents it read,
    /// a value's kind named by `kind`.
    func misfits(of user: FirestoreDocument, tokenDocuments: [FirestoreDocument], kind: (FirestoreValue) -> String) -> [TokenMisfit]
    /// Notes on every token document of the data (`documents`' collection), knowing the users' ids.
    func notes(onAll tokenDocuments: [FirestoreDocument], userIDs: Set<String>) -> [String]

    /// What an app has written for a user holding `tokens` (oldest first): fields of the user document
    /// and writes of token documents, each token document stamped in `stamp` when there is one.
    func seed(_ tokens: [String], of user: DocumentName, stamp: String?) throws -> TokenSeed
    /// What an app writes when `user` signs in on the device with `token`.
    func signIn(_ token: String, of user: DocumentName, stamp: String?) throws -> Write
}

/// The token documents of a layout that keeps tokens in documents of their own.
public struct TokenDocuments: Sendable, Hashable {
    /// The collection's id.
    public var collection: String
    /// Under each user document (`users/{uid}/tokens`), else a top-level collection.
    public var underUsers: Bool
    public init(collection: String, underUsers: Bool) {
        self.collection = collection
        self.underUsers = underUsers
    }

    /// A device's token document's token: its `token` field, else its id (`users/{uid}/tokens/{token}`).
    public static func token(of device: FirestoreDocument) -> String { device["token"]?.stringValue ?? device.name.documentID }
}

/// What a message reads, besides a user's document, for their tokens.
public struct TokenReads: Sendable, Hashable {
    public var documents: [DocumentName] = []
    public var collections: [CollectionPath] = []
    public var lookups: [ValueLookup] = []
    public init(documents: [DocumentName] = [], collections: [CollectionPath] = [], lookups: [ValueLookup] = []) {
        self.documents = documents
        self.collections = collections
        self.lookups = lookups
    }
}

/// How tokenCleanup makes a watched document's tokens normal.
public enum TokenFix: Sendable, Hashable {
    /// Update these fields of the document (those in the mask and not in `fields` are removed).
    case update(fields: [String: FirestoreValue], mask: [FieldPath])
    /// Delete the token document.
    case delete
}

/// A problem `schema check --data` reports about one document.
public struct TokenMisfit: Sendable, Hashable {
    public var document: FirestoreDocument
    public var problem: String
    public init(_ document: FirestoreDocument, _ problem: String) {
        self.document = document
        self.problem = problem
    }
}

/// What an app has written for a user's tokens.
public struct TokenSeed: Sendable {
    public var userFields: [String: FirestoreValue] = [:]
    public var writes: [Write] = []
    public init(userFields: [String: FirestoreValue] = [:], writes: [Write] = []) {
        self.userFields = userFields
        self.writes = writes
    }
}

extension TokenLayout {
    public func problem(in schema: Schema) -> String? { nil }
    public func refreshTimes(in user: FirestoreDocument) -> [String: Int64]? { nil }
    public func clearing(_ tokens: [String]) -> [FieldPath] { [] }
    public func notes(onAll tokenDocuments: [FirestoreDocument], userIDs: Set<String>) -> [String] { [] }

    /// Token documents by when they were written, oldest first.
    public static func oldestFirst(_ documents: [FirestoreDocument]) -> [FirestoreDocument] {
        documents.sorted { ($0.updateTime ?? .distantPast, $0.name.path) < ($1.updateTime ?? .distantPast, $1.name.path) }
    }

    /// A token document as an app writes one, with `serverTimestamp()` in `stamp`.
    static func tokenDocument(_ name: DocumentName, fields: [String: FirestoreValue], stamp: String?) -> Write {
        Write(.update(name, fields: fields, mask: nil), transforms: stamp.map { [FieldTransform(FieldPath($0), .setToRequestTime)] } ?? [])
    }
}
