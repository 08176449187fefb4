import FirestoreEvents
import FirestoreModel
import GoogleClients
import HeraldCore

/// A message was updated: when its readers or recipients grew, move its status forward, mirror it on
/// the conversation's last message, and bring each new reader's unread count and badge down, once.
///
/// Exactness comes from the message itself: onMessageCreated marks each recipient it counted
/// (`heraldUnread.{uid}: true`); this function decrements only marked readers and clears their marks
/// in the same commit, conditional on the message's version. Every change to the message — including
/// onMessageCreated's marks landing after a receipt — triggers this function again, and each run
/// works from the message as it is now, so any order of events ends at the exact counts.
public struct OnReadReceipt: EventFunction, ConfigurableFunction {
    public static let name = "onReadReceipt"
    public static let summary = "On a message update: advance its status and bring unread counts and badges down."
    static let statusOrder = ["sending", "sent", "delivered", "read"]

    public let schema: Schema
    public init(settings: FunctionSettings) throws { schema = try Schema.load(settings.schema) }
    public init(schema: Schema) { self.schema = schema }

    public var trigger: Trigger { Trigger(pattern: schema.messagePattern, kinds: [.updated]) }

    public func documentsToRead(for change: DocumentChange, alreadyRead: DocumentsRead) -> [DocumentName] {
        guard let conversation = schema.conversationName(for: change) else { return [] }
        // The message as it is now (not as the event saw it), and its conversation.
        guard let message = alreadyRead[change.document], let found = alreadyRead[conversation] else {
            return alreadyRead.missing.contains(change.document) || alreadyRead.missing.contains(conversation) ? [] : [change.document, conversation]
        }
        return readersToCount(message, recipients: recipients(message, found)).compactMap { schema.userName($0, near: conversation) }
    }

    public func collectionsToList(for change: DocumentChange, alreadyRead: DocumentsRead) -> [CollectionPath] {
        guard case .subcollection = schema.tokens, let conversation = schema.conversationName(for: change),
              let message = alreadyRead[change.document], let found = alreadyRead[conversation] else { return [] }
        return schema.tokenCollections(of: readersToCount(message, recipients: recipients(message, found)), near: conversation)
    }

    func recipients(_ message: FirestoreDocument, _ conversation: FirestoreDocument) -> [String] {
        let sender = message[schema.senderIDField]?.stringValue
        return schema.members(of: conversation).filter { $0 != sender }
    }

    func ids(_ field: String?, of message: FirestoreDocument) -> Set<String> {
        Set(field.flatMap { message[$0]?.arrayValue?.compactMap(\.stringValue) } ?? [])
    }

    /// Readers whose unread count still holds this message.
    func readersToCount(_ message: FirestoreDocument, recipients: [String]) -> [String] {
        let marks = message[schema.unreadMarkField]?.mapValue ?? [:]
        let readers = ids(schema.readByField, of: message)
        return recipients.filter { readers.contains($0) && marks[$0] == .boolean(true) }
    }

    public func plan(for change: DocumentChange, documents: DocumentsRead) -> Plan {
        guard let message = documents[change.document] else { return .skip("the message no longer exists") }
        guard let conversationName = schema.conversationName(for: change), let conversation = documents[conversationName] else {
            return .skip("the message's conversation does not exist")
        }
        let recipients = recipients(message, conversation)
        guard !recipients.isEmpty else { return .skip("the message has no recipients") }
        let readers = ids(schema.readByField, of: message).intersection(recipients)
        let received = ids(schema.deliveredToField, of: message).union(readers)
        let toCount = readersToCount(message, recipients: recipients)

        // Status only moves forward: read when every recipient read it (a group too), delivered when every one received it.
        let current = message[schema.statusField]?.stringValue ?? "sent"
        var status = current
        if readers.count == recipients.count { status = "read" } else if received.isSuperset(of: recipients) { status = "delivered" }
        if (Self.statusOrder.firstIndex(of: status) ?? 0) <= (Self.statusOrder.firstIndex(of: current) ?? 0) { status = current }

        var fields: [String: FirestoreValue] = [:]
        var mask: [FieldPath] = toCount.map { FieldPath(schema.unreadMarkField, $0) }  // masked but absent: the marks are removed
        if status != current {
            fields[schema.statusField] = .string(status)
            mask.append(FieldPath(schema.statusField))
        }
        if let field = schema.readCountField, schema.isGroup(conversation), message[field]?.integerValue != Int64(readers.count) {
            fields[field] = .integer(Int64(readers.count))
            mask.append(FieldPath(field))
        }
        guard !mask.isEmpty else { return .skip("read and delivered state unchanged") }

        // Conditional on the message as read: a concurrent receipt makes the runtime plan again from the newer one.
        var writes = [Write(.update(message.name, fields: fields, mask: mask), precondition: message.updateTime.map { .updateTime($0) } ?? .exists(true))]
        let conversationTransforms = toCount.flatMap { reader in
            [FieldTransform(FieldPath(schema.unreadCountField, reader), .increment(.integer(-1))),
             FieldTransform(FieldPath(schema.unreadCountField, reader), .maximum(.integer(0)))]
        }
        var lastMessage: (fields: [String: FirestoreValue], mask: [FieldPath])?
        if status != current, case .map(let field) = schema.lastMessage,
           conversation.value(at: [field, "messageId"]) == .string(message.name.documentID) {
            lastMessage = ([field: .map(["status": .string(status)])], [FieldPath(field, "status")])
        }
        if lastMessage != nil || !conversationTransforms.isEmpty {
            let operation: Write.Operation = lastMessage.map { .update(conversation.name, fields: $0.fields, mask: $0.mask) } ?? .transform(conversation.name)
            writes.append(Write(operation, transforms: conversationTransforms, precondition: .exists(true)))
        }

        // Each counted reader's badge goes down, and their devices hear of it silently (an iPad clears when the phone reads).
        let tokenStore = TokenStore(schema.tokens, documents: documents)
        var pushes: [PushMessage] = []
        var stored = StoredValues()
        for reader in toCount {
            guard let userName = schema.userName(reader, near: conversationName), let user = documents[userName] else { continue }
            writes.append(Write(.transform(userName), transforms: [
                FieldTransform(FieldPath(schema.badgeField), .increment(.integer(-1))),
                FieldTransform(FieldPath(schema.badgeField), .maximum(.integer(0))),
            ], precondition: .exists(true)))
            let badge = max(0, stored.count(schema.badgeField, of: user) - 1)
            pushes += tokenStore.pushes(to: user, userID: reader) { token in
                FCMMessage(token: token, data: ["type": "badge", "badge": String(badge), "conversationId": conversationName.documentID],
                           android: .init(priority: .normal),
                           apns: .init(priority: 5, pushType: .background, badge: badge, contentAvailable: true))
            }
        }
        return Plan(writes: writes, pushes: pushes, warnings: stored.warnings)
    }
}
