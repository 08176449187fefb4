import FirestoreEvents
import FirestoreModel
import GoogleClients
import HeraldCore

/// A new message: denormalize it into its conversation, count it as unread for every recipient,
/// mark it sent, and push it to the recipients' devices.
public struct OnMessageCreated: EventFunction, ConfigurableFunction {
    public static let name = "onMessageCreated"
    public static let summary = "On a new message: push to the other participants and update the conversation."
    /// A "viewing this conversation" mark older than this is stale, like presence.
    public static let viewingFreshness: Int64 = 60

    public let schema: Schema
    public init(settings: FunctionSettings) throws { schema = try Schema.load(settings.schema) }
    public init(schema: Schema) { self.schema = schema }

    public var trigger: Trigger { Trigger(pattern: schema.messagePattern, kinds: [.created]) }

    public func documentsToRead(for change: DocumentChange, alreadyRead: DocumentsRead) -> [DocumentName] {
        guard let conversation = schema.conversationName(for: change) else { return [] }
        guard let found = alreadyRead[conversation] else { return alreadyRead.missing.contains(conversation) ? [] : [conversation] }
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
        guard let message = change.newDocument else { return .skip("the message no longer exists") }
        guard let conversationName = schema.conversationName(for: change) else {
            return .skip("the message names no conversation (\(schema.conversationIDField ?? "pattern") is missing)")
        }
        guard let conversation = documents[conversationName] else { return .skip("conversation \(conversationName.path) does not exist") }
        guard let senderID = message[schema.senderIDField]?.stringValue, !senderID.isEmpty else {
            return .skip("the message has no \(schema.senderIDField)")
        }
        let members = schema.members(of: conversation)
        guard members.contains(senderID) else {
            return .skip("suspicious: sender \(senderID) is not a member of \(conversationName.path)")
        }
        let recipients = members.filter { $0 != senderID }
        // Who already read it (a receipt can land before this event is handled) is not counted as unread.
        let alreadyRead = Set(message[schema.readByField]?.arrayValue?.compactMap(\.stringValue) ?? [])
        let counted = recipients.filter { !alreadyRead.contains($0) }
        let users = Dictionary(uniqueKeysWithValues: members.compactMap { id in
            schema.userName(id, near: conversationName).flatMap { name in documents[name].map { (id, $0) } }
        })
        let sentAt = message[schema.timestampField]?.timestampValue ?? message.createTime ?? change.time
        let senderName = message[schema.senderNameField ?? ""]?.stringValue ?? users[senderID]?[schema.displayNameField]?.stringValue ?? "Someone"
        let preview = Preview.of(text: message[schema.textField]?.stringValue, type: message[schema.typeField]?.stringValue)
        let title = schema.isGroup(conversation) ? "\(conversation[schema.groupNameField]?.stringValue ?? "Group") • \(senderName)" : senderName

        var writes = [conversationWrite(conversation, message: message, senderID: senderID, senderName: senderName,
                                        preview: preview, sentAt: sentAt, recipients: counted)]
        for recipient in counted {
            guard let user = users[recipient] else { continue }
            writes.append(Write(.transform(user.name), transforms: [FieldTransform(FieldPath(schema.badgeField), .increment(.integer(1)))],
                                precondition: .exists(true)))
        }
        // The message: `sent` if the client left it sending, and a mark for each recipient counted, which
        // onReadReceipt clears when it counts the read (its own write re-triggers it, so order never matters).
        var messageFields: [String: FirestoreValue] = [:]
        var messageMask = counted.map { FieldPath(schema.unreadMarkField, $0) }
        if !counted.isEmpty { messageFields[schema.unreadMarkField] = .map(Dictionary(uniqueKeysWithValues: counted.map { ($0, .boolean(true)) })) }
        let status = message[schema.statusField]?.stringValue
        if status == nil || status == "sending" {
            messageFields[schema.statusField] = .string("sent")
            messageMask.append(FieldPath(schema.statusField))
        }
        if !messageMask.isEmpty {
            writes.append(Write(.update(message.name, fields: messageFields, mask: messageMask), precondition: .exists(true)))
        }

        let mutedBy = Set(conversation[schema.mutedByField ?? ""]?.arrayValue?.compactMap(\.stringValue) ?? [])
        let tokenStore = TokenStore(schema.tokens, documents: documents)
        var pushes: [PushMessage] = []
        for recipient in recipients where !mutedBy.contains(recipient) {
            guard let user = users[recipient], !isViewing(user, conversation: conversationName.documentID, at: change.time) else { continue }
            let badge = Int(user[schema.badgeField]?.integerValue ?? 0) + (counted.contains(recipient) ? 1 : 0)
            pushes += tokenStore.pushes(to: user, userID: recipient) { token in
                FCMMessage(
                    token: token, notification: .init(title: title, body: preview),
                    data: ["conversationId": conversationName.documentID, "messageId": message.name.documentID, "senderId": senderID,
                           "type": message[schema.typeField]?.stringValue ?? "text", "summary": "\(title): \(preview)"],
                    android: .init(priority: .high, collapseKey: message.name.documentID, tag: message.name.documentID, notificationCount: badge),
                    apns: .init(priority: 10, pushType: .alert, collapseID: message.name.documentID, alert: .init(title: title, body: preview),
                                badge: badge, sound: "default", threadID: conversationName.documentID))
            }
        }
        return Plan(writes: writes, pushes: pushes)
    }

    func isViewing(_ user: FirestoreDocument, conversation id: String, at now: Timestamp) -> Bool {
        guard let field = schema.viewingField, user[field]?.stringValue == id else { return false }
        guard let atField = schema.viewingAtField, let at = user[atField]?.timestampValue else { return false }
        return now.seconds - at.seconds <= Self.viewingFreshness
    }

    /// The conversation's last message moves forward only; unread counts always go up for recipients.
    func conversationWrite(_ conversation: FirestoreDocument, message: FirestoreDocument, senderID: String, senderName: String,
                           preview: String, sentAt: Timestamp, recipients: [String]) -> Write {
        var fields: [String: FirestoreValue] = [:]
        var mask: [FieldPath] = []
        let messageType = FirestoreValue.string(message[schema.typeField]?.stringValue ?? "text")
        func set(_ field: String?, _ value: FirestoreValue) {
            guard let field else { return }
            fields[field] = value
            mask.append(FieldPath(field))
        }
        if isNewer(sentAt, than: conversation) {
            switch schema.lastMessage {
            case .map(let field):
                set(field, .map(["text": .string(preview), "senderId": .string(senderID), "senderName": .string(senderName),
                                 "timestamp": .timestamp(sentAt), "messageId": .string(message.name.documentID), "type": messageType]))
            case .flat(let text, let sender, let name, let timestamp):
                set(text, .string(preview))
                set(sender, .string(senderID))
                set(name, .string(senderName))
                set(timestamp, .timestamp(sentAt))
            }
            set(schema.updatedAtField, .timestamp(sentAt))
        }
        let increments = recipients.map { FieldTransform(FieldPath(schema.unreadCountField, $0), .increment(.integer(1))) }
        if fields.isEmpty { return Write(.transform(conversation.name), transforms: increments, precondition: .exists(true)) }
        // Moving the last message is decided from the version read: if another message moved it since,
        // the commit fails and the runtime plans again from the newer version, so it never moves backwards.
        let precondition: Precondition = conversation.updateTime.map { .updateTime($0) } ?? .exists(true)
        return Write(.update(conversation.name, fields: fields, mask: mask), transforms: increments, precondition: precondition)
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
