import FirestoreEvents
import FirestoreModel
import HeraldCore

/// On a user document write: normalise the push tokens (no empty or malformed ones, no duplicates,
/// at most `maximumTokensPerUser`, keeping the newest). Its own write triggers it again and must then
/// change nothing, so a normal document is a no-op.
public struct TokenCleanup: EventFunction, ConfigurableFunction {
    public static let name = "tokenCleanup"
    public static let summary = "Normalise users' push tokens and remove stale or reassigned ones."
    public static let maximumTokensPerUser = 10

    public let schema: Schema
    public init(settings: FunctionSettings) throws { schema = try Schema.load(settings.schema) }
    public init(schema: Schema) { self.schema = schema }

    public var trigger: Trigger { Trigger(pattern: schema.userPattern, kinds: [.written, .created, .updated]) }

    public func documentsToRead(for change: DocumentChange, alreadyRead: DocumentsRead) -> [DocumentName] { [] }

    public func plan(for change: DocumentChange, documents: DocumentsRead) -> Plan {
        guard let user = change.newDocument else { return .skip("the user document was deleted") }
        // Conditional on the version planned from: a token added meanwhile wins, and its own event re-plans.
        let precondition: Precondition = user.updateTime.map { .updateTime($0) } ?? .exists(true)
        switch schema.tokens {
        case .single(let field):
            guard let value = user[field], value != .null else { return .skip("no token stored") }
            if let token = value.stringValue, Self.isWellFormed(token) { return .skip("tokens already normal") }
            return Plan(writes: [Write(.update(user.name, fields: [:], mask: [FieldPath(field)]), precondition: precondition)])
        case .array(let field):
            guard let values = user[field]?.arrayValue else { return .skip("no tokens stored") }
            let normal = Self.normalized(values.compactMap(\.stringValue))
            guard normal.map(FirestoreValue.string) != values else { return .skip("tokens already normal") }
            return Plan(writes: [Write(.update(user.name, fields: [field: .array(normal.map(FirestoreValue.string))], mask: [FieldPath(field)]),
                                       precondition: precondition)])
        case .mapKeys(let field):
            guard let map = user[field]?.mapValue else { return .skip("no tokens stored") }
            // Map keys carry no order: drop only the malformed ones.
            let bad = map.keys.filter { !Self.isWellFormed($0) }.sorted()
            guard !bad.isEmpty else { return .skip("tokens already normal") }
            return Plan(writes: [Write(.update(user.name, fields: [:], mask: bad.map { FieldPath(field, $0) }), precondition: precondition)])
        case .subcollection:
            return .skip("tokens in a subcollection are cleaned by the scheduled pass")
        }
    }

    /// Conservative on purpose, since removing a working token loses a device: only empty tokens, very
    /// long ones, and ones with spaces, control or non-ASCII characters (never in FCM or APNs tokens) go.
    static func isWellFormed(_ token: String) -> Bool {
        (1...4096).contains(token.utf8.count) && token.utf8.allSatisfy { (0x21...0x7E).contains($0) }
    }

    /// Well-formed tokens, each once at its newest (last) position, the newest `maximumTokensPerUser` kept.
    static func normalized(_ tokens: [String]) -> [String] {
        var seen = Set<String>()
        var newestFirst: [String] = []
        for token in tokens.reversed() where isWellFormed(token) && seen.insert(token).inserted {
            newestFirst.append(token)
        }
        return Array(newestFirst.prefix(maximumTokensPerUser).reversed())
    }
}
