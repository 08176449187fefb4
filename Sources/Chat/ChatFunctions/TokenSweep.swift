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
        // Token documents each carry their own time: a collection group query reaches those under every user.
        let documents = schema.tokens.layout.documents
        let (collection, everywhere) = (documents?.collection ?? schema.userCollection, documents?.underUsers ?? false)
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
        let layout = schema.tokens.layout
        if schema.tokensOutsideTheUser {
            guard let token = layout.tokens(inWritten: document).first else { return .nothing }
            let user = layout.owner(ofWritten: document)
            let removal = Write(.delete(document.name), precondition: .updateTime(version))
            if age > staleAfter { return SweepStep(writes: [removal]) }
            return validate && age > doubtfulAfter ? SweepStep(checks: [check(token, of: user, removal: removal)]) : .nothing
        }
        let tokens = layout.tokens(inWritten: document)
        guard !tokens.isEmpty, let tokenField = layout.userDocumentField else { return .nothing }
        // A user seen lately keeps an app that refreshes its token, even if the token itself did not change.
        let seen = [schema.heartbeatField, schema.lastSeenField].compactMap { schema.clientTime($0, of: document) }.max()
        let unseen = seen.map({ now.seconds - $0.seconds > staleAfter }) ?? true
        func checks(_ doubtful: [String]) -> SweepStep {
            SweepStep(checks: doubtful.map { check($0, of: document.name.documentID, removal: layout.removal(of: $0, from: document, in: DocumentsRead())) })
        }
        // A map whose values say when each device last wrote its token (`{token: serverTimestamp()}`, as
        // Firebase advises apps to refresh on every start): each token by its own time, a token without
        // one by when the map last changed.
        if let refreshed = layout.refreshTimes(in: document) {
            // A time after the document's last write (plus the skew) is taken as that bound.
            let latest = version.adding(Schema.clockSkew).seconds
            let ageOf = { (token: String) in now.seconds - min(refreshed[token] ?? changedAt.seconds, latest) }
            let stale = tokens.filter { ageOf($0) > staleAfter }
            if unseen, !stale.isEmpty {
                return SweepStep(
                    writes: [Write(.update(document.name, fields: [:], mask: layout.clearing(stale)), precondition: .updateTime(version))])
            }
            return validate ? checks(tokens.filter { ageOf($0) > doubtfulAfter }) : .nothing
        }
        if age > staleAfter, unseen {
            return SweepStep(writes: [Write(.update(document.name, fields: [:], mask: [FieldPath(tokenField)]), precondition: .updateTime(version))])
        }
        guard validate, age > doubtfulAfter else { return .nothing }
        return checks(tokens)
    }

    func check(_ token: String, of userID: String, removal: Write?) -> PushMessage {
        PushMessage(userID: userID, token: token, fcm: FCMMessage(token: token), removal: removal)
    }
}
