import FirestoreEvents
import FirestoreModel
import GoogleClients
import HeraldCore
import WireFormats

/// The exactly-once record of one (function, event) in Firestore, and how a plan is laid out in it.
///
/// The main entry `{ledger}/{key}` is created, precondition "does not exist", in the same commit as the
/// plan's writes: if it exists, the event was applied before. It holds the state of each push
/// (`pushes.{token}`, a `PushState`) and the claims of deliveries sending them
/// (`claims.{holder}`: when). A plan too large for one commit (a message to a group of 1,000) is laid
/// out in parts `{key}-1`, `{key}-2`, …, created by that same commit: each holds the writes of its
/// share of the groups until one commit applies them and marks the part applied, so every part is
/// applied exactly once, by whichever delivery gets there. Pushes too many for one document are
/// spread over the parts the same way.
struct EventLedger: Sendable {
    static let maximumWritesPerCommit = FirestoreClient.maximumWritesPerCommit
    /// Push states per ledger document, by the bytes of their keys: well inside Firestore's 1 MiB.
    static let maximumPushKeyBytesPerDocument = 512 * 1024
    /// Tokens longer than this are recorded by their digest (a field name is at most 1,500 bytes).
    static let maximumRawKeyBytes = 256

    let main: DocumentName

    /// A sibling of the main entry: same collection, the key with a suffix (a key Herald made is a
    /// digest, so this fails only for a ledger collection whose names leave no room for the suffix).
    func part(_ index: Int) throws(DownstreamError) -> DocumentName {
        do {
            return try DocumentName(project: main.project, database: main.database, segments: main.segments.dropLast() + ["\(main.documentID)-\(index)"])
        } catch {
            throw .rejected("the ledger part \(index) of \(main.path) cannot be named: \(error)")
        }
    }

    /// How a push is named in the ledger's `pushes` maps: its token, or the token's digest when the token
    /// is long or cannot be a field name (empty, reserved `__…__`: any client can store such a token).
    static func key(_ token: String) -> String {
        token.utf8.count <= maximumRawKeyBytes && FirestoreNames.fieldNameProblem(token) == nil ? token : "#" + Digest.hex(token)
    }

    /// A plan's writes as commits: the first carries `writes` and as many groups as fit beside the ledger
    /// entries; each later part carries the next groups. Push states are spread the same way.
    struct Layout: Sendable {
        var first: [Write]
        var parts: [[Write]]
        /// Shard 0 is the main entry's; shard i (i ≥ 1) is part i's.
        var pushShards: [[PushMessage]]
        var partCount: Int { max(parts.count, pushShards.count - 1) }
    }

    func layout(_ plan: Plan) throws(DownstreamError) -> Layout {
        let shards = Self.shards(plan.pushes)
        // A group that requires a version (a badge moving out of the user document, deleted on the
        // condition that the document is as read) goes first: in the first commit, a changed document
        // plans the event again; in a later part, it could never be applied.
        let groups = plan.groups.filter(Self.requiresAVersion) + plan.groups.filter { !Self.requiresAVersion($0) }
        var reserved = 1 + (shards.count - 1)
        for _ in 0..<8 {
            let capacity = Self.maximumWritesPerCommit - reserved
            var builder = WritePacking(.oneCommit)
            guard builder.add(plan.writes, capacity: capacity) else {
                throw .rejected("the plan's own writes (\(plan.writes.count)) exceed one commit beside the ledger")
            }
            var index = 0
            while index < groups.count, builder.add(groups[index], capacity: capacity) { index += 1 }
            var parts: [[Write]] = []
            var next = WritePacking(.oneCommit)
            while index < groups.count {
                if next.add(groups[index], capacity: Self.maximumWritesPerCommit - 1) {
                    index += 1
                    continue
                }
                guard !next.writes.isEmpty else { throw .rejected("one group of the plan exceeds a commit (\(groups[index].count) writes)") }
                parts.append(next.writes)
                next = WritePacking(.oneCommit)
            }
            if !next.writes.isEmpty { parts.append(next.writes) }
            let layout = Layout(first: builder.writes, parts: parts, pushShards: shards)
            if 1 + layout.partCount <= reserved { return layout }
            reserved = 1 + layout.partCount
        }
        throw .rejected("the plan cannot be laid out in commits of \(Self.maximumWritesPerCommit) writes")
    }

    static func requiresAVersion(_ group: [Write]) -> Bool {
        group.contains { if case .updateTime = $0.precondition { true } else { false } }
    }

    static func shards(_ pushes: [PushMessage]) -> [[PushMessage]] {
        var shards: [[PushMessage]] = [[]]
        var bytes = 0
        for push in pushes {
            let size = key(push.token).utf8.count + 16
            if bytes + size > maximumPushKeyBytesPerDocument, !shards[shards.count - 1].isEmpty {
                shards.append([])
                bytes = 0
            }
            shards[shards.count - 1].append(push)
            bytes += size
        }
        return shards
    }

