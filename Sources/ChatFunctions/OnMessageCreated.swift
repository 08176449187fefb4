import FirestoreEvents
import FirestoreModel
import HeraldCore

/// A new message: denormalize it into its conversation, count it as unread for every recipient,
/// mark it sent, and push it to the recipients' devices.
public struct OnMessageCreated: EventFunction, ConfigurableFunction {
    public static let name = "onMessageCreated"
    public static let summary = "On a new message: push to the other participants and update the conversation."
    /// A "viewing this conversation" mark older than this is stale, like presence.
    public static let viewingFreshness: Int64 = 60

    public let schema: Schema
    /// For recipients' quiet hours, in their own time zones.
    public let timeZones: TimeZones
    public init(settings: FunctionSettings) throws {
        schema = try Schema.load(settings)
        timeZones = settings.timeZones
    }
    public init(schema: Schema, timeZones: TimeZones = .utcOnly) {
        self.schema = schema
        self.timeZones = timeZones
    }

    public var trigger: Trigger { Trigger(pattern: schema.messagePattern, kinds: [.created]) }

    /// The conversation and the message as it is now (a message deleted before its event is handled was
    /// unsent: no push), then the members' user documents.
    public func documentsToRead(for change: DocumentChange, alreadyRead: DocumentsRead) -> [DocumentName] {
        guard let conversation = schema.conversationName(for: change) else { return [] }
        guard let found = alreadyRead[conversation] else {
            return alreadyRead.missing.contains(conversation) ? [] : [conversation, change.document]
        }
        return schema.members(of: found).compactMap { schema.userName($0, near: conversation) }
    }

    /// With tokens in a subcollection, each recipient's token collection once the conversation is read.
    public func collectionsToList(for change: DocumentChange, alreadyRead: DocumentsRead) -> [CollectionPath] {
        guard case .subcollection = schema.tokens, let conversation = schema.conversationName(for: change), let found = alreadyRead[conversation],
              let senderID = change.newDocument?[schema.senderIDField]?.stringValue
        else { return [] }
        return schema.tokenCollections(of: schema.members(of: found).filter { $0 != senderID }, near: conversation)
    }

    public func plan(for change: DocumentChange, documents: DocumentsRead) -> Plan {
        guard change.newDocument != nil, !documents.missing.contains(change.document) else {
            return .skip("the message was deleted before its event was handled (unsent): nothing to announce")
        }
        guard let message = documents[change.document] ?? change.newDocument else { return .skip("the message no longer exists") }
        guard let conversationName = schema.conversationName(for: change) else {
            return .skip("the message names no conversation (\(schema.conversationIDField ?? "pattern") is missing)")
        }
        guard let conversation = documents[conversationName] else { return .skip("conversation \(conversationName.path) does not exist") }
        guard let senderID = message[schema.senderIDField]?.stringValue, !senderID.isEmpty else {
            return .skip("the message has no \(schema.senderIDField)")
        }
        guard senderID.utf8.count <= DocumentName.maximumIDBytes else { return .skip("suspicious: the sender id is \(senderID.utf8.count) bytes long") }
        let members = schema.members(of: conversation)
        guard members.contains(senderID) else {
            return .skip("suspicious: sender \(senderID) is not a member of \(conversationName.path)")
        }
        let recipients = members.filter { $0 != senderID }
        // Who already read it (a receipt can land before this event is handled) is not counted as unread.
        let alreadyRead = Set(message[schema.readByField]?.arrayValue?.compactMap(\.stringValue) ?? [])
        let counted = recipients.filter { !alreadyRead.contains($0) }
        let isCounted = Set(counted)
        let users = Dictionary(uniqueKeysWithValues: members.compactMap { id in
            schema.userName(id, near: conversationName).flatMap { name in documents[name].map { (id, $0) } }
        })
        let sentAt = message[schema.timestampField]?.timestampValue ?? message.createTime ?? change.time
        let senderName = Self.name(message[schema.senderNameField ?? ""]?.stringValue ?? users[senderID]?[schema.displayNameField]?.stringValue ?? "Someone")
        let preview = Preview.of(text: message[schema.textField]?.stringValue, type: message[schema.typeField]?.stringValue)
        let groupName = schema.isGroup(conversation) ? Self.name(conversation[schema.groupNameField]?.stringValue ?? "Group") : nil
        var stored = StoredValues()

        // The message moves to the conversation's last message, and is `sent` if the client left it sending.
        var writes: [Write] = []
        if let lastMessage = lastMessageWrite(conversation, message: message, senderID: senderID, senderName: senderName, preview: preview, sentAt: sentAt) {
            writes.append(lastMessage)
        }
        let status = message[schema.statusField]?.stringValue
        if status == nil || status == "sending" {
            writes.append(Write(.update(message.name, fields: [schema.statusField: .string("sent")], mask: [FieldPath(schema.statusField)]),
                                precondition: .exists(true)))
        }
        // Each recipient counted: their unread count in the conversation, their badge, and a mark on the message
        // that onReadReceipt clears when it counts the read (its own write re-triggers it, so order never matters).
        let groups = counted.map { recipient in
            var group = [
                Write(.transform(conversation.name), transforms: [FieldTransform(FieldPath(schema.unreadCountField, recipient), .increment(.integer(1)))],
                      precondition: .exists(true)),
                Write(.update(message.name, fields: [schema.unreadMarkField: .map([recipient: .boolean(true)])],
                              mask: [FieldPath(schema.unreadMarkField, recipient)]), precondition: .exists(true)),
            ]
            if let user = users[recipient] {
                group.append(Write(.transform(user.name), transforms: [FieldTransform(FieldPath(schema.badgeField), .increment(.integer(1)))],
                                   precondition: .exists(true)))
            }
            return group
        }

        // Every recipient not looking at the conversation is told: an alert, or only their new badge when
        // their settings silence this message (docs/notifications.md).
        let preferences = NotificationPreferences(schema: schema, timeZones: timeZones)
        let mentioned = preferences.mentioned(by: message, text: message[schema.textField]?.stringValue, recipients: recipients, users: users)
        let announcement = Announcement(
            senderID: senderID, senderName: senderName, group: groupName, conversationID: conversationName.documentID,
            messageID: message.name.documentID, type: Preview.type(message[schema.typeField]?.stringValue), preview: preview,
            previewKey: Preview.localizationKey(text: message[schema.textField]?.stringValue, type: message[schema.typeField]?.stringValue))
        let tokenStore = TokenStore(schema.tokens, documents: documents)
        var pushes: [PushMessage] = []
        for recipient in recipients {
            guard let user = users[recipient], !isViewing(user, conversation: conversationName.documentID, at: change.time) else { continue }
            // The badge as it will be once this message is counted (the stored count is any client's to write).
            let badge = min(stored.count(schema.badgeField, of: user), Int(Int32.max) - 1) + (isCounted.contains(recipient) ? 1 : 0)
            let decision = preferences.decision(for: recipient, user: user, conversation: conversation, isGroup: groupName != nil,
                                                mentioned: mentioned.contains(recipient), at: change.time, warnings: &stored.warnings)
            pushes += tokenStore.pushes(to: user, userID: recipient) { token in
                switch decision {
                case .alert(let mentioned):
                    announcement.alert(token: token, mentioned: mentioned, badge: badge)
                case .silent(let reason):
                    Notifications.silentBadge(token: token, badge: badge, conversationID: announcement.conversationID, reason: reason,
                                              extra: ["messageId": announcement.messageID])
                }
            }
        }
        return Plan(writes: writes, groups: groups, pushes: pushes, warnings: stored.warnings)
    }

