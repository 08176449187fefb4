import FirestoreEvents
import FirestoreModel
import HeraldCore

/// On a user document write: normalise the push tokens (no empty or malformed ones, no duplicates, at
/// most `maximumTokensPerUser`, keeping the newest), note when they changed, and take a token the user
/// just gained away from any other user who still has it (a phone that changed accounts must not get
/// the previous account's messages). Its own write triggers it again and then changes nothing.
/// Daily (`tokenCleanup sweep`, see TokenSweep.swift): remove tokens not refreshed for a long time.
public struct TokenCleanup: EventFunction, ConfigurableFunction {
    public static let name = "tokenCleanup"
    public static let summary = "Normalise users' push tokens and remove stale or reassigned ones."
    public static let maximumTokensPerUser = 10

    public let schema: Schema
    /// Seconds without a token change (and without the user being seen) after which tokens are removed
    /// (`HERALD_TOKEN_STALE_AFTER`; 60 days, as Firebase recommends).
    public let staleAfter: Int64
    /// Seconds after which tokens are doubtful and checked with a validate-only send, when `validate` is on
    /// (`HERALD_TOKEN_VALIDATE`, `HERALD_TOKEN_DOUBTFUL_AFTER`; 30 days).
    public let validate: Bool
    public let doubtfulAfter: Int64

    public init(settings: FunctionSettings) throws {
        self.init(schema: try Schema.load(settings.schema),
                  staleAfter: try settings.seconds("HERALD_TOKEN_STALE_AFTER", default: 60 * 86_400),
                  validate: try settings.flag("HERALD_TOKEN_VALIDATE"),
                  doubtfulAfter: try settings.seconds("HERALD_TOKEN_DOUBTFUL_AFTER", default: 30 * 86_400))
    }

    public init(schema: Schema, staleAfter: Int64 = 60 * 86_400, validate: Bool = false, doubtfulAfter: Int64 = 30 * 86_400) {
        self.schema = schema
        self.staleAfter = staleAfter
        self.validate = validate
        self.doubtfulAfter = doubtfulAfter
    }

    public var trigger: Trigger { Trigger(pattern: schema.userPattern, kinds: [.written, .created, .updated]) }

    /// The user document as it is now, when this write needs anything done: the writes are conditional
    /// on its current version (the event's may be long gone: presence heartbeats write the same document).
    public func documentsToRead(for change: DocumentChange, alreadyRead: DocumentsRead) -> [DocumentName] {
        needsWork(change) ? [change.document] : []
    }

    /// The other users who hold a token this user has just gained.
    public func lookups(for change: DocumentChange, alreadyRead: DocumentsRead) -> [ValueLookup] {
        let store = TokenStore(schema.tokens)
        return gained(in: change).compactMap { store.holders(of: $0, in: schema.userCollection) }
    }

    /// Well-formed tokens the new document has and the old one did not.
    func gained(in change: DocumentChange) -> [String] {
        guard let user = change.newDocument else { return [] }
        let store = TokenStore(schema.tokens)
        let before = Set(change.oldDocument.map(store.tokens(of:)) ?? [])
        return store.tokens(of: user).filter { !before.contains($0) && Self.isWellFormed($0) }
    }

    /// Whether this write changed the set of (normal) tokens.
    func tokensChanged(in change: DocumentChange) -> Bool {
        let store = TokenStore(schema.tokens)
        return Set(change.newDocument.map { Self.normalized(store.tokens(of: $0)) } ?? [])
            != Set(change.oldDocument.map { Self.normalized(store.tokens(of: $0)) } ?? [])
    }

    func needsWork(_ change: DocumentChange) -> Bool {
        if case .subcollection = schema.tokens { return false }
        guard let user = change.newDocument else { return false }
        return tokensChanged(in: change) || normalization(of: user, stamp: false) != nil
    }

    public func plan(for change: DocumentChange, documents: DocumentsRead) -> Plan {
        guard change.newDocument != nil else { return .skip("the user document was deleted") }
        if case .subcollection = schema.tokens { return .skip("tokens in a subcollection are cleaned by the scheduled pass") }
        guard needsWork(change) else { return .skip("tokens already normal") }
        guard let user = documents[change.document] else { return .skip("the user document was deleted since") }
        var writes: [Write] = []
        if let normalization = normalization(of: user, stamp: tokensChanged(in: change)) { writes.append(normalization) }
        let store = TokenStore(schema.tokens)
        let held = Set(store.tokens(of: user))
        for (lookup, holders) in documents.lookups.sorted(by: { $0.key.description < $1.key.description }) {
            for holder in holders where holder.name != user.name && lookup.matches(holder) {
                // Only a token this user still has, and only from the holder as read: if it changed
                // meanwhile, the event is planned again.
                guard let token = lookup.value.stringValue ?? lookup.field.segments.last, held.contains(token),
                      let version = holder.updateTime, var removal = store.removal(of: token, from: holder) else { continue }
                removal.precondition = .updateTime(version)
                writes.append(removal)
            }
        }
        return writes.isEmpty ? .skip("tokens already normal") : Plan(writes: writes)
    }

    /// The write that normalises the user's tokens (and stamps the time when `stamp`), or nil when nothing needs it.
    func normalization(of user: FirestoreDocument, stamp: Bool) -> Write? {
        // Conditional on the version planned from: a token added meanwhile wins, and its own event re-plans.
        let precondition: Precondition = user.updateTime.map { .updateTime($0) } ?? .exists(true)
        var fields: [String: FirestoreValue] = [:]
        var mask: [FieldPath] = []
        switch schema.tokens {
        case .single(let field):
            if let value = user[field], value != .null, !(value.stringValue.map(Self.isWellFormed) ?? false) { mask.append(FieldPath(field)) }
        case .array(let field):
            if let values = user[field]?.arrayValue {
                let normal = Self.normalized(values.compactMap(\.stringValue)).map(FirestoreValue.string)
                if normal != values { fields[field] = .array(normal); mask.append(FieldPath(field)) }
            }
        case .mapKeys(let field):
            // Map keys carry no order: drop only the malformed ones.
            mask += (user[field]?.mapValue?.keys.filter { !Self.isWellFormed($0) }.sorted() ?? []).map { FieldPath(field, $0) }
        case .subcollection:
            return nil
        }
        let stampTransform = schema.tokensUpdatedAtField.flatMap { stamp ? FieldTransform(FieldPath($0), .setToRequestTime) : nil }
        guard !mask.isEmpty || stampTransform != nil else { return nil }
        return Write(.update(user.name, fields: fields, mask: mask), transforms: stampTransform.map { [$0] } ?? [], precondition: precondition)
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
