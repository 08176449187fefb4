import FirestoreModel
import HeraldCore
import WireFormats

/// A layout keeping a user's tokens in one field of their user document: tokenCleanup watches the user
/// documents, and other holders of a token are found by a query on that field.
public protocol TokenFieldLayout: TokenLayout {
    /// The user document's field that holds the tokens.
    var field: String { get }
    init(field: String)
    /// How the layout reads `"tokens": {KEY: FIELD}` in docs/schema.md's table: "array `fcmTokens`".
    static var summaryPrefix: String { get }
}

extension TokenFieldLayout {
    public static var valueForm: String { "FIELD" }
    public init(schemaValue: JSONValue) throws(SchemaError) { self.init(field: try SchemaCheck.field(schemaValue, key: "tokens.\(Self.key)")) }
    public var schemaValue: JSONValue { .string(field) }
    public var summary: String { "\(Self.summaryPrefix) `\(field)`" }
    public func place(in schema: Schema) -> String { field }

    public var userDocumentField: String? { field }
    public var documents: TokenDocuments? { nil }
    public func reads(for user: DocumentName) -> TokenReads { TokenReads() }

    public func triggerPattern(in schema: Schema) -> String { schema.userPattern }
    /// The user document's tokens, each once, without empty ones.
    public func tokens(inWritten document: FirestoreDocument) -> [String] {
        tokens(of: document, in: DocumentsRead()).filter { !$0.isBlank }.firstOccurrences { $0 }
    }
    public func owner(ofWritten document: FirestoreDocument) -> String { document.name.documentID }

    /// A user document whose field holds something else than `expected`, `kind` naming what it holds.
    public func misfit(
        _ user: FirestoreDocument, expected: String, kind: (FirestoreValue) -> String, unless fits: (FirestoreValue) -> Bool
    ) -> [TokenMisfit] {
        guard let value = user[field], !fits(value) else { return [] }
        return [TokenMisfit(user, "\(field) is \(kind(value)), not \(expected)")]
    }
}
