import FirestoreModel
import HeraldCore
import WireFormats

/// The chat's documents as the functions see them, whatever the schema calls their fields: what a
/// message, a conversation and a user hold, and the writes that change them. Every value comes from a
/// client, so each reader is defensive (a wrong type reads as absent).
struct Message {
    let document: FirestoreDocument
    let schema: Schema

    var name: DocumentName { document.name }
    var id: String { document.name.documentID }
    var senderID: String? { Schema.value(of: schema.senderIDField, in: document)?.stringValue.flatMap { $0.isEmpty ? nil : $0 } }
    var senderName: String? { schema.senderNameField.flatMap { Schema.value(of: $0, in: document)?.stringValue } }
    var text: String? { Schema.value(of: schema.textField, in: document)?.stringValue }
    /// Its type field, else the type of the first of `mediaFields` it holds.
    var storedType: String? {
        if let stored = Schema.value(of: schema.typeField, in: document)?.stringValue, !stored.isBlank { return stored }
        return schema.mediaFields.sorted { $0.key < $1.key }.first { Self.holdsMedia(Schema.value(of: $0.key, in: document)) }?.value
    }

    /// An address, a map or a list that is not empty.
    static func holdsMedia(_ value: FirestoreValue?) -> Bool {
        switch value {
        case .string(let text)?: !text.isBlank
        case .map(let members)?: !members.isEmpty
        case .array(let items)?: !items.isEmpty
        default: false
        }
    }
    /// The type a notification's data carries: a short plain word, else "text".
    var type: String { Preview.type(storedType) }
    var status: String? { document[schema.statusField]?.stringValue }
    /// When it was sent: its own timestamp, else when it was stored.
    var sentAt: Timestamp? { schema.time(Schema.value(of: schema.timestampField, in: document)) ?? document.createTime }

    /// When it was sent, bounded by when Firestore recorded it (`recorded`, the event's time where the
    /// document has none): a message dated in the future never holds the chat's last message. The
    /// warning names a time past the bound.
    func boundedSentAt(recorded eventTime: Timestamp) -> (time: Timestamp, warning: String?) {
        let recorded = document.createTime ?? eventTime
        let written = sentAt ?? recorded
        let bound = recorded.adding(Schema.clockSkew)
        guard written > bound else { return (written, nil) }
        return (bound, "\(document.name.path) \(schema.timestampField) is \(written), after Firestore recorded the message (\(recorded)); taken as \(bound)")
    }
    var readBy: Set<String> { ids(in: schema.readByField) }
    var deliveredTo: Set<String> { schema.deliveredToField.map(ids(in:)) ?? [] }
    var readCount: Int64? { schema.readCountField.flatMap { document[$0]?.integerValue } }

    /// The recipients whose unread count holds this message: onMessageCreated's marks.
    var countedAsUnread: [String] {
        let marks = document[schema.unreadMarkField]?.mapValue ?? [:]
        return marks.filter { $0.value == .boolean(true) && $0.key != senderID }.keys.sorted()
    }

    func isCountedAsUnread(by user: String) -> Bool { document.value(at: [schema.unreadMarkField, user]) == .boolean(true) }

    /// The recipients this version shows both counted (marked) and reading it: each owes one decrement.
    func readAndCounted(among recipients: [String]) -> Set<String> {
        let readers = readBy
        return Set(recipients.filter { readers.contains($0) && isCountedAsUnread(by: $0) })
    }

    /// The record that `reader`'s read of this message was counted down, made in the decrement's commit
    /// (`{message}/heraldReads/{reader}`): whichever event comes to it first decrements, once.
    func receipt(of reader: String) -> DocumentName? {
        try? DocumentName(project: name.project, database: name.database, segments: name.segments + [Self.receiptCollection, reader])
    }

