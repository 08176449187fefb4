import FirestoreEvents
import FirestoreModel
import HeraldCore
import PushTokens

/// On a user document write: normalise the push tokens (no empty or malformed ones, no duplicates, at
/// most `maximumTokensPerUser`, keeping the newest), note when they changed, and take a token the user
/// just gained away from any other user who still has it (a phone that changed accounts must not get
/// the previous account's messages). Its own write triggers it again and then changes nothing.
/// Tokens kept in documents of their own (`fcmTokens/{uid}` `{token}`, `users/{uid}/tokens/{id}`
/// `{token}`) are watched there instead: a device's token written under a second user deletes the
/// first user's document that holds it.
/// Daily (`tokenCleanup sweep`, see TokenSweep.swift): remove tokens not refreshed for a long time.
public struct TokenCleanup: EventFunction, ConfigurableFunction {
    public static let name = "tokenCleanup"
    public static let summary = "Normalise users' push tokens and remove stale or reassigned ones."
    public static let settings = ["HERALD_TOKEN_STALE_AFTER", "HERALD_TOKEN_VALIDATE", "HERALD_TOKEN_DOUBTFUL_AFTER", "HERALD_TOKEN_CLAIMS_COLLECTION"]
    public static let maximumTokensPerUser = 10

    public let schema: Schema
    /// Seconds without a token change (each token's own, in a map that keeps times; and without the user
    /// being seen) after which tokens are removed
    /// (`HERALD_TOKEN_STALE_AFTER`; 60 days, as Firebase recommends).
    public let staleAfter: Int64
    /// Seconds after which tokens are doubtful and checked with a validate-only send, when `validate` is on
    /// (`HERALD_TOKEN_VALIDATE`, `HERALD_TOKEN_DOUBTFUL_AFTER`; 30 days).
    public let validate: Bool
    public let doubtfulAfter: Int64
    /// Where the latest sign-in of each token is kept (`HERALD_TOKEN_CLAIMS_COLLECTION`), one document
    /// per token named by its SHA-256: events arrive in any order, and only the latest gain of a token
    /// may take it from others.
    public let claimsCollection: String
    public static let defaultClaimsCollection = "_herald/tokens/claims"

    public init(settings: FunctionSettings) throws {
        self.init(
            schema: try Schema.load(settings),
            staleAfter: try settings.seconds("HERALD_TOKEN_STALE_AFTER", default: 60 * 86_400),
            validate: try settings.flag("HERALD_TOKEN_VALIDATE"),
            doubtfulAfter: try settings.seconds("HERALD_TOKEN_DOUBTFUL_AFTER", default: 30 * 86_400),
            claimsCollection: settings.environment["HERALD_TOKEN_CLAIMS_COLLECTION"] ?? Self.defaultClaimsCollection)
    }

    public init(
        schema: Schema, staleAfter: Int64 = 60 * 86_400, validate: Bool = false, doubtfulAfter: Int64 = 30 * 86_400,
        claimsCollection: String = defaultClaimsCollection
    ) {
        self.schema = schema
        self.claimsCollection = claimsCollection
        self.staleAfter = staleAfter
        self.validate = validate
        self.doubtfulAfter = doubtfulAfter
    }

    /// The documents whose writes bring tokens: the users', or the token documents.
    public var trigger: Trigger { Trigger(pattern: schema.tokens.layout.triggerPattern(in: schema), kinds: [.written, .created, .updated]) }

    /// The tokens a written document holds: a user document's as the schema keeps them, a token
    /// document's one (its `token` field; in a subcollection, else its id).
    func tokens(in document: FirestoreDocument) -> [String] { schema.tokens.layout.tokens(inWritten: document) }

    /// The other documents that may hold `token`.
    func holders(of token: String) -> ValueLookup? { schema.tokens.layout.holders(of: token, in: schema) }

    /// The claim document of a token, in the user document's database.
    func claimName(of token: String, near user: DocumentName) -> DocumentName? {
        try? DocumentName(project: user.project, database: user.database, path: "\(claimsCollection)/\(Digest.hex(token))")
    }

    /// Well-formed tokens the new document has and the old one did not, of those it keeps (the newest
    /// `maximumTokensPerUser`: a document with thousands claims ten, in one commit). A token document's
    /// every write is a sign-in on its device (the guide's app writes it at each start; nothing else
    /// writes it), so its token counts as gained each time. An event without its data cannot tell: it
    /// takes no token from anyone (a later sign-in's own event does).
    /// A token kept only as a token document's id is in no other document a query can find: nothing to claim.
    func gained(in change: DocumentChange) -> [String] {
        guard let user = change.newDocument, !change.dataWasOmitted else { return [] }
        if schema.tokensOutsideTheUser, user["token"] == nil { return [] }
        let before = schema.tokensOutsideTheUser ? [] : Set(change.oldDocument.map(tokens(in:)) ?? [])
        return Self.normalized(tokens(in: user)).filter { !before.contains($0) }
    }

    /// Whether this write changed the set of (normal) tokens.
    func tokensChanged(in change: DocumentChange) -> Bool {
        Set(change.newDocument.map { Self.normalized(tokens(in: $0)) } ?? []) != Set(change.oldDocument.map { Self.normalized(tokens(in: $0)) } ?? [])
    }

    func needsWork(_ change: DocumentChange) -> Bool {
        guard let user = change.newDocument else { return false }
        // A token document is not stamped: only what it gained or a token to drop is work.
        let changed = !schema.tokensOutsideTheUser && tokensChanged(in: change)
        return !gained(in: change).isEmpty || changed || normalization(of: user, stamp: false) != nil
    }

