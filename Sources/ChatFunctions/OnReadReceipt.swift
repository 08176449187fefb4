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

    public func plan(for change: DocumentChange, reading: Reads) throws(NotReadYet) -> Plan {
        if change.effectiveKind == .deleted { return try planDeletion(change, reading: reading) }
        guard let conversationName = schema.conversationName(for: change) else { return .skip("the message's conversation does not exist") }
        // The message as it is now (not as the event saw it), and its conversation.
        try reading.need(documents: [change.document, conversationName])
        guard let now = try reading.document(change.document) else { return .skip("the message no longer exists") }
        guard let found = try reading.document(conversationName) else { return .skip("the message's conversation does not exist") }
        let message = schema.message(now)
        let conversation = schema.conversation(found)
        let recipients = conversation.members.filter { $0 != message.senderID }
        guard !recipients.isEmpty else { return .skip("the message has no recipients") }
        let readers = message.readBy.intersection(recipients)
        let received = message.deliveredTo.union(readers)
        // Readers whose unread count still holds this message.
        let toUncount = recipients.filter { readers.contains($0) && message.isCountedAsUnread(by: $0) }

        // Status only moves forward: read when every recipient read it (a group too), delivered when every one received it.
        let current = message.status ?? "sent"
        var status = current
        if readers.count == recipients.count { status = "read" } else if received.isSuperset(of: recipients) { status = "delivered" }
        if (Self.statusOrder.firstIndex(of: status) ?? 0) <= (Self.statusOrder.firstIndex(of: current) ?? 0) { status = current }
        let readCount = conversation.isGroup && message.readCount != Int64(readers.count) ? Int64(readers.count) : nil

        // Conditional on the message as read: a concurrent receipt makes the runtime plan again from the newer one.
        guard let update = message.update(status: status == current ? nil : status, readCount: readCount, clearingMarksOf: toUncount) else {
            return .skip("read and delivered state unchanged")
        }
        var writes = [update]
        if status != current, let shown = conversation.setLastMessageStatus(status, of: message) { writes.append(shown) }
        let users = try schema.users(toUncount, notifying: toUncount, near: conversationName, reading: reading)
        let uncounted = uncount(toUncount, users: users, in: conversation, reading: reading, reason: "read", messageID: message.id)
        return Plan(writes: Write.merging(writes + uncounted.writes), pushes: uncounted.pushes, warnings: uncounted.warnings)
    }

    /// A deleted message leaves no unread count behind. Its marks as it was say whom it still counted;
    /// a receipt handled before the deletion cleared its readers' marks, and a message deleted before
    /// onMessageCreated handled it was never counted (onMessageCreated then skips it).
    func planDeletion(_ change: DocumentChange, reading: Reads) throws(NotReadYet) -> Plan {
        guard let old = change.oldDocument else { return .skip("the deletion event carries no data: whom the message counted is unknown") }
        guard let conversationName = schema.conversationName(for: change), let found = try reading.document(conversationName) else {
            return .skip("the message's conversation does not exist")
        }
        let counted = schema.message(old).countedAsUnread
        guard !counted.isEmpty else { return .skip("the deleted message counted nobody as unread") }
        let users = try schema.users(counted, notifying: counted, near: conversationName, reading: reading)
        let uncounted = uncount(counted, users: users, in: schema.conversation(found), reading: reading, reason: "deleted", messageID: old.name.documentID)
        return Plan(writes: Write.merging(uncounted.writes), pushes: uncounted.pushes, warnings: uncounted.warnings)
    }

    /// Each user's unread count in the conversation and badge down by one (never below zero), and their
    /// devices told silently, with what they need to clear the conversation's notifications (an iPad
    /// clears when the phone reads) or the unsent message's.
    func uncount(
        _ ids: [String], users: [String: User], in conversation: Conversation, reading: Reads, reason: String,
        messageID: String
    ) -> (writes: [Write], pushes: [PushMessage], warnings: [String]) {
        guard !ids.isEmpty else { return ([], [], []) }
        var writes = [conversation.decrementUnread(for: ids)]
        let tokenStore = TokenStore(schema.tokens, documents: reading.read)
        var pushes: [PushMessage] = []
        var stored = StoredValues()
        for id in ids {
            guard let user = users[id] else { continue }
            writes.append(user.decrementBadge())
            let badge = max(0, user.badge(&stored) - 1)
            pushes += tokenStore.pushes(to: user.document, userID: id, count: user.badgeSource) { token in
                Notifications.silentBadge(token: token, badge: badge, conversationID: conversation.id, reason: reason, extra: ["messageId": messageID])
            }
        }
        return (writes, pushes, stored.warnings)
    }
}
