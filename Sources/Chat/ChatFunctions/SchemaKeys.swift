import FirestoreModel
import WireFormats

/// One key of a schema file: the concept it names, the document it is in, who writes that field, and
/// what Herald does with it. `SchemaFile` reads and writes the keys through this table, and
/// docs/schema.md is written from it (`swift run herald infra`): a key cannot exist without its row.
public struct SchemaKey: Sendable {
    /// Where the key's field lives.
    public enum Place: String, Sendable, CaseIterable {
        case paths = "paths"
        case message = "message"
        case conversation = "conversation"
        case user = "user"
        case alert = "alert"
        /// Every document Herald reads times from.
        case documents = "all"
    }

    /// Who writes the field: Herald only reads what the app writes, and writes its own fields.
    public enum Writer: String, Sendable {
        case app = "app"
        case herald = "Herald"
        case both = "app, then Herald"
        case none = "—"
    }

    enum Value: Sendable {
        /// A document pattern such as `rooms/{roomId}/posts/{postId}`.
        case pattern(any WritableKeyPath<Schema, String> & Sendable)
        /// A top-level collection id.
        case collection(any WritableKeyPath<Schema, String> & Sendable)
        /// A top-level field name.
        case field(any WritableKeyPath<Schema, String> & Sendable)
        /// A top-level collection id, or null.
        case optionalCollection(any WritableKeyPath<Schema, String?> & Sendable)
        /// A top-level field name, or null: not kept.
        case optionalField(any WritableKeyPath<Schema, String?> & Sendable)
        /// A stored string value (not a field name), or null.
        case optionalText(any WritableKeyPath<Schema, String?> & Sendable)
        /// Field names, the first present one used.
        case fields(any WritableKeyPath<Schema, [String]> & Sendable)
        case lastMessage, tokens, notificationText, timeFormat, mediaFields
    }

    public let name: String
    /// The concept in docs/schema.md's table (several keys share one).
    public let concept: String
    public let place: Place
    public let writer: Writer
    /// What Herald does with the field, in a sentence.
    public let use: String
    let value: Value
    /// Whether the field may be inside a map (`user._id`): message fields the app writes and Herald only reads.
    public let mayBeNested: Bool
    /// The `Schema` properties the key sets (a test checks every property has its key).
    public var properties: [String] {
        switch value {
        case .lastMessage: ["lastMessage"]
        case .tokens: ["tokens"]
        case .notificationText: ["notificationText"]
        case .timeFormat: ["timeFormat"]
        case .mediaFields: ["mediaFields"]
        default: [name]
        }
    }

    init(_ name: String, _ concept: String, _ place: Place, _ writer: Writer, _ value: Value, _ use: String, mayBeNested: Bool = false) {
        self.name = name
        self.concept = concept
        self.place = place
        self.writer = writer
        self.value = value
        self.use = use
        self.mayBeNested = mayBeNested
    }
}