    public func plan(for change: DocumentChange, reading: Reads) throws(NotReadYet) -> Plan {
        guard change.newDocument != nil else { return .skip("the user document was deleted") }
        guard needsWork(change) else { return .skip("tokens already normal") }
        let layout = schema.tokens.layout
        let gained = gained(in: change)
        let claims = gained.compactMap { claimName(of: $0, near: change.document) }
        let holders = gained.compactMap(holders(of:))
        // The user document as it is now (the writes are conditional on its current version: the event's
        // may be long gone, presence heartbeats write the same document), the latest sign-in of each token
        // it gained, and the other users who still hold those tokens.
        try reading.need(documents: [change.document] + claims, lookups: holders)
        guard let user = try reading.document(change.document) else { return .skip("the user document was deleted since") }
        let held = Set(tokens(in: user))
        let gainedAt = change.newDocument?.updateTime ?? change.time
        // A token document written again since this event is a later sign-in, whose own event decides.
        let signedInSince = schema.tokensOutsideTheUser && user.updateTime != change.newDocument?.updateTime
        var writes: [Write] = []
        // Tokens this user gained last, each with the user whose (earlier) gain the claim recorded before.
        var claimed: [String: String] = [:]
        // Tokens signed in elsewhere after this user gained them: this user gives them up.
        var superseded = Set<String>()
        for token in gained where held.contains(token) {
            switch try claim(of: token, gainedBy: user.name, at: gainedAt, reading: reading) {
            case .superseded: if !signedInSince { superseded.insert(token) }
            case .held(let previous): claimed[token] = previous
            case .write(let write, let previous):
                claimed[token] = previous
                writes.append(write)
            }
        }
        if let normalization = normalization(of: user, stamp: tokensChanged(in: change), dropping: superseded) { writes.insert(normalization, at: 0) }
        let watched = trigger
        for lookup in holders.sorted(by: { $0.description < $1.description }) {
            // Only documents of the kind the trigger watches: a collection group reaches any collection of that name.
            for holder in try reading.lookUp(lookup) where holder.name != user.name && lookup.matches(holder) && watched.match(holder.name) != nil {
                // Only a token this user claims, and only from a holder who got it earlier: one whose
                // document has not changed since, or (a user document, which heartbeats rewrite) whose
                // gain the claim recorded. A holder changed since may have signed in later; its own event
                // decides. The removal is conditional on the holder as read: if it changed meanwhile, the
                // event is planned again.
                guard let token = lookup.value.stringValue ?? lookup.field.segments.last, let previous = claimed[token],
                    let version = holder.updateTime, version <= gainedAt || (!schema.tokensOutsideTheUser && previous == holder.name.path),
                    var removal = schema.tokensOutsideTheUser ? Write(.delete(holder.name)) : layout.removal(of: token, from: holder, in: DocumentsRead())
                else { continue }
                removal.precondition = .updateTime(version)
                writes.append(removal)
            }
        }
        return writes.isEmpty ? .skip("tokens already normal") : Plan(writes: writes)
    }

    enum Claim {
        /// A later sign-in on the device, by someone else, has claimed the token: its own event takes
        /// the token from the others, and this user gives it up.
        case superseded
        /// This user holds the latest claim already (it names who held it before, or "").
        case held(previous: String)
        /// The claim to write with the plan, and who it named before ("" for nobody).
        case write(Write, previous: String)
    }

    /// Whether this user's gain of `token` at `time` is the latest sign-in on that device.
    func claim(of token: String, gainedBy user: DocumentName, at time: Timestamp, reading: Reads) throws(NotReadYet) -> Claim {
        guard let name = claimName(of: token, near: user) else { return .held(previous: "") }
        let claim = try reading.document(name)
        let claimedBy = claim?["user"]?.stringValue ?? ""
        let claimedAt = claim?["gainedAt"]?.timestampValue
        if let claimedAt, claimedAt > time { return claimedBy == user.path ? .held(previous: "") : .superseded }
        if claimedBy == user.path, claimedAt == time { return .held(previous: "") }
        return .write(
            Write(
                .update(name, fields: ["user": .string(user.path), "gainedAt": .timestamp(time)], mask: nil),
                precondition: claim?.updateTime.map { .updateTime($0) } ?? .exists(false)), previous: claimedBy)
    }

    /// The write that normalises the user's tokens (and stamps the time when `stamp`), or nil when nothing needs it.
    func normalization(of user: FirestoreDocument, stamp: Bool, dropping superseded: Set<String> = []) -> Write? {
        // Conditional on the version planned from: a token added meanwhile wins, and its own event re-plans.
        let precondition: Precondition = user.updateTime.map { .updateTime($0) } ?? .exists(true)
        let fix = schema.tokens.layout.normalization(of: user, dropping: superseded)
        if fix == .delete { return Write(.delete(user.name), precondition: precondition) }
        // A token document is not stamped: the app writes its time.
        if schema.tokensOutsideTheUser { return nil }
        let (fields, mask) = if case .update(let fields, let mask) = fix { (fields, mask) } else { ([:], [FieldPath]()) }
        let stampTransform = schema.tokensUpdatedAtField.flatMap { stamp ? FieldTransform(FieldPath($0), .setToRequestTime) : nil }
        guard !mask.isEmpty || stampTransform != nil else { return nil }
        return Write(.update(user.name, fields: fields, mask: mask), transforms: stampTransform.map { [$0] } ?? [], precondition: precondition)
    }

    /// Conservative on purpose, since removing a working token loses a device: only what no push
    /// service issues goes (`PushToken.classify`: empty, very long, spaces, control or non-ASCII
    /// characters, a damaged Expo token, hex of an APNs token's length but odd).
    static func isWellFormed(_ token: String) -> Bool { PushToken.isWellFormed(token) }

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
