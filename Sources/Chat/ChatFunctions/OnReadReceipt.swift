import FirestoreEvents
import FirestoreModel
import HeraldCore

/// A message was updated: when its readers or recipients grew, move its status forward, mirror it on
/// the conversation's last message, and bring each new reader's unread count and badge down, once.
/// A message was deleted (unsent): the recipients it still counted as unread are uncounted, once.
///
/// Exactness without writing the message: onMessageCreated marks each recipient it counted
/// (`heraldUnread.{uid}: true`), and a reader owes one decrement once a version of the message shows
/// them both marked and reading. Each update event compares its two versions: the readers who owe in
/// the new one and did not in the old one are this event's (every version's event comes, so each
/// reader is found by exactly one; an event without data reads the message as it is now and finds
/// them all). A receipt per reader and message (`{message}/heraldReads/{uid}`), created with the
/// decrement, makes the decrement happen once whichever event comes to it first. The message itself
/// is written only when its status moves forward (and "read by N" rises): a group's readers keep
/// writing it, and a decrement conditional on it would wait for them.
public struct OnReadReceipt: EventFunction, ConfigurableFunction {
    public static let name = "onReadReceipt"
    public static let summary = "On a message update or deletion: advance its status and bring unread counts and badges down."
    static let statusOrder = Message.unsentStatuses + ["sent", "delivered", "read"]

    public let schema: Schema
    public init(settings: FunctionSettings) throws { schema = try Schema.load(settings) }
    public init(schema: Schema) { self.schema = schema }

    public var trigger: Trigger { Trigger(pattern: schema.messagePattern, kinds: [.updated, .deleted]) }

    public func plan(for change: DocumentChange, reading: Reads) throws(NotReadYet) -> Plan {
        if change.effectiveKind == .deleted { return try planDeletion(change, reading: reading) }
        guard let conversationName = schema.conversationName(for: change) else { return .skip("the message's conversation does not exist") }
        // The message's two versions from the event; an event without them reads the message as it is now.
        let before: Message?
        let message: Message
        if let old = change.oldDocument, let new = change.newDocument {
            let (previous, current) = (schema.message(old), schema.message(new))
            // Nobody read or received it in this write, no reader became counted, and its status did not
            // change where readers could move it on: nothing to do and nothing to read (onMessageCreated's
            // marks and "sent" before anyone read it, Herald's own status writes). A status set back under
            // its readers (onMessageCreated's "sent" landing after a receipt made it "read") is not skipped.
            let everyReader = Array(current.readBy)
            let nobodyElse = current.readBy.union(current.deliveredTo).subtracting([current.senderID ?? ""]).isEmpty
            if previous.readBy == current.readBy, previous.deliveredTo == current.deliveredTo,
                previous.readAndCounted(among: everyReader) == current.readAndCounted(among: everyReader),
                previous.status == current.status || nobodyElse
            {
                return .skip("read and delivered state unchanged")
            }
            (before, message) = (previous, current)
            try reading.need(documents: [conversationName])
        } else {
            try reading.need(documents: [change.document, conversationName])
            guard let now = try reading.document(change.document) else { return .skip("the message no longer exists") }
            (before, message) = (nil, schema.message(now))
        }
        guard let found = try reading.document(conversationName) else { return .skip("the message's conversation does not exist") }
        let conversation = schema.conversation(found)
        let recipients = conversation.members.filter { $0 != message.senderID }
        guard !recipients.isEmpty else { return .skip("the message has no recipients") }

        // The readers this event owes a decrement, less those another event already counted down.
        let owed = message.readAndCounted(among: recipients).subtracting(before?.readAndCounted(among: recipients) ?? [])
        let receipts = Dictionary(owed.compactMap { reader in message.receipt(of: reader).map { (reader, $0) } }) { first, _ in first }
        try reading.need(documents: receipts.values.sorted())
        var toUncount: [String] = []
        for (reader, receipt) in receipts.sorted(by: { $0.key < $1.key }) {
            if try reading.document(receipt) == nil { toUncount.append(reader) }
        }

        var writes: [Write] = []
        if let advance = try advanceStatus(message, recipients: recipients, conversation: conversation, change: change, reading: reading) {
            writes += advance
        }
        let readers = message.readBy.intersection(recipients)
        if conversation.isGroup, message.readCount ?? -1 < Int64(readers.count), let raise = message.raiseReadCount(to: Int64(readers.count)) {
            writes.append(raise)
        }
        guard !writes.isEmpty || !toUncount.isEmpty else {
            // Every reader this event owes is counted down already: by this event's own earlier delivery,
            // perhaps, whose silent pushes failed. Planned again, they go out if its ledger says they are due.
            let counted = receipts.keys.sorted()
            guard !counted.isEmpty else { return .skip("read and delivered state unchanged") }
            let users = try schema.users(counted, notifying: counted, near: conversationName, reading: reading)
            let owedPushes = uncount(counted, users: users, in: conversation, reading: reading, reason: "read", messageID: message.id)
            return .skipUnlessStarted("its readers are counted down already", pushes: owedPushes.pushes)
        }
        let expireAt = change.time.adding(Message.receiptLifetime)
        writes += toUncount.compactMap { receipts[$0].map { Message.recordReceipt($0, expireAt: expireAt) } }
        let users = try schema.users(toUncount, notifying: toUncount, near: conversationName, reading: reading)
        let uncounted = uncount(toUncount, users: users, in: conversation, reading: reading, reason: "read", messageID: message.id)
        return Plan(writes: Write.merging(writes), groups: uncounted.groups, pushes: uncounted.pushes, warnings: uncounted.warnings)
    }

