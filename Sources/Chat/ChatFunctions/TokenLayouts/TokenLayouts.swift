import FirestoreModel
import WireFormats

/// The token layouts a schema file may name, by their keys. A new layout is a type of its own and one
/// line in `standard`.
public struct TokenLayouts: Sendable {
    public let types: [any TokenLayout.Type]

    public static let standard = TokenLayouts([
        SingleTokenField.self, TokenArrayField.self, TokenMapKeys.self, TokenSubcollection.self, TokenDocumentPerUser.self,
        TokenDocumentPerToken.self,
    ])

    public init(_ types: [any TokenLayout.Type]) { self.types = types }

    /// These layouts and one more (a layout of the app's own, or one under test).
    public func adding(_ type: any TokenLayout.Type) -> TokenLayouts { TokenLayouts(types + [type]) }

    /// The layout a schema file's `tokens` value names: `{KEY: VALUE}`.
    func read(_ value: JSONValue) throws(SchemaError) -> Schema.TokenStorage {
        let usage = "key \"tokens\" must be " + types.map { "{\"\($0.key)\": \($0.valueForm)}" }.joined(separator: " or ")
        guard case .object(let members) = value, members.count == 1, let (key, inner) = members.first else { throw SchemaError(usage) }
        guard let type = types.first(where: { $0.key == key }) else { throw SchemaError("\(usage); not \(FirestoreNames.quoted(key))") }
        return Schema.TokenStorage(try type.init(schemaValue: inner))
    }
}

extension Schema {
    /// How a user's push tokens are kept: one of the `TokenLayouts`. Two are equal when a schema file
    /// writes them alike.
    public struct TokenStorage: Sendable, Hashable {
        public let layout: any TokenLayout
        public init(_ layout: any TokenLayout) { self.layout = layout }

        /// The schema file's value: `{KEY: VALUE}`.
        public var json: JSONValue { .object([type(of: layout).key: layout.schemaValue]) }

        public static func == (a: TokenStorage, b: TokenStorage) -> Bool { a.json == b.json }
        public func hash(into hasher: inout Hasher) { hasher.combine(json) }

        public static func single(field: String) -> TokenStorage { TokenStorage(SingleTokenField(field: field)) }
        public static func array(field: String) -> TokenStorage { TokenStorage(TokenArrayField(field: field)) }
        public static func mapKeys(field: String) -> TokenStorage { TokenStorage(TokenMapKeys(field: field)) }
        public static func subcollection(collection: String) -> TokenStorage { TokenStorage(TokenSubcollection(collection: collection)) }
        public static func documentPerUser(collection: String) -> TokenStorage { TokenStorage(TokenDocumentPerUser(collection: collection)) }
        public static func documentPerToken(collection: String, userField: String) -> TokenStorage {
            TokenStorage(TokenDocumentPerToken(collection: collection, userField: userField))
        }
    }
}