    /// Kept as long as the event ledger, for a TTL policy on `expireAt` to remove.
    static func recordReceipt(_ receipt: DocumentName, expireAt: Timestamp) -> Write {
        Write(.update(receipt, fields: ["expireAt": .timestamp(expireAt)], mask: nil), precondition: .exists(false))
    }

    static let receiptCollection = "heraldReads"
    static let receiptLifetime = Duration.seconds(7 * 86_400)

    /// The user ids an array holds, or a map is keyed by (`readBy: {uid: timestamp}`).
    func ids(in field: String) -> Set<String> { Set(Schema.userIDs(in: document[field]) ?? []) }

    /// The statuses a client gives a message not yet on the server ("sending"; PRD 001 calls it "pending").
    static let unsentStatuses = ["pending", "sending"]

    /// `sent`, for a message its client left `sending` or `pending` (or without a status).
    func markSent() -> Write {
        Write(.update(name, fields: [schema.statusField: .string("sent")], mask: [FieldPath(schema.statusField)]), precondition: .exists(true))
    }

    /// The mark saying `recipient`'s unread count holds this message (it stays: a receipt records the read's decrement).
    func markCounted(for recipient: String) -> Write {
        Write(
            .update(name, fields: [schema.unreadMarkField: .map([recipient: .boolean(true)])], mask: [FieldPath(schema.unreadMarkField, recipient)]),
            precondition: .exists(true))
    }

    /// A new status, conditional on this version of the message (a status only moves forward).
    func update(status: String) -> Write {
        Write(
            .update(name, fields: [schema.statusField: .string(status)], mask: [FieldPath(schema.statusField)]),
            precondition: document.updateTime.map { .updateTime($0) } ?? .exists(true))
    }

    /// "Read by N": never lowered, so any version's count may be written without a condition.
    func raiseReadCount(to count: Int64) -> Write? {
        guard let field = schema.readCountField else { return nil }
        return Write(.transform(name), transforms: [FieldTransform(FieldPath(field), .maximum(.integer(count)))], precondition: .exists(true))
    }
}

struct Conversation {
    let document: FirestoreDocument
    let schema: Schema

    var name: DocumentName { document.name }
    var id: String { document.name.documentID }
    /// Member ids from the first member field that lists any: each once, only ids that can be user ids.
    var members: [String] { schema.members(of: document) }
    /// Why listed members were left out (ids no user can have), for the plan's warnings.
    var memberWarnings: [String] { schema.memberList(of: document).warnings }
    var isGroup: Bool { schema.isGroup(document) }
    /// The group's name as a notification shows it, or nil for a 1:1 chat.
    var groupName: String? { isGroup ? ChatText.name(document[schema.groupNameField]?.stringValue ?? "", fallback: "Group Chat") : nil }

    /// The timestamp of the last message it shows, unless it is later than the conversation's own last
    /// write (plus a client's clock skew): such a time is a client's invention, and a real message replaces it.
    var lastMessageSentAt: Timestamp? {
        let shown: Timestamp? =
            switch schema.lastMessage {
            case .map(let field): schema.time(document.value(at: [field, "timestamp"]))
            case .flat(_, _, _, let timestamp): timestamp.flatMap { schema.time(document[$0]) }
            }
        guard let shown, let written = document.updateTime, shown > written.adding(Schema.clockSkew) else { return shown }
        return nil
    }

