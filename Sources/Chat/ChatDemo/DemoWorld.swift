import ChatFunctions
import FirestoreModel
import WireFormats

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A small world for `herald dev --seed demo`, in any schema: Alice, Bob, Carol, Dave and Erin with
/// push tokens of every kind (Bob on a phone with FCM and an iPad with a raw APNs token, Carol on a
/// phone with Expo Go), a 1:1 chat between Alice and Bob, the group "Family"
/// (Alice, Bob, Carol), and the group "Book club" (Alice, Bob, Dave, Erin) that Dave muted, while
/// Erin is in quiet hours all day (mentions still reach her).
public struct DemoWorld: Sendable {
    public struct Person: Sendable {
        public var id: String
        public var name: String
        public var tokens: [String]
        /// `{start, end, timeZone, allowMentions}` as the app writes them, if they keep quiet hours.
        public var quietHours: [String: FirestoreValue]?

        public init(id: String, name: String, tokens: [String], quietHours: [String: FirestoreValue]? = nil) {
            self.id = id
            self.name = name
            self.tokens = tokens
            self.quietHours = quietHours
        }
    }

    public struct Conversation: Sendable {
        public var id: String
        public var members: [String]
        /// The group's name, or nil for a 1:1 chat.
        public var group: String?
        /// Members who muted it, for good.
        public var mutedBy: [String]

        public init(id: String, members: [String], group: String?, mutedBy: [String] = []) {
            self.id = id
            self.members = members
            self.group = group
            self.mutedBy = mutedBy
        }
    }

    public let schema: Schema
    public let project: String
    public let database: String

    public static let people = [
        Person(id: "alice", name: "Alice", tokens: ["tok-alice-phone"]),
        Person(id: "bob", name: "Bob", tokens: ["tok-bob-phone", bobsIPad]),
        Person(id: "carol", name: "Carol", tokens: [carolsPhone]),
        Person(id: "dave", name: "Dave", tokens: ["tok-dave-phone"]),
        // Quiet all day, so the demo behaves the same at any hour.
        Person(
            id: "erin", name: "Erin", tokens: ["tok-erin-phone"],
            quietHours: ["start": .string("00:00"), "end": .string("24:00"), "timeZone": .string("Pacific/Auckland"), "allowMentions": .boolean(true)]),
    ]
    /// Bob's iPad runs a development build of an Expo app: `getDevicePushTokenAsync()` gives a raw APNs
    /// device token, which APNs delivers (FCM cannot).
    public static let bobsIPad = String(repeating: "0b0b1bad", count: 8)
    /// Carol's phone runs the app in Expo Go: `getExpoPushTokenAsync()` gives an Expo push token, which
    /// Expo's push service delivers. Everyone else's devices hold FCM registration tokens.
    public static let carolsPhone = "ExponentPushToken[CarolsPhoneInExpoGo01]"
    /// Everyone's password for signing in to `herald dev` as them (`alice@example.com` …): a demo's, not a secret.
    public static let password = "herald-demo"

    /// The email a person signs in with.
    public static func email(of person: Person) -> String { "\(person.id)@example.com" }

    /// What people call each device, by its token.
    public static let deviceNames = [
        "tok-alice-phone": "Alice's phone", "tok-bob-phone": "Bob's phone", bobsIPad: "Bob's iPad", carolsPhone: "Carol's phone",
        "tok-dave-phone": "Dave's phone", "tok-erin-phone": "Erin's phone",
    ]

    /// Conversation id → (members, group name or nil for 1:1).
    public static let conversations = [
        Conversation(id: "family", members: ["alice", "bob", "carol"], group: "Family"),
        Conversation(id: "alice-bob", members: ["alice", "bob"], group: nil),
        Conversation(id: "book-club", members: ["alice", "bob", "dave", "erin"], group: "Book club", mutedBy: ["dave"]),
    ]

    public static func members(of conversation: String) -> [Person] {
        let ids = conversations.first { $0.id == conversation }?.members ?? []
        return people.filter { ids.contains($0.id) }
    }

    public init(schema: Schema, project: String, database: String = "(default)") {
        self.schema = schema
        self.project = project
        self.database = database
    }

