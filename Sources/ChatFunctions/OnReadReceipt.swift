import FirestoreEvents
import FirestoreModel
import HeraldCore

/// A message was updated: when its readers or recipients grew, move its status forward, mirror it on
/// the conversation's last message, and bring each new reader's unread count and badge down, once.
/// A message was deleted (unsent): the recipients it still counted as unread are uncounted, once.
///
/// Exactness comes from the message itself: onMessageCreated marks each recipient it counted
/// (`heraldUnread.{uid}: true`); this function decrements only marked readers and clears their marks
/// in the same commit, conditional on the message's version. Every change to the message — including
/// onMessageCreated's marks landing after a receipt — triggers this function again, and each run
/// works from the message as it is now, so any order of events ends at the exact counts.
public struct OnReadReceipt: EventFunction, ConfigurableFunction {
    public static let name = "onReadReceipt"
    public static let summary = "On a message update or deletion: advance its status and bring unread counts and badges down."
    static let statusOrder = ["sending", "sent", "delivered", "read"]

    public let schema: Schema
    public init(settings: FunctionSettings) throws { schema = try Schema.load(settings) }
    public init(schema: Schema) { self.schema = schema }

    public var trigger: Trigger { Trigger(pattern: schema.messagePattern, kinds: [.updated, .deleted]) }

    public func documentsToRead(for change: DocumentChange, alreadyRead: DocumentsRead) -> [DocumentName] {
        guard let conversation = schema.conversationName(for: change) else { return [] }
        if change.effectiveKind == .deleted {
            // The conversation, then the users the deleted message still counted as unread (its marks as it was).
            guard alreadyRead[conversation] != nil else { return alreadyRead.missing.contains(conversation) ? [] : [conversation] }
            return stillCounted(change.oldDocument).compactMap { schema.userName($0, near: conversation) }
        }
        // The message as it is now (not as the event saw it), and its conversation.
        guard let message = alreadyRead[change.document], let found = alreadyRead[conversation] else {
            return alreadyRead.missing.contains(change.document) || alreadyRead.missing.contains(conversation) ? [] : [change.document, conversation]
        }
        return readersToCount(message, recipients: recipients(message, found)).compactMap { schema.userName($0, near: conversation) }
    }

    public func collectionsToList(for change: DocumentChange, alreadyRead: DocumentsRead) -> [CollectionPath] {
        guard case .subcollection = schema.tokens, let conversation = schema.conversationName(for: change), let found = alreadyRead[conversation] else { return [] }
        if change.effectiveKind == .deleted { return schema.tokenCollections(of: stillCounted(change.oldDocument), near: conversation) }
        guard let message = alreadyRead[change.document] else { return [] }
        return schema.tokenCollections(of: readersToCount(message, recipients: recipients(message, found)), near: conversation)
    }

    /// The recipients whose unread count holds this message (onMessageCreated's marks).
    func stillCounted(_ message: FirestoreDocument?) -> [String] {
        guard let message, let marks = message[schema.unreadMarkField]?.mapValue else { return [] }
        let sender = message[schema.senderIDField]?.stringValue
        return marks.filter { $0.value == .boolean(true) && $0.key != sender }.keys.sorted()
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
        if change.effectiveKind == .deleted { return planDeletion(change, documents: documents) }
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
        if status != current, case .map(let field) = schema.lastMessage,
           conversation.value(at: [field, "messageId"]) == .string(message.name.documentID) {
            writes.append(Write(.update(conversation.name, fields: [field: .map(["status": .string(status)])], mask: [FieldPath(field, "status")]),
                                precondition: .exists(true)))
        }
        let uncounted = uncount(toCount, in: conversation, documents: documents, reason: "read", messageID: message.name.documentID)
        writes += uncounted.writes
        return Plan(writes: Write.merging(writes), pushes: uncounted.pushes, warnings: uncounted.warnings)
    }

    /// A deleted message leaves no unread count behind. Its marks as it was say whom it still counted;
    /// a receipt handled before the deletion cleared its readers' marks, and a message deleted before
    /// onMessageCreated handled it was never counted (onMessageCreated then skips it).
    func planDeletion(_ change: DocumentChange, documents: DocumentsRead) -> Plan {
        guard let old = change.oldDocument else { return .skip("the deletion event carries no data: whom the message counted is unknown") }
        guard let conversationName = schema.conversationName(for: change), let conversation = documents[conversationName] else {
            return .skip("the message's conversation does not exist")
        }
        let counted = stillCounted(old)
        guard !counted.isEmpty else { return .skip("the deleted message counted nobody as unread") }
        let uncounted = uncount(counted, in: conversation, documents: documents, reason: "deleted", messageID: old.name.documentID)
        return Plan(writes: Write.merging(uncounted.writes), pushes: uncounted.pushes, warnings: uncounted.warnings)
    }

    /// Each user's unread count in the conversation and badge down by one (never below zero), and their
    /// devices told silently, with what they need to clear the conversation's notifications (an iPad
    /// clears when the phone reads) or the unsent message's.
    func uncount(_ users: [String], in conversation: FirestoreDocument, documents: DocumentsRead, reason: String,
                 messageID: String) -> (writes: [Write], pushes: [PushMessage], warnings: [String]) {
        guard !users.isEmpty else { return ([], [], []) }
        var writes = [Write(.transform(conversation.name), transforms: users.flatMap { reader in
            [FieldTransform(FieldPath(schema.unreadCountField, reader), .increment(.integer(-1))),
             FieldTransform(FieldPath(schema.unreadCountField, reader), .maximum(.integer(0)))]
        }, precondition: .exists(true))]
        let tokenStore = TokenStore(schema.tokens, documents: documents)
        var pushes: [PushMessage] = []
        var stored = StoredValues()
        for reader in users {
            guard let userName = schema.userName(reader, near: conversation.name), let user = documents[userName] else { continue }
            writes.append(Write(.transform(userName), transforms: [
                FieldTransform(FieldPath(schema.badgeField), .increment(.integer(-1))),
                FieldTransform(FieldPath(schema.badgeField), .maximum(.integer(0))),
            ], precondition: .exists(true)))
            let badge = max(0, stored.count(schema.badgeField, of: user) - 1)
            pushes += tokenStore.pushes(to: user, userID: reader) { token in
                Notifications.silentBadge(token: token, badge: badge, conversationID: conversation.name.documentID, reason: reason,
                                          extra: ["messageId": messageID])
            }
        }
        return (writes, pushes, stored.warnings)
    }
}