    /// Its last message as `message`, unless it shows a newer one already (it never moves back).
    /// Conditional on this version: if another message moved it since, the runtime plans again.
    func setLastMessage(_ message: Message, senderID: String, senderName: String, preview: String, sentAt: Timestamp) -> Write? {
        if let shown = lastMessageSentAt, sentAt < shown { return nil }
        var fields: [String: FirestoreValue] = [:]
        var mask: [FieldPath] = []
        func set(_ field: String?, _ value: FirestoreValue) {
            guard let field else { return }
            fields[field] = value
            mask.append(FieldPath(field))
        }
        switch schema.lastMessage {
        case .map(let field):
            set(
                field,
                .map([
                    "text": .string(preview), "senderId": .string(senderID), "senderName": .string(senderName),
                    "timestamp": schema.stored(sentAt), "messageId": .string(message.id), "type": .string(message.type),
                ]))
        case .flat(let text, let sender, let name, let timestamp):
            set(text, .string(preview))
            set(sender, .string(senderID))
            set(name, .string(senderName))
            set(timestamp, schema.stored(sentAt))
        }
        set(schema.updatedAtField, schema.stored(sentAt))
        guard !mask.isEmpty else { return nil }
        // Of two messages' updates made on one version, the newer one's is kept (it never moves back).
        let latestBy: FieldPath? =
            switch schema.lastMessage {
            case .map(let field): FieldPath(field, "timestamp")
            case .flat(_, _, _, let timestamp): (timestamp ?? schema.updatedAtField).map { FieldPath($0) }
            }
        return Write(
            .update(name, fields: fields, mask: mask), precondition: document.updateTime.map { .updateTime($0) } ?? .exists(true), latestBy: latestBy)
    }

    /// The status shown with its last message, if that is `message` (only a map-shaped last message has one).
    func setLastMessageStatus(_ status: String, of message: Message) -> Write? {
        guard case .map(let field) = schema.lastMessage, document.value(at: [field, "messageId"]) == .string(message.id) else { return nil }
        return Write(.update(name, fields: [field: .map(["status": .string(status)])], mask: [FieldPath(field, "status")]), precondition: .exists(true))
    }

    func incrementUnread(for recipient: String) -> Write {
        Write(
            .transform(name), transforms: [FieldTransform(FieldPath(schema.unreadCountField, recipient), .increment(.integer(1)))],
            precondition: .exists(true))
    }

    /// The user's unread count down by one, never below zero.
    func decrementUnread(for user: String) -> Write {
        Write(
            .transform(name),
            transforms: [
                FieldTransform(FieldPath(schema.unreadCountField, user), .increment(.integer(-1))),
                FieldTransform(FieldPath(schema.unreadCountField, user), .maximum(.integer(0))),
            ], precondition: .exists(true))
    }

    /// Whether the conversation can have counted unread messages for `user`: a member, or someone it
    /// still holds a count above zero for (who left after being counted).
    func mayCountUnread(for user: String) -> Bool {
        members.contains(user) || (document.value(at: [schema.unreadCountField, user])?.integerValue ?? 0) > 0
    }
}

struct User {
    let id: String
    let document: FirestoreDocument
    let schema: Schema

    var name: DocumentName { document.name }
    var displayName: String? { schema.displayName(of: document) }

    /// The app badge as stored in the user document, clamped to what a badge can be (a warning if it was
    /// not); when it is kept in a document of its own, which is not read, what the user document still
    /// holds from before (or 0): the push carries what the commit leaves there.
    func badge(_ stored: inout StoredValues) -> Int { stored.count(schema.badgeField, of: document) }

    /// Where the badge is stored: a push carries the value the commit leaves there.
    var badgeSource: CountSource { CountSource(document: badgeDocument, field: FieldPath(schema.badgeField)) }

    /// The user document, or the user's own document in `badgeCollection`.
    var badgeDocument: DocumentName {
        guard schema.badgeCollection != nil else { return name }
        return (try? name.sibling(path: schema.badgePath(of: id))) ?? name
    }