    /// The first commit: the plan's first writes, the main entry (claimed by `holder` when there are
    /// pushes) and every part, each created only if it does not exist yet.
    func firstCommit(_ layout: Layout, event: DocumentChange, function: String, holder: String, expireAt: Timestamp) throws(DownstreamError) -> [Write] {
        func states(_ pushes: [PushMessage]) -> FirestoreValue {
            .map(Dictionary(pushes.map { (Self.key($0.token), PushState.pending.value) }, uniquingKeysWith: { first, _ in first }))
        }
        var claim: [FieldTransform] = []
        if !layout.pushShards.joined().isEmpty { claim.append(FieldTransform(FieldPath("claims", holder), .setToRequestTime)) }
        let entry = Write(
            .update(
                main,
                fields: [
                    "function": .string(function), "eventId": .string(event.eventID), "document": .string(event.document.path),
                    "expireAt": .timestamp(expireAt), "pushes": states(layout.pushShards[0]), "parts": .integer(Int64(layout.partCount)),
                ], mask: nil), transforms: [FieldTransform(FieldPath("appliedAt"), .setToRequestTime)] + claim, precondition: .exists(false))
        let parts = try (0..<layout.partCount).map { $0 + 1 }.map { index throws(DownstreamError) in
            var fields: [String: FirestoreValue] = [
                "expireAt": .timestamp(expireAt),
                "pushes": states(index < layout.pushShards.count ? layout.pushShards[index] : []),
                "state": (index <= layout.parts.count ? PartState.pending : .applied).value,
            ]
            if index <= layout.parts.count { fields["writes"] = .string(JSONValue.array(layout.parts[index - 1].map(\.json)).serialized()) }
            return Write(.update(try part(index), fields: fields, mask: nil), precondition: .exists(false))
        }
        return layout.first + [entry] + parts
    }
}

/// Whether a ledger part's writes are applied (`state`).
enum PartState: String, Sendable {
    case pending, applied
    var value: FirestoreValue { .string(rawValue) }
}

/// What became of one push, as the ledger records it (`pushes.{token}`).
enum PushState: String, Sendable {
    /// Not sent yet (or its send failed transiently): the next delivery sends it.
    case pending
    case sent
    /// FCM said the token will never work again.
    case dead
    /// FCM refused the message for good (a payload or configuration error): not sent again.
    case failed
    /// FCM had not answered by the send's deadline: it may have been delivered. The next delivery sends
    /// it once more with the same collapse identifiers, so a device shows one alert either way.
    case unanswered
    /// Unanswered twice: not sent a third time.
    case unansweredAgain = "unanswered-again"
    /// Its token is of a push service this deployment has no credentials for: kept, not sent.
    case skipped

    /// This delivery sends it.
    var isDue: Bool { self == .pending || self == .unanswered }
    /// It went out, or may have: the count it carried is recorded.
    var wentOut: Bool { self == .sent || self == .unanswered || self == .unansweredAgain }
    var value: FirestoreValue { .string(rawValue) }
}

/// What the ledger holds for an event: its main entry and its parts, as read or as just written.
struct LedgerState: Sendable {
    var main: FirestoreDocument
    var parts: [FirestoreDocument]

    var documents: [FirestoreDocument] { [main] + parts }

    /// The ledger document that records the push with this key.
    func document(holding key: String) -> DocumentName? {
        documents.first { $0["pushes"]?.mapValue?[key] != nil }?.name
    }

    /// Values keyed by push (a field of `pushes` or `counts`), grouped by the ledger document that
    /// records each push: the main entry for a push the ledger does not name.
    func byDocument<Value>(_ values: [(token: String, value: Value)]) -> [DocumentName: [String: Value]] {
        var grouped: [DocumentName: [String: Value]] = [:]
        for (token, value) in values {
            let key = EventLedger.key(token)
            grouped[document(holding: key) ?? main.name, default: [:]][key] = value
        }
        return grouped
    }

    /// The push's state as recorded (nil: the ledger does not name it).
    func state(of token: String) -> PushState? {
        let key = EventLedger.key(token)
        for document in documents {
            if let stored = document["pushes"]?.mapValue?[key] { return stored.stringValue.flatMap(PushState.init(rawValue:)) }
        }
        return nil
    }

    /// Whether this delivery sends the push: never sent yet, or sent once without an answer.
    func isDue(_ token: String) -> Bool { state(of: token)?.isDue ?? false }

    /// The count (badge) recorded as sent to this token; nil when it was not sent or carried none.
    func sentCount(of token: String) -> Int? {
        let key = EventLedger.key(token)
        guard let document = documents.first(where: { ($0["pushes"]?.mapValue?[key]?.stringValue.flatMap(PushState.init(rawValue:)))?.wentOut == true })
        else { return nil }
        return document["counts"]?.mapValue?[key]?.integerValue.map { Int(clamping: $0) }
    }

    /// Claims on the event's pushes, by holder.
    var claims: [String: Timestamp] { (main["claims"]?.mapValue ?? [:]).compactMapValues(\.timestampValue) }

    /// The writes a part holds.
    static func writes(of part: FirestoreDocument) throws(FirestoreJSONError) -> [Write] {
        guard let text = part["writes"]?.stringValue else { return [] }
        let json: JSONValue
        do { json = try JSONValue(parsing: text) } catch { throw FirestoreJSONError(path: "\(part.name.path).writes", reason: error.description) }
        guard let items = json.arrayValue else { throw FirestoreJSONError(path: "\(part.name.path).writes", reason: "must be an array") }
        var writes: [Write] = []
        for (i, item) in items.enumerated() { writes.append(try RequestDecoding.write(item, path: "writes[\(i)]")) }
        return writes
    }
}