    /// A display name as a notification shows it: bounded, whatever a client stored.
    static func name(_ text: String) -> String { StoredValues.bounded(text, characters: 40, bytes: 160) }

    func isViewing(_ user: FirestoreDocument, conversation id: String, at now: Timestamp) -> Bool {
        guard let field = schema.viewingField, user[field]?.stringValue == id else { return false }
        guard let atField = schema.viewingAtField, let at = user[atField]?.timestampValue else { return false }
        return now.seconds - at.seconds <= Self.viewingFreshness
    }

    /// The conversation's last message, if this message is newer than the one it shows (it never moves back).
    func lastMessageWrite(_ conversation: FirestoreDocument, message: FirestoreDocument, senderID: String, senderName: String,
                          preview: String, sentAt: Timestamp) -> Write? {
        guard isNewer(sentAt, than: conversation) else { return nil }
        var fields: [String: FirestoreValue] = [:]
        var mask: [FieldPath] = []
        func set(_ field: String?, _ value: FirestoreValue) {
            guard let field else { return }
            fields[field] = value
            mask.append(FieldPath(field))
        }
        switch schema.lastMessage {
        case .map(let field):
            set(field, .map(["text": .string(preview), "senderId": .string(senderID), "senderName": .string(senderName),
                             "timestamp": .timestamp(sentAt), "messageId": .string(message.name.documentID),
                             "type": .string(Preview.type(message[schema.typeField]?.stringValue))]))
        case .flat(let text, let sender, let name, let timestamp):
            set(text, .string(preview))
            set(sender, .string(senderID))
            set(name, .string(senderName))
            set(timestamp, .timestamp(sentAt))
        }
        set(schema.updatedAtField, .timestamp(sentAt))
        guard !mask.isEmpty else { return nil }
        // Decided from the version read: if another message moved it since, the commit fails and the
        // runtime plans again from the newer version.
        let precondition: Precondition = conversation.updateTime.map { .updateTime($0) } ?? .exists(true)
        return Write(.update(conversation.name, fields: fields, mask: mask), precondition: precondition)
    }

    func isNewer(_ sentAt: Timestamp, than conversation: FirestoreDocument) -> Bool {
        let current: Timestamp?
        switch schema.lastMessage {
        case .map(let field): current = conversation.value(at: [field, "timestamp"])?.timestampValue
        case .flat(_, _, _, let timestamp): current = timestamp.flatMap { conversation[$0]?.timestampValue }
        }
        return current.map { sentAt >= $0 } ?? true
    }
}