    /// The writes of the badge's transforms: to the user document, which must exist; or to the user's badge
    /// document, made with the first count. A badge still in the user document's field (kept there before
    /// `badgeCollection`) moves: the badge document starts from it, and the field is deleted in the same
    /// commit on the condition that the user document is as read, so a plan that saw the field after
    /// another event moved it is planned again rather than counting it twice.
    private func badgeWrites(_ transforms: [FieldTransform]) -> [Write] {
        guard schema.badgeCollection != nil else { return [Write(.transform(name), transforms: transforms, precondition: .exists(true))] }
        guard document[schema.badgeField] != nil, let version = document.updateTime else {
            return [Write(.update(badgeDocument, fields: [:], mask: []), transforms: transforms)]
        }
        var unwarned = StoredValues()  // the plan's `badge` warns of a hostile value
        let moved = FieldTransform(FieldPath(schema.badgeField), .maximum(.integer(Int64(unwarned.count(schema.badgeField, of: document)))))
        return [
            Write(.update(badgeDocument, fields: [:], mask: []), transforms: [moved] + transforms),
            Write(.update(name, fields: [:], mask: [FieldPath(schema.badgeField)]), precondition: .updateTime(version)),
        ]
    }

    /// Whether the user has this conversation open (a fresh "viewing" mark: stale ones are like presence).
    func isViewing(_ conversationID: String, at now: Timestamp, freshness: Int64) -> Bool {
        guard let field = schema.viewingField, document[field]?.stringValue == conversationID,
            let at = schema.clientTime(schema.viewingAtField, of: document)
        else { return false }
        return now.seconds - at.seconds <= freshness
    }

    /// The badge up by one, from zero if a client left it negative (or not a number): the push carries
    /// the committed value, so a poisoned total would otherwise show 0 with a message waiting.
    func incrementBadge() -> [Write] {
        badgeWrites([
            FieldTransform(FieldPath(schema.badgeField), .maximum(.integer(0))),
            FieldTransform(FieldPath(schema.badgeField), .increment(.integer(1))),
        ])
    }

    /// The badge down by one, never below zero.
    func decrementBadge() -> [Write] {
        badgeWrites([
            FieldTransform(FieldPath(schema.badgeField), .increment(.integer(-1))),
            FieldTransform(FieldPath(schema.badgeField), .maximum(.integer(0))),
        ])
    }
}

enum ChatText {
    /// A display name as a notification shows it: invisible characters and line breaks gone, bounded,
    /// and isolated when it is written right to left (`DisplayedText`), whatever a client stored.
    static func name(_ text: String, fallback: String = "Someone") -> String {
        let cleaned = DisplayedText.cleaned(text)
        return DisplayedText.shown(DisplayedText.bounded(cleaned.isEmpty ? fallback : cleaned, characters: 40, bytes: 160))
    }

    /// The sender as alerts name them: their name, followed by the start of their user id when another
    /// member's name looks the same ("Alice (mallory1)"), so a look-alike cannot pass for someone else.
    static func sender(_ name: String, id: String, otherMembers: [String?]) -> String {
        let shown = self.name(name)
        let skeleton = DisplayedText.skeleton(shown)
        guard otherMembers.contains(where: { $0.map(DisplayedText.skeleton) == skeleton }) else { return shown }
        return "\(shown) (\(DisplayedText.cleaned(String(id.prefix(8)))))"
    }
}

extension Schema {
    func message(_ document: FirestoreDocument) -> Message { Message(document: document, schema: self) }
    func conversation(_ document: FirestoreDocument) -> Conversation { Conversation(document: document, schema: self) }

    /// The users' documents (those that exist), with the push tokens of `notified` where tokens are kept
    /// in documents of their own: one step of reads.
    func users(
        _ ids: [String], notifying notified: [String], near conversation: DocumentName,
        reading: Reads
    ) throws(NotReadYet) -> [String: User] {
        let names = ids.compactMap { id in userName(id, near: conversation).map { (id, $0) } }
        let tokenReads = tokenReads(of: notified, near: conversation)
        try reading.need(documents: names.map(\.1) + tokenReads.documents, collections: tokenReads.collections, lookups: tokenReads.lookups)
        var users = [String: User](minimumCapacity: names.count)
        for (id, name) in names {
            if let document = try reading.document(name) { users[id] = User(id: id, document: document, schema: self) }
        }
        return users
    }
}
