import FirestoreModel
import HeraldCore
import WireFormats

/// Where the chat app keeps things in Firestore. The product documents' apps differ
/// (see shared/requirements/README.md); a preset or a JSON file says which layout this deployment uses.
public struct Schema: Sendable, Hashable {
    /// How a conversation's last message is stored.
    public enum LastMessageShape: Sendable, Hashable {
        /// One map field, e.g. `lastMessage {text, senderId, senderName, timestamp, messageId, type}`.
        case map(field: String)
        /// Separate fields; nil ones are not written.
        case flat(text: String?, senderID: String?, senderName: String?, timestamp: String?)
    }

    public var name: String
    /// Document pattern of a message, e.g. `conversations/{conversationId}/messages/{messageId}`.
    public var messagePattern: String
    /// The message field naming its conversation, for top-level message collections (PRD 001).
    public var conversationIDField: String?
    public var conversationCollection: String
    /// Conversation fields listing member user ids; the first present one is used.
    public var memberFields: [String]
    public var groupFlagField: String?
    /// A conversation is a group when this field equals `groupTypeValue` (e.g. `type == "group"`).
    public var groupTypeField: String?
    public var groupTypeValue: String?
    public var groupNameField: String
    public var senderIDField: String
    public var senderNameField: String?
    public var textField: String
    public var typeField: String
    /// Message fields whose presence gives a message without a type its type (`image` → image, as
    /// react-native-gifted-chat keeps a photo's address in `image`).
    public var mediaFields: [String: String] = [:]
    public var timestampField: String
    public var statusField: String
    public var lastMessage: LastMessageShape
    public var updatedAtField: String?
    /// Conversation map of user id → unread count.
    public var unreadCountField: String
    public var userCollection: String
    public var displayNameField: String
    /// For a name kept in two fields (`firstName`, `lastName`): the second, joined after `displayNameField`.
    public var familyNameField: String? = nil
    /// User field with the total unread count (the app badge).
    public var badgeField: String
    /// A top-level collection keeping each user's badge in a document of its own (`{collection}/{userId}`,
    /// in `badgeField`; `badges` in every preset); nil: the badge is a field of the user document.
    public var badgeCollection: String?
    public var tokens: TokenStorage
    /// User fields saying which conversation the user is looking at, and since when.
    public var viewingField: String?
    public var viewingAtField: String?
    /// Conversation field listing users who muted it for good.
    public var mutedByField: String?
    /// Conversation map of user id → until when they muted it (a timestamp; `true`: for good).
    public var mutedUntilField: String?
    /// Conversation map of user id → which messages alert them: `all`, `mentions` (in groups) or `none`.
    public var notificationLevelField: String?
    /// Message array of the user ids it mentions (besides `@DisplayName` in its text).
    public var mentionsField: String?
    /// User map of quiet hours: `{start: "22:00", end: "07:00", timeZone: "Europe/Berlin", allowMentions: false}`.
    public var quietHoursField: String?
    /// User timestamp: no alerts until then.
    public var snoozedUntilField: String?
    /// User field with an IANA time zone name, for quiet hours that name none.
    public var timeZoneField: String?
    /// Who has read / received a message: arrays of user ids on the message.
    public var readByField: String
    public var deliveredToField: String?
    /// "Read by N" for groups (PRD 000), kept on the message; nil: not kept.
    public var readCountField: String?
    /// Herald's own mark on a message: `{uid: true}` for each recipient whose unread count it holds,
    /// so read receipts bring counts down exactly once, whatever the order of events.
    public var unreadMarkField: String
    /// Presence on the user document: a boolean field (`online`, `isOnline`), or a string field whose
    /// values say online and offline (PRD 000's `status`: "online"/"offline").
    public var onlineField: String
    public var onlineStatusValue: String?
    public var offlineStatusValue: String?
    /// The timestamp a client refreshes while it is online.
    public var heartbeatField: String
    /// Set to the last heartbeat when a user is marked offline; nil when the heartbeat is the last-seen time itself.
    public var lastSeenField: String?
    /// User fields saying in which conversation the user is typing, and since when.
    public var typingField: String?
    public var typingAtField: String?
    /// When the user's tokens last changed: on the user document, or on each token document for
    /// subcollection storage. tokenCleanup keeps it for the other storages; nil: tokens never expire.
    public var tokensUpdatedAtField: String?
    /// What an alert says, per kind of chat (docs/notifications.md).
    public var notificationText: NotificationText = .oneLine
    /// How the app keeps times: timestamps, or epoch milliseconds or seconds (StoredTimes.swift).
    public var timeFormat: TimeFormat = .timestamp