    public func name(_ path: String) throws -> DocumentName { try DocumentName(project: project, database: database, path: path) }

    /// The writes that create the world (each only if the document is not there yet).
    public func seed() throws -> [Write] { try seed(people: Self.people, conversations: Self.conversations) }

    /// The writes that create these people and conversations (each only if the document is not there yet).
    public func seed(people: [Person], conversations: [Conversation]) throws -> [Write] {
        var writes: [Write] = []
        for person in people {
            var fields: [String: FirestoreValue] = [schema.displayNameField: .string(person.name)]
            if schema.badgeCollection == nil { fields[schema.badgeField] = .integer(0) }
            if let field = schema.quietHoursField, let quietHours = person.quietHours { fields[field] = .map(quietHours) }
            let tokens = try schema.tokens.layout.seed(person.tokens, of: try name("\(schema.userCollection)/\(person.id)"), stamp: schema.tokensUpdatedAtField)
            fields.merge(tokens.userFields) { _, token in token }
            writes += tokens.writes
            writes.append(Write(.update(try name("\(schema.userCollection)/\(person.id)"), fields: fields, mask: nil), precondition: .exists(false)))
        }
        for conversation in conversations {
            var fields: [String: FirestoreValue] = [
                schema.unreadCountField: .map(Dictionary(uniqueKeysWithValues: conversation.members.map { ($0, .integer(0)) }))
            ]
            for field in schema.memberFields { fields[field] = .array(conversation.members.map { .string($0) }) }
            if let flag = schema.groupFlagField { fields[flag] = .boolean(conversation.group != nil) }
            if let typeField = schema.groupTypeField { fields[typeField] = .string(conversation.group != nil ? schema.groupTypeValue ?? "group" : "direct") }
            if let group = conversation.group { fields[schema.groupNameField] = .string(group) }
            if let field = schema.mutedUntilField, !conversation.mutedBy.isEmpty {
                fields[field] = .map(Dictionary(uniqueKeysWithValues: conversation.mutedBy.map { ($0, .boolean(true)) }))
            }
            writes.append(
                Write(.update(try name("\(schema.conversationCollection)/\(conversation.id)"), fields: fields, mask: nil), precondition: .exists(false)))
        }
        return writes
    }

    /// A new message as the app would write it.
    public func message(
        from sender: String, in conversation: String, text: String, id: String, at time: Timestamp,
        senderName: String? = nil
    ) throws -> Write {
        var path = schema.messagePattern
        let placeholders = path.split(separator: "/").filter { $0.hasPrefix("{") }
        if schema.conversationIDField == nil, let first = placeholders.first { path = path.replacing(first, with: conversation) }
        if let last = placeholders.last { path = path.replacing(last, with: id) }
        var fields: [String: FirestoreValue] = [schema.statusField: .string("sending"), schema.readByField: .array([.string(sender)])]
        // Message fields may be inside maps (`user._id`).
        for (field, value) in [
            (schema.senderIDField, FirestoreValue.string(sender)), (schema.textField, .string(text)), (schema.typeField, .string("text")),
            (schema.timestampField, schema.stored(time)),
        ] {
            Schema.set(value, field: field, in: &fields)
        }
        if let field = schema.conversationIDField { fields[field] = .string(conversation) }
        if let field = schema.senderNameField, let name = senderName ?? Self.people.first(where: { $0.id == sender })?.name {
            Schema.set(.string(name), field: field, in: &fields)
        }
        return Write(.update(try name(path), fields: fields, mask: nil), precondition: .exists(false))
    }

    /// The message a `herald send` line (`alice→family: Dinner at 6pm`) writes, with an id from its time.
    public func message(sending line: String, at date: Timestamp) throws -> (write: Write, parsed: (sender: String, conversation: String, text: String))? {
        guard let parsed = Self.parseSend(line) else { return nil }
        let write = try message(
            from: parsed.sender, in: parsed.conversation, text: parsed.text,
            id: Self.messageID(at: date), at: date)
        return (write, parsed)
    }