extension Schema {
    /// Every key of a schema file, in the order docs/schema.md and `herald schema show` list them.
    public static let keys: [SchemaKey] = [
        .init(
            "messagePattern", "message path", .paths, .app, .pattern(\.messagePattern),
            "Eventarc triggers on it: onMessageCreated on create, onReadReceipt on update and delete. Its parent document is the conversation, unless messages are a top-level collection."
        ),
        .init(
            "conversationIDField", "message path", .message, .app, .optionalField(\.conversationIDField),
            "For top-level message collections only: the message's conversation id, looked up in `conversationCollection`."),
        .init(
            "conversationCollection", "conversations", .paths, .app, .collection(\.conversationCollection),
            "The collection of conversation documents (for nested messages, the pattern's parent collection)."),
        .init(
            "memberFields", "members", .conversation, .app, .fields(\.memberFields),
            "Arrays of user ids, or maps keyed by them (`{uid: true}`; a key whose value is false or null is no member); the first that lists any is the membership. Only members get pushes and counts; a sender who is not one is refused."
        ),
        .init(
            "groupFlagField", "group flag and name", .conversation, .app, .optionalField(\.groupFlagField),
            "A boolean: true marks a group (group alert text, read counts)."),
        .init(
            "groupTypeField", "group flag and name", .conversation, .app, .optionalField(\.groupTypeField),
            "Else a string field whose value `groupTypeValue` marks a group; with neither, more than two members make a group."),
        .init("groupTypeValue", "group flag and name", .conversation, .app, .optionalText(\.groupTypeValue), "The `groupTypeField` value of a group."),
        .init("groupNameField", "group flag and name", .conversation, .app, .field(\.groupNameField), "Shown in group alerts as {group}."),
        .init(
            "senderIDField", "sender", .message, .app, .field(\.senderIDField),
            "The author's user id: not pushed to, not counted unread. May be inside a map (`user._id`, as react-native-gifted-chat keeps it).",
            mayBeNested: true),
        .init(
            "senderNameField", "sender", .message, .app, .optionalField(\.senderNameField),
            "Shown as {sender} when set; else the sender's `displayNameField`. May be inside a map (`user.name`).", mayBeNested: true),
        .init("displayNameField", "sender", .user, .app, .field(\.displayNameField), "The sender's name in alerts when the message carries none."),
        .init(
            "familyNameField", "sender", .user, .app, .optionalField(\.familyNameField),
            "For a name kept in two fields (`firstName`, `lastName`): joined after `displayNameField` with a space, in alerts and in @mentions."),
        .init(
            "textField", "text", .message, .app, .field(\.textField), "The alert's preview (first 80 characters) and the last message's text.",
            mayBeNested: true),
        .init(
            "typeField", "type", .message, .app, .field(\.typeField), "A media type (image, video, …) shows a label such as \"📷 Photo\" instead of text.",
            mayBeNested: true),
        .init(
            "mediaFields", "type", .message, .app, .mediaFields,
            "For a message without a type: fields whose presence gives it one, `{\"image\": \"image\", \"video\": \"video\"}` (react-native-gifted-chat keeps a photo's address in `image`). Each may be a path into maps."
        ),
        .init(
            "timestampField", "timestamp", .message, .app, .field(\.timestampField), "When it was sent (else its create time): orders the last message.",
            mayBeNested: true),
        .init(
            "statusField", "status", .message, .both, .field(\.statusField),
            "The app writes `sending`; Herald moves it forward only: sent, delivered (every recipient in `deliveredToField`), read."),
        .init(
            "lastMessage", "last message", .conversation, .herald, .lastMessage,
            "Herald writes the newest message here: one map {text, senderId, senderName, timestamp, messageId, type, status} or separate fields."),
        .init(
            "updatedAtField", "last message", .conversation, .herald, .optionalField(\.updatedAtField),
            "Set to the newest message's time, as `timeFormat` says (`schema check` names a conversation holding anything else there: a list ordered by it would sort Herald's times apart)."
        ),
        .init(
            "unreadCountField", "unread counts", .conversation, .herald, .field(\.unreadCountField),
            "A map user id → unread count: up by one per message for each recipient, down when they read it or it is deleted."),
        .init(
            "unreadMarkField", "unread counts", .message, .herald, .field(\.unreadMarkField),
            "Herald's own map {uid: true} of recipients whose count holds this message, so each read counts down exactly once."),
        .init(
            "badgeField", "badge", .user, .herald, .field(\.badgeField),
            "The user's total unread count: every push carries it as the app badge."),
        .init(
            "badgeCollection", "badge", .paths, .herald, .optionalCollection(\.badgeCollection),
            "A collection id (`badges` in every preset): each user's badge is a document of its own there (`{collection}/{userId}`), so a badge write does not trigger tokenCleanup (one invocation less per recipient of every message); a badge still in the user document moves there with its next count. Null: the badge is a field of the user document."
        ),
        .init(
            "tokens", "tokens", .user, .app, .tokens,
            "The user's push tokens (FCM registration tokens, Expo push tokens and raw APNs device tokens, told apart by their shape): one string, an array, the keys of a map, the documents of a subcollection under the user (the token in a `token` field or as the document id), one document per user in a top-level collection (`fcmTokens/{userId}` with a `token` field, as Firebase's guide to managing tokens keeps them), or one document per device in a top-level collection naming its user (`fcmTokens/{token}` `{uid}` with `documentPerToken`, as Firebase's Friendly Chat codelab keeps them; found by a query on the user field, one for each recipient of a message, at most 50 documents each; security rules must let users write only documents naming themselves). A dead token deletes its token document. Each message goes to a user's ten newest: the last in an array, by the time a map's values hold (`{token: timestamp}`), by when a token document was written. Dead tokens are removed; tokenCleanup keeps them normal and at most ten (a map's only when its values hold times)."
        ),
        .init(
            "tokensUpdatedAtField", "tokens", .user, .herald, .optionalField(\.tokensUpdatedAtField),
            "When the tokens last changed: Herald stamps it on the user document; with tokens in documents of their own the app writes it on each one (a timestamp, or a number in `timeFormat`). The nightly sweep removes tokens older than 60 days (a map's tokens with times each by its own time)."
        ),
        .init(
            "onlineField", "presence", .user, .both, .field(\.onlineField),
            "A boolean (or a string with `onlineStatusValue` / `offlineStatusValue`); presenceSweeper sets it offline when the heartbeat is stale."),
        .init("onlineStatusValue", "presence", .user, .app, .optionalText(\.onlineStatusValue), "For a string presence field: the online value."),
        .init("offlineStatusValue", "presence", .user, .herald, .optionalText(\.offlineStatusValue), "For a string presence field: the value Herald writes."),
        .init(
            "heartbeatField", "presence", .user, .app, .field(\.heartbeatField),
            "A time the app refreshes while online (60 s without it: offline), as `timeFormat` says."),
        .init(
            "lastSeenField", "presence", .user, .herald, .optionalField(\.lastSeenField),
            "Set to the last heartbeat when Herald marks the user offline (null: the heartbeat is the last-seen time)."),
        .init("typingField", "typing", .user, .both, .optionalField(\.typingField), "The conversation the user is typing in; cleared when stale."),
        .init("typingAtField", "typing", .user, .both, .optionalField(\.typingAtField), "Since when; older than 10 s is stale."),
        .init(
            "viewingField", "viewing", .user, .both, .optionalField(\.viewingField),
            "The conversation the user has open: no alert for its messages while fresh; cleared when stale."),
        .init("viewingAtField", "viewing", .user, .both, .optionalField(\.viewingAtField), "Since when; older than 60 s is stale."),
        .init(
            "readByField", "read state", .message, .app, .field(\.readByField),
            "User ids who read the message (an array, or a map keyed by them such as {uid: timestamp}): their unread count and badge go down once; all recipients: status read."
        ),
        .init(
            "deliveredToField", "read state", .message, .app, .optionalField(\.deliveredToField),
            "User ids whose device received it (an array or a map keyed by them): all recipients: status delivered."),
        .init("readCountField", "read state", .message, .herald, .optionalField(\.readCountField), "\"Read by N\" in groups, kept on the message."),
        .init(
            "mutedByField", "notification settings", .conversation, .app, .optionalField(\.mutedByField),
            "User ids who muted the conversation: badge only, no alert."),
        .init(
            "mutedUntilField", "notification settings", .conversation, .app, .optionalField(\.mutedUntilField),
            "A map user id → time (or true: for good) until which they muted it."),
        .init(
            "notificationLevelField", "notification settings", .conversation, .app, .optionalField(\.notificationLevelField),
            "A map user id → all, mentions or none."),
        .init(
            "mentionsField", "notification settings", .message, .app, .optionalField(\.mentionsField),
            "User ids the message mentions (besides @DisplayName in its text): the mention alert."),
        .init(
            "quietHoursField", "notification settings", .user, .app, .optionalField(\.quietHoursField),
            "A map {start, end, timeZone, allowMentions}: badge only during those hours."),
        .init("snoozedUntilField", "notification settings", .user, .app, .optionalField(\.snoozedUntilField), "A time: badge only until then."),
        .init("timeZoneField", "notification settings", .user, .app, .optionalField(\.timeZoneField), "An IANA zone, for quiet hours that name none."),
        .init(
            "notificationText", "notification text", .alert, .none, .notificationText,
            "Title and body of an alert per kind (direct, group, mention) with {sender}, {group} and {preview}, and their localization keys."),
        .init(
            "timeFormat", "times", .documents, .app, .timeFormat,
            "How the app keeps times: `timestamp` (Firestore's), `epochMilliseconds` (`Date.now()`) or `epochSeconds`. Herald reads the message time, heartbeats, typing and viewing marks, mutes and snoozes so, and writes the last message's time, `updatedAtField` and `lastSeenField` so."
        ),
        .init(
            "userCollection", "users", .paths, .app, .collection(\.userCollection),
            "The top-level collection of user documents, by user id; tokenCleanup triggers on it (on the token documents instead, when tokens are kept in documents of their own)."
        ),
    ]