    public var userPattern: String { "\(userCollection)/{userId}" }

    /// A field a schema names, as a path: a top-level name, or for message fields Herald only reads, a
    /// path into maps (`user._id`, checked when the schema was read).
    public static func path(of field: String) -> [String] {
        guard field.contains(".") || field.contains("`"), let path = try? FieldPath(parsing: field) else { return [field] }
        return path.segments
    }

    /// The value of a field a schema names in `document`: top-level, or inside maps.
    public static func value(of field: String, in document: FirestoreDocument) -> FirestoreValue? {
        FieldPath.value(in: document.fields, at: path(of: field)[...])
    }

    /// Sets a field a schema names in a document's fields (creating the maps on its path), as an app writes it.
    public static func set(_ value: FirestoreValue, field: String, in fields: inout [String: FirestoreValue]) {
        FieldPath.set(value, in: &fields, at: path(of: field)[...])
    }

    /// A user's name as alerts show it: `displayNameField`, or with `familyNameField` both parts joined
    /// by a space (either alone when the other is missing or blank).
    public func displayName(of user: FirestoreDocument) -> String? {
        guard let familyNameField else { return user[displayNameField]?.stringValue }
        let parts = [displayNameField, familyNameField].compactMap { user[$0]?.stringValue?.trimmingWhitespace }.filter { !$0.isEmpty }
        return parts.isEmpty ? nil : parts.joined(separator: " ")
    }

    static let base = Schema(
        name: "default", messagePattern: "conversations/{conversationId}/messages/{messageId}", conversationIDField: nil,
        conversationCollection: "conversations", memberFields: ["members"], groupFlagField: "isGroup", groupTypeField: nil,
        groupTypeValue: nil, groupNameField: "name", senderIDField: "senderId", senderNameField: "senderName", textField: "text",
        typeField: "type", timestampField: "timestamp", statusField: "status", lastMessage: .map(field: "lastMessage"),
        updatedAtField: "updatedAt", unreadCountField: "unreadCount", userCollection: "users", displayNameField: "displayName",
        badgeField: "unreadTotal", badgeCollection: "badges", tokens: .array(field: "fcmTokens"), viewingField: "viewingConversationId",
        viewingAtField: "viewingAt", mutedByField: "mutedBy", mutedUntilField: "mutedUntil", notificationLevelField: "notificationLevels",
        mentionsField: "mentions", quietHoursField: "quietHours", snoozedUntilField: "snoozedUntil", timeZoneField: "timeZone", readByField: "readBy",
        deliveredToField: "deliveredTo",
        readCountField: nil, unreadMarkField: "heraldUnread", onlineField: "online", onlineStatusValue: nil, offlineStatusValue: nil,
        heartbeatField: "heartbeatAt", lastSeenField: "lastSeen", typingField: "typingIn", typingAtField: "typingAt",
        tokensUpdatedAtField: "tokensUpdatedAt")