    /// A new message's id: its time in milliseconds, readable in a listing, and a random tail like
    /// Firestore's own ids, because two messages can be written in the same millisecond and, in a
    /// schema with one flat messages collection, would otherwise land on the same document.
    public static func messageID(at date: Timestamp) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        let tail = String((0..<8).map { _ in alphabet.randomElement()! })
        return "m-\(date.microsecondsSince1970 / 1000)-\(tail)"
    }

    /// Where a conversation's messages are: the parent and query that list them.
    public func messagesQuery(in conversation: String) throws -> (parent: DocumentName?, query: StructuredQuery) {
        let pattern = schema.messagePattern.split(separator: "/").map(String.init)
        let collection = pattern[pattern.count - 2]
        if let field = schema.conversationIDField {
            return (nil, StructuredQuery(collectionID: collection, filter: .field(FieldPath(field), .equal, .string(conversation))))
        }
        return (try name("\(schema.conversationCollection)/\(conversation)"), StructuredQuery(collectionID: collection))
    }

    /// What a reader's app writes on opening a conversation: itself into `readBy` of each message it did
    /// not send (its key with the time, where the app keeps readers as a map).
    public func reads(by reader: String, of messages: [FirestoreDocument]) -> [Write] {
        messages.filter { Schema.value(of: schema.senderIDField, in: $0)?.stringValue != reader }.map { message in
            let read =
                message[schema.readByField]?.mapValue != nil
                ? FieldTransform(FieldPath(schema.readByField, reader), .setToRequestTime)
                : FieldTransform(FieldPath(schema.readByField), .appendMissingElements([.string(reader)]))
            return Write(.transform(message.name), transforms: [read], precondition: .exists(true))
        }
    }

    /// The app's presence heartbeat: online, and the heartbeat time.
    public func heartbeat(of user: String, at time: Timestamp) throws -> Write {
        let online = schema.onlineStatusValue.map(FirestoreValue.string) ?? .boolean(true)
        return Write(
            .update(
                try name("\(schema.userCollection)/\(user)"), fields: [schema.onlineField: online, schema.heartbeatField: schema.stored(time)],
                mask: [FieldPath(schema.onlineField), FieldPath(schema.heartbeatField)]), precondition: .exists(true))
    }

    /// The app's typing indicator, when the schema keeps one.
    public func typing(_ user: String, in conversation: String, at time: Timestamp) throws -> Write? {
        guard let field = schema.typingField, let atField = schema.typingAtField else { return nil }
        return Write(
            .update(
                try name("\(schema.userCollection)/\(user)"), fields: [field: .string(conversation), atField: schema.stored(time)],
                mask: [FieldPath(field), FieldPath(atField)]), precondition: .exists(true))
    }

    /// What the app writes when `user` signs in on the device with `token`: the token joins the user's
    /// (or, for a single-token schema, replaces it).
    public func signIn(_ user: String, onDeviceWith token: String) throws -> Write {
        try schema.tokens.layout.signIn(token, of: try name("\(schema.userCollection)/\(user)"), stamp: schema.tokensUpdatedAtField)
    }

    /// Parses `bob→family` (also `bob->family`) into reader and conversation.
    public static func parseRead(_ text: String) -> (reader: String, conversation: String)? {
        let parts = text.replacing("->", with: "→").split(separator: "→", maxSplits: 1).map { $0.trimmingWhitespace }
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty, !parts[1].contains(":") else { return nil }
        return (parts[0], parts[1])
    }

    /// Parses `alice→family: Dinner at 6pm` (also `alice->family: …`) into sender, conversation and text.
    public static func parseSend(_ text: String) -> (sender: String, conversation: String, text: String)? {
        let normalized = text.replacing("->", with: "→")
        guard let arrow = normalized.firstIndex(of: "→"), let colon = normalized[arrow...].firstIndex(of: ":") else { return nil }
        let sender = normalized[..<arrow].trimmingWhitespace
        let conversation = normalized[normalized.index(after: arrow)..<colon].trimmingWhitespace
        let body = normalized[normalized.index(after: colon)...].trimmingWhitespace
        guard !sender.isEmpty, !conversation.isEmpty, !body.isEmpty else { return nil }
        return (sender, conversation, body)
    }
}
