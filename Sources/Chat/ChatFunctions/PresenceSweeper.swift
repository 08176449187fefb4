import FirestoreModel
import HeraldCore

/// Every minute: users still marked online whose heartbeat has gone stale are marked offline, with last
/// seen = their last heartbeat (the time they were really last seen, even if the app crashed), and their
/// typing and viewing marks cleared. Typing and viewing marks left behind by users who are still online
/// are cleared too once stale. A heartbeat or mark a client dated in the future is set back to when
/// Firestore recorded the user document plus `Schema.clockSkew`, and then ages like any other. Every
/// write is conditional on the version the query found, so a heartbeat that lands during the sweep wins.
public struct PresenceSweeper: ScheduledFunction, ConfigurableFunction {
    public static let name = "presenceSweeper"
    public static let summary = "Mark users offline whose presence heartbeat has gone stale, and clear stale typing and viewing marks."
    public static let settings = ["HERALD_PRESENCE_STALE_AFTER", "HERALD_TYPING_STALE_AFTER", "HERALD_VIEWING_STALE_AFTER"]

    public let schema: Schema
    /// Seconds without a heartbeat after which an online user is offline (`HERALD_PRESENCE_STALE_AFTER`, PRD 000: 60).
    public let presenceStaleAfter: Int64
    /// Seconds after which a typing mark is stale (`HERALD_TYPING_STALE_AFTER`; clients clear theirs after 3, PRD 003).
    public let typingStaleAfter: Int64
    /// Seconds after which a viewing mark is stale (`HERALD_VIEWING_STALE_AFTER`); onMessageCreated ignores older ones.
    public let viewingStaleAfter: Int64

    public init(settings: FunctionSettings) throws {
        self.init(
            schema: try Schema.load(settings),
            presenceStaleAfter: try settings.seconds("HERALD_PRESENCE_STALE_AFTER", default: 60),
            typingStaleAfter: try settings.seconds("HERALD_TYPING_STALE_AFTER", default: 10),
            viewingStaleAfter: try settings.seconds("HERALD_VIEWING_STALE_AFTER", default: OnMessageCreated.viewingFreshness))
    }

    public init(schema: Schema, presenceStaleAfter: Int64 = 60, typingStaleAfter: Int64 = 10, viewingStaleAfter: Int64 = OnMessageCreated.viewingFreshness) {
        self.schema = schema
        self.presenceStaleAfter = presenceStaleAfter
        self.typingStaleAfter = typingStaleAfter
        self.viewingStaleAfter = viewingStaleAfter
    }

    static let offline = "offline", typing = "typing", viewing = "viewing"
    /// The sweeps of times from the future, one per field: a client dated its heartbeat or mark after
    /// `now` plus `Schema.clockSkew`, which no stale query would ever find.
    static let futureHeartbeats = "heartbeats from the future", futureTyping = "typing from the future",
        futureViewing = "viewing from the future"

    var onlineValue: FirestoreValue { schema.onlineStatusValue.map(FirestoreValue.string) ?? .boolean(true) }
    var offlineValue: FirestoreValue { schema.offlineStatusValue.map(FirestoreValue.string) ?? .boolean(false) }

    public func sweeps(at now: Timestamp) -> [Sweep] {
        let online = StructuredQuery.Filter.field(FieldPath(schema.onlineField), .equal, onlineValue)
        var sweeps = [
            Sweep(Self.offline, query: staleQuery(on: schema.heartbeatField, olderThan: presenceStaleAfter, at: now, also: online)),
            Sweep(Self.futureHeartbeats, query: futureQuery(on: schema.heartbeatField, at: now, also: online)),
        ]
        if let field = schema.typingAtField {
            sweeps.append(Sweep(Self.typing, query: staleQuery(on: field, olderThan: typingStaleAfter, at: now)))
            sweeps.append(Sweep(Self.futureTyping, query: futureQuery(on: field, at: now)))
        }
        if let field = schema.viewingAtField {
            sweeps.append(Sweep(Self.viewing, query: staleQuery(on: field, olderThan: viewingStaleAfter, at: now)))
            sweeps.append(Sweep(Self.futureViewing, query: futureQuery(on: field, at: now)))
        }
        return sweeps
    }