    public static func key(named name: String) -> SchemaKey? { keys.first { $0.name == name } }
}

extension SchemaKey {
    /// The key's value in `schema`, as a schema file writes it.
    public func json(in schema: Schema) -> JSONValue {
        switch value {
        case .pattern(let path), .collection(let path), .field(let path): .string(schema[keyPath: path])
        case .optionalField(let path), .optionalCollection(let path), .optionalText(let path): schema[keyPath: path].map(JSONValue.string) ?? .null
        case .fields(let path): .array(schema[keyPath: path].map(JSONValue.string))
        case .lastMessage:
            switch schema.lastMessage {
            case .map(let field): ["map": .string(field)]
            case .flat(let text, let senderID, let senderName, let timestamp):
                [
                    "flat": .object(
                        ["text": text, "senderID": senderID, "senderName": senderName, "timestamp": timestamp].mapValues { $0.map(JSONValue.string) ?? .null })
                ]
            }
        case .tokens: schema.tokens.json
        case .notificationText: schema.notificationText.json
        case .timeFormat: .string(schema.timeFormat.rawValue)
        case .mediaFields: .object(schema.mediaFields.mapValues(JSONValue.string))
        }
    }

    /// The key's value in `schema` as docs/schema.md's table shows it: field names in code, `—` for none.
    public func summary(in schema: Schema) -> String {
        func code(_ text: String?) -> String { text.map { "`\($0)`" } ?? "—" }
        switch value {
        case .pattern(let path), .collection(let path), .field(let path): return code(schema[keyPath: path])
        case .optionalField(let path), .optionalCollection(let path): return code(schema[keyPath: path])
        case .optionalText(let path): return schema[keyPath: path].map { "\"\($0)\"" } ?? "—"
        case .fields(let path): return schema[keyPath: path].map { code($0) }.joined(separator: ", ")
        case .lastMessage:
            switch schema.lastMessage {
            case .map(let field): return "map \(code(field))"
            case .flat(let text, let senderID, let senderName, let timestamp):
                return "fields " + [text, senderID, senderName, timestamp].compactMap { $0.map { code($0) } }.joined(separator: ", ")
            }
        case .tokens: return schema.tokens.layout.summary
        case .notificationText:
            let text = schema.notificationText
            return text.direct.title == nil ? "one line: \"\(text.direct.body.template)\"" : "title \"\(text.direct.title!.template)\""
        case .timeFormat: return "`\(schema.timeFormat.rawValue)`"
        case .mediaFields:
            return schema.mediaFields.isEmpty
                ? "—" : schema.mediaFields.sorted { $0.key < $1.key }.map { "\(code($0.key)) → \($0.value)" }.joined(separator: ", ")
        }
    }
}