    public static let presets: [String: Schema] = {
        var prd000 = base
        prd000.name = "prd000"
        prd000.memberFields = ["participants"]
        prd000.groupNameField = "groupName"
        prd000.readCountField = "readCount"
        prd000.onlineField = "status"
        prd000.onlineStatusValue = "online"
        prd000.offlineStatusValue = "offline"
        prd000.heartbeatField = "heartbeat"
        prd000.notificationText = .senderTitle
        var prd001 = base
        prd001.name = "prd001"
        prd001.messagePattern = "messages/{messageId}"
        prd001.conversationIDField = "conversationId"
        prd001.memberFields = ["participants"]
        prd001.groupTypeField = "type"
        prd001.groupTypeValue = "group"
        prd001.lastMessage = .flat(text: "lastMessageText", senderID: "lastMessageSenderId", senderName: nil, timestamp: "lastMessage")
        // PRD 001 keeps `online` and `lastSeen`: the client's heartbeat is its lastSeen.
        prd001.heartbeatField = "lastSeen"
        prd001.lastSeenField = nil
        prd001.notificationText = .senderTitle
        var prd004 = base
        prd004.name = "prd004"
        prd004.messagePattern = "chats/{chatID}/messages/{messageID}"
        prd004.conversationCollection = "chats"
        prd004.memberFields = ["memberIDs", "participantIDs"]
        prd004.groupFlagField = nil
        prd004.groupTypeField = "type"
        prd004.groupTypeValue = "group"
        prd004.groupNameField = "groupName"
        prd004.senderIDField = "senderID"
        prd004.statusField = "deliveryStatus"
        prd004.lastMessage = .flat(text: "lastMessageText", senderID: "lastMessageSenderID", senderName: nil, timestamp: "lastMessageTimestamp")
        prd004.tokens = .single(field: "fcmToken")
        prd004.onlineField = "isOnline"
        prd004.heartbeatField = "lastSeenTimestamp"
        prd004.lastSeenField = nil
        prd004.tokensUpdatedAtField = "fcmTokenUpdatedAt"
        prd004.mentionsField = "mentionIDs"
        prd004.notificationText = .senderTitle
        return ["default": base, "prd000": prd000, "prd001": prd001, "prd004": prd004]
    }()

    /// Each preset in one line, for people who have not read the product documents.
    public static let presetSummaries: [(name: String, summary: String)] = [
        (
            "default",
            "messages under each conversation (conversations/{conversationId}/messages/{messageId}), members in `members`, tokens in an `fcmTokens` array, one-line alerts \"Family • Alice: Dinner at 6pm\""
        ),
        (
            "prd000",
            "the default layout with members in `participants`, presence as a string `status` (\"online\"/\"offline\") with a `heartbeat`, and \"read by N\" on group messages; alerts titled with the sender"
        ),
        (
            "prd001",
            "one top-level `messages` collection whose messages name their `conversationId`, flat last-message fields, `online` and `lastSeen`; alerts titled with the sender"
        ),
        (
            "prd004",
            "Swift-style names (`chats/{chatID}/messages/{messageID}`, `senderID`, `memberIDs` or `participantIDs`), one `fcmToken` string per user, `isOnline`; alerts titled with the sender"
        ),
    ]

    /// A preset by name, or a schema JSON file's contents: `{"extends": PRESET, KEY: VALUE, …}` with the
    /// keys of this type (strings; `memberFields` an array; `lastMessage` and `tokens` objects). Errors
    /// name the bad key. The runtime reads the file (`FunctionSettings.schemaFile`).
    /// A file's `tokens` may name any of `tokenLayouts`.
    public static func load(_ name: String, file: JSONValue? = nil, tokenLayouts: TokenLayouts = .standard) throws(SchemaError) -> Schema {
        if let preset = presets[name] { return preset }
        guard let file else {
            throw SchemaError(
                "unknown schema \(FirestoreNames.quoted(name)): use one of \(presets.keys.sorted().joined(separator: ", ")) or a path to a JSON file (`herald schema show PRESET` prints one to start from)"
            )
        }
        do { return try SchemaFile.decode(file, name: name, tokenLayouts: tokenLayouts) } catch {
            throw SchemaError("schema file \(name): \(error.description)")
        }
    }

    public static func load(_ settings: FunctionSettings) throws(SchemaError) -> Schema { try load(settings.schema, file: settings.schemaFile) }
}

public struct SchemaError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
