import FirestoreEvents
import FirestoreModel
import HeraldCore
import ZoneInfo

/// A new message: denormalize it into its conversation, count it as unread for every recipient who has
/// not read it, mark it sent, and push it to the recipients' devices.
public struct OnMessageCreated: EventFunction, ConfigurableFunction {
    public static let name = "onMessageCreated"
    public static let summary = "On a new message: push to the other participants and update the conversation."
    public static let settings = ["HERALD_VIEWING_STALE_AFTER"]
    /// A "viewing this conversation" mark older than this is stale, like presence (presenceSweeper
    /// clears such marks after the same setting).
    public static let viewingFreshness: Int64 = 60

    public let schema: Schema
    /// For recipients' quiet hours, in their own time zones.
    public let timeZones: TimeZones
    /// Seconds a viewing mark holds pushes back (`HERALD_VIEWING_STALE_AFTER`).
    public let viewingStaleAfter: Int64
    public init(settings: FunctionSettings) throws {
        schema = try Schema.load(settings)
        timeZones = settings.timeZones
        viewingStaleAfter = try settings.seconds("HERALD_VIEWING_STALE_AFTER", default: Self.viewingFreshness)
    }
    public init(schema: Schema, timeZones: TimeZones = .utcOnly, viewingStaleAfter: Int64 = viewingFreshness) {
        self.schema = schema
        self.timeZones = timeZones
        self.viewingStaleAfter = viewingStaleAfter
    }

    public var trigger: Trigger { Trigger(pattern: schema.messagePattern, kinds: [.created]) }

    /// Run from the top again after each round of reads: `reading.need` throws `NotReadYet` naming what
    /// to read next, and `EventProcessor` reads it and calls this again.
    public func plan(for change: DocumentChange, reading: Reads) throws(NotReadYet) -> Plan {
        let unsent = "the message was deleted before its event was handled (unsent): nothing to announce"
        guard change.newDocument != nil else { return .skip(unsent) }
        guard let conversationName = schema.conversationName(for: change) else {
            return .skip("the message names no conversation (\(schema.conversationIDField ?? "pattern") is missing)")
        }
        // The conversation, and the message as it is now: one deleted before its event is handled was unsent.
        // What is read may have changed since an earlier delivery's first commit (the message unsent, the
        // sender gone from the group): a skip then still finishes that delivery's ledger parts.
        try reading.need(documents: [conversationName, change.document])
        guard let current = try reading.document(change.document) else { return .skipUnlessStarted(unsent) }
        guard let found = try reading.document(conversationName) else { return .skipUnlessStarted("conversation \(conversationName.path) does not exist") }
        let message = schema.message(current)
        let conversation = schema.conversation(found)
        guard let senderID = message.senderID else { return .skipUnlessStarted("the message has no \(schema.senderIDField)") }
        guard FirestoreNames.isUsableAsIDAndFieldName(senderID) else {
            return .skipUnlessStarted(
                "suspicious: the sender id is no user's: \(FirestoreNames.idProblem(senderID) ?? FirestoreNames.fieldNameProblem(senderID) ?? "")")
        }
        let members = conversation.members
        guard members.contains(senderID) else { return .skipUnlessStarted("suspicious: sender \(senderID) is not a member of \(conversationName.path)") }
        let recipients = members.filter { $0 != senderID }

        // The members' user documents (the sender's name, the recipients' badges, settings and devices).
        let users = try schema.users(members, notifying: recipients, near: conversationName, reading: reading)
        let (sentAt, futureTime) = message.boundedSentAt(recorded: change.time)
        let senderName = ChatText.sender(
            message.senderName ?? users[senderID]?.displayName ?? "Someone", id: senderID,
            otherMembers: members.filter { $0 != senderID }.map { users[$0]?.displayName })
        let preview = Preview.of(text: message.text, type: message.storedType)
        var stored = StoredValues(warnings: conversation.memberWarnings + (futureTime.map { [$0] } ?? []))

        // The conversation shows it as its last message, and it is `sent` if its client left it sending (or pending).
        var writes: [Write] = []
        if let lastMessage = conversation.setLastMessage(message, senderID: senderID, senderName: senderName, preview: preview, sentAt: sentAt) {
            writes.append(lastMessage)
        }
        if message.status.map(Message.unsentStatuses.contains) ?? true { writes.append(message.markSent()) }

        // Each recipient who has not read it yet (a receipt can land before this event is handled) counts it
        // as unread: in the conversation, in their badge, and with a mark on the message by which
        // onReadReceipt knows to count their read down, once (the mark's write re-triggers it, so order
        // never matters).
        let readBy = message.readBy
        let counted = recipients.filter { !readBy.contains($0) }
        let isCounted = Set(counted)
        let groups = counted.map { recipient in
            [conversation.incrementUnread(for: recipient), message.markCounted(for: recipient)] + (users[recipient]?.incrementBadge() ?? [])
        }

        // Every recipient not looking at the conversation is told: an alert, or only their new badge when
        // their settings silence this message (docs/notifications.md).
        let preferences = NotificationPreferences(schema: schema, timeZones: timeZones)
        let mentioned = preferences.mentioned(by: message.document, text: message.text, recipients: recipients, users: users)
        let announcement = Announcement(
            senderID: senderID, senderName: senderName, group: conversation.groupName, text: schema.notificationText, conversationID: conversation.id,
            messageID: message.id,
            type: message.type, preview: preview, previewKey: Preview.localizationKey(text: message.text, type: message.storedType))
        let tokenStore = TokenStore(schema.tokens, documents: reading.read)
        var pushes: [PushMessage] = []
        for recipient in recipients {
            guard let user = users[recipient], !user.isViewing(conversation.id, at: change.time, freshness: viewingStaleAfter) else { continue }
            // The badge as it will be once this message is counted (the stored count is any client's to
            // write); the executor sends the count its commit produced instead, where there is one.
            let badge = min(user.badge(&stored), Int(Int32.max) - 1) + (isCounted.contains(recipient) ? 1 : 0)
            let decision = preferences.decision(
                for: recipient, user: user.document, conversation: conversation.document,
                isGroup: conversation.isGroup, mentioned: mentioned.contains(recipient), at: change.time,
                warnings: &stored.warnings)
            // One message for all of the recipient's devices, addressed to each of their tokens.
            pushes += tokenStore.pushes(to: user.document, userID: recipient, count: user.badgeSource) { token in
                switch decision {
                case .alert(let mentioned):
                    announcement.alert(token: token, mentioned: mentioned, badge: badge)
                case .silent(let reason):
                    Notifications.silentBadge(
                        token: token, badge: badge, conversationID: conversation.id, reason: reason,
                        extra: ["messageId": message.id])
                }
            }
        }
        return Plan(writes: writes, groups: groups, pushes: pushes, warnings: stored.warnings)
    }
}