    /// The status moves forward: read when every recipient read it (a group too), delivered when every
    /// one received it. Written on the message as it is now, conditional on that version (another
    /// event may have moved it further meanwhile), and mirrored on the conversation's last message.
    func advanceStatus(
        _ message: Message, recipients: [String], conversation: Conversation, change: DocumentChange, reading: Reads
    ) throws(NotReadYet) -> [Write]? {
        guard Self.status(of: message, recipients: recipients) != nil else { return nil }
        try reading.need(documents: [change.document])
        guard let found = try reading.document(change.document) else { return nil }
        let now = schema.message(found)
        guard let status = Self.status(of: now, recipients: recipients) else { return nil }
        return [now.update(status: status)] + (conversation.setLastMessageStatus(status, of: now).map { [$0] } ?? [])
    }

    /// The status the message's readers and receivers give it, if further than the one it has.
    static func status(of message: Message, recipients: [String]) -> String? {
        let readers = message.readBy.intersection(recipients)
        let received = message.deliveredTo.union(readers)
        let current = message.status ?? "sent"
        let status = readers.count == recipients.count ? "read" : received.isSuperset(of: recipients) ? "delivered" : current
        return (statusOrder.firstIndex(of: status) ?? 0) > (statusOrder.firstIndex(of: current) ?? 0) ? status : nil
    }

    /// A deleted message leaves no unread count behind. Its marks as it was say whom it counted, and its
    /// readers then are counted down by their reads' events (receipts), so the others are uncounted here;
    /// a message deleted before onMessageCreated handled it was never counted (onMessageCreated then skips it).
    func planDeletion(_ change: DocumentChange, reading: Reads) throws(NotReadYet) -> Plan {
        guard let old = change.oldDocument else { return .skip("the deletion event carries no data: whom the message counted is unknown") }
        guard let conversationName = schema.conversationName(for: change), let found = try reading.document(conversationName) else {
            return .skip("the message's conversation does not exist")
        }
        let message = schema.message(old)
        let conversation = schema.conversation(found)
        // The marks are any client's to write: only a member, or someone the conversation still counts
        // unread messages for (who left since), can have been counted.
        let counted = message.countedAsUnread.filter { !message.readBy.contains($0) && conversation.mayCountUnread(for: $0) }
        guard !counted.isEmpty else { return .skip("the deleted message counted nobody as unread") }
        let users = try schema.users(counted, notifying: counted, near: conversationName, reading: reading)
        let uncounted = uncount(counted, users: users, in: conversation, reading: reading, reason: "deleted", messageID: old.name.documentID)
        return Plan(writes: [], groups: uncounted.groups, pushes: uncounted.pushes, warnings: uncounted.warnings)
    }

    /// Each user's unread count in the conversation and badge down by one (never below zero), one group
    /// per user (a large group's fit in commits of their own), and their devices told silently, with what
    /// they need to clear the conversation's notifications (an iPad clears when the phone reads) or the
    /// unsent message's.
    func uncount(
        _ ids: [String], users: [String: User], in conversation: Conversation, reading: Reads, reason: String,
        messageID: String
    ) -> (groups: [[Write]], pushes: [PushMessage], warnings: [String]) {
        let groups = ids.map { id in [conversation.decrementUnread(for: id)] + (users[id]?.decrementBadge() ?? []) }
        let tokenStore = TokenStore(schema.tokens, documents: reading.read)
        var pushes: [PushMessage] = []
        var stored = StoredValues()
        for id in ids {
            guard let user = users[id] else { continue }
            let badge = max(0, user.badge(&stored) - 1)
            pushes += tokenStore.pushes(to: user.document, userID: id, count: user.badgeSource) { token in
                Notifications.silentBadge(token: token, badge: badge, conversationID: conversation.id, reason: reason, extra: ["messageId": messageID])
            }
        }
        return (groups, pushes, stored.warnings)
    }
}
