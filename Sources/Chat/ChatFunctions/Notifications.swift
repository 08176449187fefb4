import HeraldCore

/// What the pushes Herald sends have in common, as the app receives them (docs/notifications.md).
enum Notifications {
    /// The category (APNs) an app registers its actions for: reply, mark as read.
    static let messageCategory = "HERALD_MESSAGE"

    /// An id short enough for `apns-collapse-id` and `thread-id` (64 bytes) and Android's tag: itself, or its digest when longer.
    static func shortID(_ id: String) -> String { id.utf8.count <= 64 ? id : Digest.hex(id) }

    /// A push that only sets the badge: nothing shown, no sound. `data` says why (`reason`) and, with
    /// `threadId`, which conversation's notifications the app can clear.
    static func silentBadge(token: String, badge: Int, conversationID: String, reason: String, extra: [String: String] = [:]) -> FCMMessage {
        var data = extra
        data["conversationId"] = conversationID
        data["threadId"] = shortID(conversationID)
        data["reason"] = reason
        return FCMMessage.badgeOnly(token: token, badge: badge, data: data)
    }
}

/// What every recipient's alert for one message shares; only the badge and the mention differ.
struct Announcement {
    var senderID: String
    var senderName: String
    /// The group's name, or nil for a 1:1 chat.
    var group: String?
    var text: NotificationText
    var conversationID: String
    var messageID: String
    var type: String
    var preview: String
    /// The key of the preview in the app's languages, for a media label (a text is never translated).
    var previewKey: String?

    /// The notification a recipient sees: plain text, with the keys of its framing and of a media label
    /// so each device can show them in its own language; grouped per conversation.
    func alert(token: String, mentioned: Bool, badge: Int) -> FCMMessage {
        let shown = FilledNotification(
            text.template(isGroup: group != nil, mentioned: mentioned), sender: senderName, group: group, preview: preview, previewKey: previewKey)
        let collapseID = Notifications.shortID(messageID)
        let threadID = Notifications.shortID(conversationID)
        var data = [
            "conversationId": conversationID, "messageId": messageID, "senderId": senderID, "type": type,
            "summary": shown.summary, "threadId": threadID,
        ]
        if mentioned { data["mentioned"] = "true" }
        return FCMMessage(
            token: token, notification: .init(title: shown.title, body: shown.body), data: data,
            android: .init(priority: .high, collapseKey: collapseID, tag: threadID, notificationCount: badge, localization: shown.localization),
            apns: .init(
                priority: 10, pushType: .alert, collapseID: collapseID, alert: .init(title: shown.title, body: shown.body),
                badge: badge, sound: "default", threadID: threadID, category: Notifications.messageCategory, localization: shown.localization)
        ).fitted()
    }
}