    /// Users whose `field` is a time (as the app keeps it) more than `seconds` old. The offline sweep's query needs a
    /// composite index (online field, heartbeat field), derived from the schema in FirestoreIndexes.swift.
    func staleQuery(on field: String, olderThan seconds: Int64, at now: Timestamp, also filter: StructuredQuery.Filter? = nil) -> StructuredQuery {
        let stale = StructuredQuery.Filter.field(FieldPath(field), .lessThan, schema.stored(cutoff(seconds, at: now)))
        return StructuredQuery(
            collectionID: schema.userCollection, filter: filter.map { .and([$0, stale]) } ?? stale,
            orderBy: [StructuredQuery.Order(FieldPath(field))])
    }

    /// Users whose `field` is a time after `now` plus the skew a client's clock may have. The same index
    /// as the stale query's serves it.
    func futureQuery(on field: String, at now: Timestamp, also filter: StructuredQuery.Filter? = nil) -> StructuredQuery {
        let future = StructuredQuery.Filter.field(FieldPath(field), .greaterThan, schema.stored(now.adding(Schema.clockSkew)))
        return StructuredQuery(
            collectionID: schema.userCollection, filter: filter.map { .and([$0, future]) } ?? future,
            orderBy: [StructuredQuery.Order(FieldPath(field))])
    }

    func cutoff(_ seconds: Int64, at now: Timestamp) -> Timestamp { Timestamp(seconds: now.seconds - seconds, nanos: now.nanos) }

    func isStale(_ user: FirestoreDocument, _ field: String?, olderThan seconds: Int64, at now: Timestamp) -> Timestamp? {
        guard let field, let at = schema.time(user[field]), at < cutoff(seconds, at: now) else { return nil }
        return at
    }

    public func plan(_ sweep: Sweep, for user: FirestoreDocument, at now: Timestamp) -> SweepStep {
        // The query said so when it ran; the plan checks again from the document itself.
        var fields: [String: FirestoreValue] = [:]
        var mask: [FieldPath] = []
        func clear(_ names: String?...) { mask += names.compactMap { $0 }.map { FieldPath($0) } }
        switch sweep.label {
        case Self.offline:
            guard user[schema.onlineField] == onlineValue,
                let lastHeartbeat = isStale(user, schema.heartbeatField, olderThan: presenceStaleAfter, at: now)
            else { return .nothing }
            fields[schema.onlineField] = offlineValue
            mask.append(FieldPath(schema.onlineField))
            if let lastSeen = schema.lastSeenField, lastSeen != schema.heartbeatField {
                fields[lastSeen] = schema.stored(lastHeartbeat)
                mask.append(FieldPath(lastSeen))
            }
            // An offline user is neither typing nor looking at a conversation.
            clear(schema.typingField, schema.typingAtField, schema.viewingField, schema.viewingAtField)
        case Self.typing:
            guard isStale(user, schema.typingAtField, olderThan: typingStaleAfter, at: now) != nil else { return .nothing }
            clear(schema.typingField, schema.typingAtField)
        case Self.viewing:
            guard isStale(user, schema.viewingAtField, olderThan: viewingStaleAfter, at: now) != nil else { return .nothing }
            clear(schema.viewingField, schema.viewingAtField)
        case Self.futureHeartbeats:
            guard user[schema.onlineField] == onlineValue else { return .nothing }
            return bound(schema.heartbeatField, of: user, at: now)
        case Self.futureTyping:
            return bound(schema.typingAtField, of: user, at: now)
        case Self.futureViewing:
            return bound(schema.viewingAtField, of: user, at: now)
        default:
            return .nothing
        }
        guard let version = user.updateTime else { return .nothing }
        return SweepStep(writes: [Write(.update(user.name, fields: fields, mask: mask), precondition: .updateTime(version))])
    }

    /// A time from the future set back to when Firestore recorded the document's last write plus the
    /// skew (never after `now` plus the skew): the stale sweeps then age it like any other. Conditional
    /// on the version found, so a client's write since wins; named in the log.
    func bound(_ field: String?, of user: FirestoreDocument, at now: Timestamp) -> SweepStep {
        guard let field, let written = schema.time(user[field]), Schema.isFromTheFuture(written, at: now), let version = user.updateTime
        else { return .nothing }
        let bound = min(version, now).adding(Schema.clockSkew)
        return SweepStep(
            writes: [Write(.update(user.name, fields: [field: schema.stored(bound)], mask: [FieldPath(field)]), precondition: .updateTime(version))],
            warnings: ["\(user.name.path) \(field) is \(written), after Firestore recorded the document (\(version)): set to \(bound)"])
    }
}
