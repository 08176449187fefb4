import FirestoreModel
import HeraldCore
import WireFormats

/// A map in the user document whose keys are tokens (`notificationTokens {TOKEN: true}`); a value may
/// say when its device last wrote the token (`{TOKEN: serverTimestamp()}`, as Firebase advises apps to
/// refresh on every start), and then each token ages and orders by its own time.
public struct TokenMapKeys: TokenFieldLayout, Hashable {
    public static let key = "mapKeys"
    public static let summaryPrefix = "map keys of"
    public let field: String
    public init(field: String) { self.field = field }

    public func tokens(of user: FirestoreDocument, in read: DocumentsRead) -> [String] { user[field]?.mapValue.map(Self.keysOldestFirst) ?? [] }

    /// Removes the token's key, wherever the map is now.
    public func removal(of token: String, from user: FirestoreDocument, in read: DocumentsRead) -> Write? {
        Write(.update(user.name, fields: [:], mask: [FieldPath(field, token)]), precondition: .exists(true))
    }

    public func holders(of token: String, in schema: Schema) -> ValueLookup? {
        ValueLookup(collectionID: schema.userCollection, field: FieldPath(field, token), .present)
    }

    /// Keys carry an order only by the times their values hold: with one on each, the oldest beyond ten
    /// go too; without, only the malformed.
    public func normalization(of document: FirestoreDocument, dropping superseded: Set<String>) -> TokenFix? {
        let map = document[field]?.mapValue ?? [:]
        let kept = map.filter { TokenCleanup.isWellFormed($0.key) && !superseded.contains($0.key) }
        var dropped = Set(map.keys).subtracting(kept.keys)
        if kept.values.allSatisfy({ Self.time(of: $0) != nil }) {
            dropped.formUnion(Self.keysOldestFirst(kept).dropLast(TokenCleanup.maximumTokensPerUser))
        }
        return dropped.isEmpty ? nil : .update(fields: [:], mask: dropped.sorted().map { FieldPath(field, $0) })
    }

    /// When each token was last written, for the values that hold a moment (a timestamp, or a number of
    /// seconds or, above 10¹¹, milliseconds after 2001); nil when none does.
    public func refreshTimes(in user: FirestoreDocument) -> [String: Int64]? {
        var times: [String: Int64] = [:]
        for (token, value) in user[field]?.mapValue ?? [:] {
            guard let time = Self.time(of: value) else { continue }
            let seconds = value.timestampValue == nil && time > 1e11 ? time / 1000 : time
            if seconds >= 1e9, seconds < 1e11 { times[token] = Int64(seconds) }
        }
        return times.isEmpty ? nil : times
    }

    public func clearing(_ tokens: [String]) -> [FieldPath] { tokens.map { FieldPath(field, $0) } }

    public func misfits(of user: FirestoreDocument, tokenDocuments: [FirestoreDocument], kind: (FirestoreValue) -> String) -> [TokenMisfit] {
        misfit(user, expected: "a map keyed by tokens", kind: kind) { $0.mapValue != nil }
    }

    public func seed(_ tokens: [String], of user: DocumentName, stamp: String?) throws -> TokenSeed {
        TokenSeed(userFields: [field: .map(Dictionary(tokens.map { ($0, FirestoreValue.boolean(true)) }, uniquingKeysWith: { first, _ in first }))])
    }

    /// The new device's token becomes a key of the map.
    public func signIn(_ token: String, of user: DocumentName, stamp: String?) throws -> Write {
        Write(.update(user, fields: [field: .map([token: .boolean(true)])], mask: [FieldPath(field, token)]), precondition: .exists(true))
    }

    /// A map's keys, oldest first: by the time each value holds (a timestamp, or a number such as epoch
    /// milliseconds), keys without one first; then by key.
    static func keysOldestFirst(_ map: [String: FirestoreValue]) -> [String] {
        map.map { (key: $0.key, time: time(of: $0.value) ?? -.infinity) }.sorted { ($0.time, $0.key) < ($1.time, $1.key) }.map(\.key)
    }

    /// The time a map's value holds, if any.
    static func time(of value: FirestoreValue) -> Double? {
        switch value {
        case .timestamp(let time): Double(time.seconds) + Double(time.nanos) / 1e9
        case .integer(let number): Double(number)
        case .double(let number) where number.isFinite: number
        default: nil
        }
    }
}
