import FirestoreModel
import HeraldCore

/// tokenCleanup's daily pass: tokens that have not changed for `staleAfter` seconds (each by its own
/// time in a map that keeps one), of a user not seen for as long, are removed (Firebase's advice: a
/// token not refreshed for two months is most likely dead); with `validate` on, tokens older than
/// `doubtfulAfter` are checked with a validate-only send and removed if FCM reports them dead. Dead
/// tokens FCM reports during a send are removed by the sending function at once (and again at the next
/// send if that removal lost a race).
extension TokenCleanup: ScheduledFunction {
    static let tokensSweep = "tokens"
    /// Token documents whose time the app wrote as a number (`timeFormat`): Firestore compares a filter
    /// within one type, so they are a query of their own beside those with timestamps (`serverTimestamp()`).
    static let numberedTokensSweep = "tokens kept with numbers"
    /// Tokens whose time a client dated after now (plus `Schema.clockSkew`), which the stale queries never
    /// find: each is aged from when Firestore recorded its document's last write instead.
    static let futureTokensSweep = "tokens from the future", futureNumberedTokensSweep = "tokens kept with numbers from the future"
    static let futureSweeps: Set = [futureTokensSweep, futureNumberedTokensSweep]
    static let sweepLabels = futureSweeps.union([tokensSweep, numberedTokensSweep])

    /// The daily pass reads Expo's receipts too: a receipt naming a token dead removes it.
    public var readsPushReceipts: Bool { true }

    public func sweeps(at now: Timestamp) -> [Sweep] {
        guard let field = schema.tokensUpdatedAtField else { return [] }
        let age = validate ? min(doubtfulAfter, staleAfter) : staleAfter
        let cutoff = Timestamp(seconds: now.seconds - age, nanos: now.nanos)
        // With a subcollection, each token document carries its own time: a collection group query reaches them all.
        let (collection, everywhere) =
            switch schema.tokens {
            case .subcollection(let name): (name, true)
            case .documentPerUser(let name), .documentPerToken(let name, _): (name, false)
            case .single, .array, .mapKeys: (schema.userCollection, false)
            }
        let future = now.adding(Schema.clockSkew)
        func sweep(_ label: String, _ comparison: StructuredQuery.Operator, _ value: FirestoreValue) -> Sweep {
            Sweep(
                label,
                query: StructuredQuery(
                    collectionID: collection, allDescendants: everywhere, filter: .field(FieldPath(field), comparison, value),
                    orderBy: [StructuredQuery.Order(FieldPath(field))]))
        }
        // Herald stamps a user document itself, with a timestamp; token documents carry what the app wrote.
        guard schema.tokensOutsideTheUser, schema.timeFormat != .timestamp else {
            return [sweep(Self.tokensSweep, .lessThan, .timestamp(cutoff)), sweep(Self.futureTokensSweep, .greaterThan, .timestamp(future))]
        }
        return [
            sweep(Self.tokensSweep, .lessThan, .timestamp(cutoff)), sweep(Self.numberedTokensSweep, .lessThan, schema.stored(cutoff)),
            sweep(Self.futureTokensSweep, .greaterThan, .timestamp(future)), sweep(Self.futureNumberedTokensSweep, .greaterThan, schema.stored(future)),
        ]
    }

    public func plan(_ sweep: Sweep, for document: FirestoreDocument, at now: Timestamp) -> SweepStep {
        guard Self.sweepLabels.contains(sweep.label),
            let field = schema.tokensUpdatedAtField, let written = schema.time(document[field]), let version = document.updateTime,
            Self.futureSweeps.contains(sweep.label) == Schema.isFromTheFuture(written, at: now),
            let changedAt = schema.clientTime(field, of: document)
        else { return .nothing }
        let age = now.seconds - changedAt.seconds
        if schema.tokensOutsideTheUser {
            // A device's document is keyed by its token or holds it; a user's own is keyed by the user.
            let perUser = if case .documentPerUser = schema.tokens { true } else { false }
            guard let token = perUser ? document["token"]?.stringValue : Schema.TokenStorage.token(ofDevice: document) else { return .nothing }
            let user =
                switch schema.tokens {
                case .documentPerUser: document.name.documentID
                case .documentPerToken(_, let userField): document[userField]?.stringValue ?? ""
                case .subcollection, .single, .array, .mapKeys: document.name.parent?.documentID ?? ""
                }
            let removal = Write(.delete(document.name), precondition: .updateTime(version))
            if age > staleAfter { return SweepStep(writes: [removal]) }
            return validate && age > doubtfulAfter ? SweepStep(checks: [check(token, of: user, removal: removal)]) : .nothing
        }
        let store = TokenStore(schema.tokens)
        let tokens = store.tokens(of: document)
        guard !tokens.isEmpty, let tokenField = store.field else { return .nothing }
        // A user seen lately keeps an app that refreshes its token, even if the token itself did not change.
        let seen = [schema.heartbeatField, schema.lastSeenField].compactMap { schema.clientTime($0, of: document) }.max()
        let unseen = seen.map({ now.seconds - $0.seconds > staleAfter }) ?? true
        func checks(_ doubtful: [String]) -> SweepStep {
            SweepStep(checks: doubtful.map { check($0, of: document.name.documentID, removal: store.removal(of: $0, from: document)) })
        }
        // A map whose values say when each device last wrote its token (`{token: serverTimestamp()}`, as
        // Firebase advises apps to refresh on every start): each token by its own time, a token without
        // one by when the map last changed.
        if case .mapKeys = schema.tokens, let refreshed = document[tokenField]?.mapValue.flatMap(Self.refreshTimes) {
            // A time after the document's last write (plus the skew) is taken as that bound.
            let latest = version.adding(Schema.clockSkew).seconds
            let ageOf = { (token: String) in now.seconds - min(refreshed[token] ?? changedAt.seconds, latest) }
            let stale = tokens.filter { ageOf($0) > staleAfter }
            if unseen, !stale.isEmpty {
                return SweepStep(
                    writes: [Write(.update(document.name, fields: [:], mask: stale.map { FieldPath(tokenField, $0) }), precondition: .updateTime(version))])
            }
            return validate ? checks(tokens.filter { ageOf($0) > doubtfulAfter }) : .nothing
        }
        if age > staleAfter, unseen {
            return SweepStep(writes: [Write(.update(document.name, fields: [:], mask: [FieldPath(tokenField)]), precondition: .updateTime(version))])
        }
        guard validate, age > doubtfulAfter else { return .nothing }
        return checks(tokens)
    }

    /// When each token of a map was last written, in seconds since 1970, for the values that hold a moment
    /// (a timestamp, or a number of seconds or, above 10¹¹, milliseconds after 2001); nil when none does.
    static func refreshTimes(_ map: [String: FirestoreValue]) -> [String: Int64]? {
        var times: [String: Int64] = [:]
        for (token, value) in map {
            guard let time = TokenStore.time(of: value) else { continue }
            let seconds = value.timestampValue == nil && time > 1e11 ? time / 1000 : time
            if seconds >= 1e9, seconds < 1e11 { times[token] = Int64(seconds) }
        }
        return times.isEmpty ? nil : times
    }

    func check(_ token: String, of userID: String, removal: Write?) -> PushMessage {
        PushMessage(userID: userID, token: token, fcm: FCMMessage(token: token), removal: removal)
    }
}
