import ChatFunctions
import FirestoreEvents
import FirestoreModel
import HeraldCore
import PushTokens

/// `herald schema check`: how an app's documents fit a schema. Every document that does not (a missing
/// field, a wrong type, a member without a user document) is named by path, and onMessageCreated runs
/// in dry run on the newest messages to show the pushes and writes it would make.
public struct SchemaFitReport: Sendable {
    public struct Misfit: Sendable, Hashable {
        public var path: String
        public var problem: String
    }

    /// One message run in dry run: what onMessageCreated would do about it as a new message.
    public struct Outcome: Sendable {
        public var path: String
        public var skipped: String?
        public var pushes: [String]
        public var writes: [String]
    }

    public var counts: [String] = []
    public var notes: [String] = []
    public var misfits: [Misfit] = []
    public var outcomes: [Outcome] = []

    public var text: String {
        var lines = ["read " + counts.joined(separator: ", ")] + notes.map { "note: \($0)" }
        if misfits.isEmpty {
            lines.append("every document read fits the schema")
        } else {
            lines.append("\(misfits.count) misfit\(misfits.count == 1 ? "" : "s"):")
            lines += misfits.prefix(SchemaFit.misfitsShown).map { "  \($0.path): \($0.problem)" }
            if misfits.count > SchemaFit.misfitsShown { lines.append("  … and \(misfits.count - SchemaFit.misfitsShown) more") }
        }
        lines.append(
            "onMessageCreated, dry run on the \(outcomes.count) newest message\(outcomes.count == 1 ? "" : "s") (as if each were new; nothing is written or sent):"
        )
        for outcome in outcomes {
            if let reason = outcome.skipped {
                lines.append("  \(outcome.path): skipped: \(reason)")
                continue
            }
            lines.append("  \(outcome.path):")
            lines += outcome.pushes.map { "    push \($0)" } + outcome.writes.map { "    write \($0)" }
            if outcome.pushes.isEmpty { lines.append("    no push (no recipient has a device, or all are viewing it)") }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

public enum SchemaFit {
    static let misfitsShown = 200

    public static func check(_ schema: Schema, against data: AppData, newestMessages: Int = 10) -> SchemaFitReport {
        var check = Checking(schema: schema, data: data)
        return check.run(newest: newestMessages)
    }
}

struct Checking {
    let schema: Schema
    let data: AppData
    var report = SchemaFitReport()
    /// Each conversation's members, once (a channel of thousands is checked with each of its messages).
    var memberSets: [DocumentName: Set<String>] = [:]

    init(schema: Schema, data: AppData) {
        self.schema = schema
        self.data = data
    }

    var messageGroup: AppData.GroupPath {
        let segments = schema.messagePattern.split(separator: "/").map(String.init)
        return stride(from: 0, to: segments.count, by: 2).map { segments[$0] }
    }
    var conversationGroup: AppData.GroupPath { messageGroup.count == 1 ? [schema.conversationCollection] : Array(messageGroup.dropLast()) }

    mutating func misfit(_ document: FirestoreDocument, _ problem: String) { report.misfits.append(.init(path: document.name.path, problem: problem)) }

    func kind(_ value: FirestoreValue?) -> String { value.map(FieldProfile.kind) ?? "missing" }

    mutating func run(newest: Int) -> SchemaFitReport {
        let trigger = Trigger(pattern: schema.messagePattern, kinds: [.created])
        let messages = data.documents(in: messageGroup).filter { trigger.match($0.name) != nil }
        let conversations = data.documents(in: conversationGroup)
        let users = data.documents(in: [schema.userCollection])
        report.counts = [
            "\(conversations.count) \(AppData.describe(conversationGroup))", "\(messages.count) \(AppData.describe(messageGroup))",
            "\(users.count) \(schema.userCollection)",
        ]
        report.notes = data.limits
        for (path, noun) in [(conversationGroup, "conversations"), (messageGroup, "messages"), ([schema.userCollection], "users")]
        where data.documents(in: path).isEmpty {
            let others = data.groups.keys.map(AppData.describe).sorted().prefix(8).joined(separator: ", ")
            report.notes.append(
                "no \(noun) at \(AppData.describe(path)): the schema names a collection the data does not have (it has \(others.isEmpty ? "no documents" : others))"
            )
        }
        let holdingBadges = users.filter { $0[schema.badgeField] != nil }.count
        if let collection = schema.badgeCollection, holdingBadges > 0 {
            report.notes.append(
                "\(holdingBadges) of \(users.count) \(schema.userCollection) hold \(schema.badgeField): the badge is kept in \(collection)/{userId}, and each moves there with the user's next count (docs/schema.md, where the badge lives)"
            )
        }
        let userIDs = Set(users.map(\.name.documentID))
        for conversation in conversations { check(conversation: conversation, userIDs: userIDs) }
        for message in messages { check(message: message) }
        for user in users { check(user: user) }
        let held = users.flatMap { tokens(of: $0) }
        if !held.isEmpty { report.notes.append("push tokens held by the \(schema.userCollection):\(Looks.kinds(held))") }
        if let documents = schema.tokens.layout.documents {
            let all = documents.underUsers ? data.documents(in: [schema.userCollection, documents.collection]) : data.documents(in: [documents.collection])
            report.notes += schema.tokens.layout.notes(onAll: all, userIDs: userIDs)
        }
        dryRun(messages, newest: newest)
        return report
    }

    mutating func check(conversation: FirestoreDocument, userIDs: Set<String>) {
        let members = schema.members(of: conversation)
        if members.isEmpty {
            let held = schema.memberFields.map { field in
                Schema.userIDs(in: conversation[field])?.isEmpty == true
                    ? "\(field) is an empty \(kind(conversation[field]))" : "\(field) is \(kind(conversation[field]))"
            }.joined(separator: ", ")
            misfit(conversation, "no member list: \(held) (an array of user ids, or a map keyed by them, is needed)")
        }
        let usersComplete = data.isComplete([schema.userCollection])
        for member in members where !userIDs.contains(member) {
            misfit(conversation, "member \(member) has no user document \(schema.userCollection)/\(member)\(usersComplete ? "" : " among those read")")
        }
        if let value = conversation[schema.unreadCountField], value.mapValue == nil {
            misfit(conversation, "\(schema.unreadCountField) is \(kind(value)); Herald keeps a map of member id → unread count there")
        }
        if let flag = schema.groupFlagField, let value = conversation[flag], value.booleanValue == nil {
            misfit(conversation, "\(flag) is \(kind(value)), not a boolean: the group flag is ignored")
        }
        if schema.isGroup(conversation), let value = conversation[schema.groupNameField], value.stringValue == nil {
            misfit(conversation, "\(schema.groupNameField) is \(kind(value)), not a string: alerts say \"Group Chat\"")
        }
        if case .map(let field) = schema.lastMessage, let value = conversation[field], value.mapValue == nil {
            misfit(conversation, "\(field) is \(kind(value)); Herald writes the last message there as a map")
        }
        // A client ordering conversations by it would see Herald's times apart from its own values
        // (Firestore orders a field's values by type first).
        var times = [schema.updatedAtField]
        if case .flat(_, _, _, let timestamp) = schema.lastMessage { times.append(timestamp) }
        for field in Set(times.compactMap { $0 }).sorted() {
            if let value = conversation[field], kind(value) != schema.timeFormat.kind {
                misfit(
                    conversation,
                    "\(field) is \(kind(value)), not \(schema.timeFormat.described): Herald writes the newest message's time over it so (key timeFormat)"
                )
            }
        }
    }

    mutating func check(message: FirestoreDocument) {
        let change = DocumentChange(eventID: "check", kind: .created, time: Timestamp.now(), document: message.name, newDocument: message)
        guard let conversationName = schema.conversationName(for: change) else {
            misfit(
                message,
                "\(schema.conversationIDField ?? "conversation id") is \(kind(schema.conversationIDField.flatMap { message[$0] })): its conversation is unknown"
            )
            return
        }
        guard let conversation = data.document(conversationName) else {
            misfit(message, "its conversation \(conversationName.path) does not exist\(data.isComplete(conversationGroup) ? "" : " among those read")")
            return
        }
        switch Schema.value(of: schema.senderIDField, in: message) {
        case .string(let sender)? where !sender.isEmpty:
            // A conversation without a member list is named once, not with each of its messages.
            let members = memberSets[conversation.name] ?? Set(schema.members(of: conversation))
            memberSets[conversation.name] = members
            if !members.isEmpty && !members.contains(sender) {
                misfit(message, "sender \(sender) (\(schema.senderIDField)) is not a member of \(conversationName.path): no push would go out")
            }
        case let value: misfit(message, "\(schema.senderIDField) is \(kind(value)); the sender's user id (a string) is needed")
        }
        if let value = message[schema.statusField], !(value.stringValue.map(Looks.statuses.contains) ?? false) {
            misfit(
                message,
                "\(schema.statusField) is \(kind(value) == "string" ? FirestoreNames.quoted(value.stringValue ?? "") : kind(value)): Herald writes sent, delivered and read over it"
            )
        }
        for (field, expected, described) in [
            (schema.textField, "string", "a string"), (schema.timestampField, schema.timeFormat.kind, schema.timeFormat.described),
        ] {
            // A timestamp is read under any format.
            if let value = Schema.value(of: field, in: message), kind(value) != expected, field == schema.textField || value.timestampValue == nil {
                misfit(message, "\(field) is \(kind(value)), not \(described)")
            }
        }
        for field in [schema.readByField, schema.deliveredToField].compactMap({ $0 }) {
            if let value = message[field], Schema.userIDs(in: value) == nil {
                misfit(message, "\(field) is \(kind(value)), not an array of user ids (or a map keyed by them)")
            }
        }
    }

    mutating func check(user: FirestoreDocument) {
        // Kept apart, the badge still starts from what the user document holds (it moves on the first count).
        if let value = user[schema.badgeField], value.integerValue == nil {
            misfit(user, "\(schema.badgeField) is \(kind(value)), not an integer: Herald counts the badge from 0")
        }
        for field in [schema.displayNameField, schema.familyNameField].compactMap({ $0 }) {
            if let value = user[field], value.stringValue == nil { misfit(user, "\(field) is \(kind(value)), not a string") }
        }
        // presenceSweeper's query finds only values of the schema's kind (Firestore compares within a type).
        if let value = user[schema.heartbeatField], kind(value) != schema.timeFormat.kind {
            misfit(user, "\(schema.heartbeatField) is \(kind(value)), not \(schema.timeFormat.described): presence never expires (key timeFormat)")
        }
        let expected = schema.onlineStatusValue == nil ? "boolean" : "string"
        if let value = user[schema.onlineField], kind(value) != expected { misfit(user, "\(schema.onlineField) is \(kind(value)), not a \(expected)") }
        for misfit in schema.tokens.layout.misfits(of: user, tokenDocuments: tokenDocuments(of: user.name), kind: kind) {
            self.misfit(misfit.document, misfit.problem)
        }
        let held = tokens(of: user)
        if held.isEmpty { misfit(user, "no push token (\(tokenPlace)): no push reaches this user") }
        for token in held {
            if case .malformed(let reason) = PushToken.classify(token) {
                misfit(user, "\(tokenPlace) holds \(reason), no service's token: tokenCleanup removes it")
            }
        }
        if held.contains(user.name.documentID) {
            misfit(user, "\(tokenPlace) holds the user's own id, not a token: FCM refuses it, and removing a dead token would delete it")
        }
    }

    var tokenPlace: String { schema.tokens.layout.place(in: schema) }

    /// What the user's tokens need read, besides their document, found in the data.
    func tokenReads(of user: DocumentName) -> DocumentsRead {
        let reads = schema.tokens.layout.reads(for: user)
        var read = DocumentsRead()
        for name in reads.documents { if let document = data.document(name) { read.found[name] = document } }
        for collection in reads.collections {
            read.collections[collection] = data.documents(in: [schema.userCollection, collection.collectionID]).filter { $0.name.parent == collection.parent }
        }
        for lookup in reads.lookups { read.lookups[lookup] = data.documents(in: [lookup.collectionID]).filter(lookup.matches) }
        return read
    }

    func tokenDocuments(of user: DocumentName) -> [FirestoreDocument] {
        let read = tokenReads(of: user)
        return (Array(read.found.values) + read.collections.values.joined() + read.lookups.values.joined()).sorted { $0.name < $1.name }
    }

    func tokens(of user: FirestoreDocument) -> [String] { schema.tokens(of: user, read: tokenReads(of: user.name)) }

    /// onMessageCreated on the newest messages, each from the documents it would read.
    mutating func dryRun(_ messages: [FirestoreDocument], newest: Int) {
        let function = OnMessageCreated(schema: schema)
        func sentAt(_ message: FirestoreDocument) -> Timestamp {
            schema.time(Schema.value(of: schema.timestampField, in: message)) ?? message.createTime ?? .distantPast
        }
        let chosen = messages.sorted { sentAt($0) != sentAt($1) ? sentAt($0) > sentAt($1) : $0.name < $1.name }.prefix(newest)
        for message in chosen {
            let change = DocumentChange(
                eventID: "check", kind: .created, time: message.createTime ?? sentAt(message), document: message.name, newDocument: message)
            var world = [message]
            if let name = schema.conversationName(for: change), let conversation = data.document(name) {
                world.append(conversation)
                for member in schema.members(of: conversation) {
                    guard let userName = schema.userName(member, near: name), let user = data.document(userName) else { continue }
                    world.append(user)
                    world += tokenDocuments(of: userName)
                }
            }
            let plan = function.plan(for: change, from: world).plan
            switch plan.decision {
            case .skip(let reason), .skipUnlessStarted(let reason):
                report.outcomes.append(.init(path: message.name.path, skipped: reason, pushes: [], writes: []))
            case .apply:
                report.outcomes.append(
                    .init(
                        path: message.name.path, skipped: nil, pushes: plan.pushes.map(Self.describe(push:)),
                        writes: Write.merging(plan.allWrites).map(Self.describe(write:))))
            }
        }
    }

    static func describe(push: PushMessage) -> String {
        let token = push.token.count > 16 ? "\(push.token.prefix(12))…" : push.token
        let badge = push.fcm.apns?.badge.map { " badge \($0)" } ?? ""
        guard let notification = push.fcm.notification else { return "to \(push.userID) on \(token): silent\(badge)" }
        let shown = [notification.title, notification.body].compactMap { $0 }.map { "\"\($0)\"" }.joined(separator: " / ")
        return "to \(push.userID) on \(token): \(shown)\(badge)"
    }

    static func describe(write: Write) -> String {
        var parts: [String] = []
        if case .update(_, let fields, let mask) = write.operation {
            let paths = mask ?? fields.keys.sorted().map { FieldPath($0) }
            // A masked field absent from the fields is deleted (a badge moving out of the user document);
            // a masked path into a map (`heraldUnread.u1`) is found in its map.
            if !paths.isEmpty {
                parts.append(
                    paths.map { path in
                        FieldPath.value(in: fields, at: path.segments[...]).map { "\(path) = \(Self.short($0))" } ?? "\(path) deleted"
                    }.joined(separator: ", "))
            }
        }
        for transform in write.transforms {
            switch transform.operation {
            case .increment(let value): parts.append("\(transform.field) +\(Self.short(value))")
            case .maximum, .minimum: continue
            default: parts.append("\(transform.field) (transform)")
            }
        }
        return "\(write.document.path): \(parts.joined(separator: "; "))"
    }

    static func short(_ value: FirestoreValue) -> String {
        switch value {
        case .string(let text): "\"\(text.count > 40 ? text.prefix(40) + "…" : text)\""
        case .integer(let number): "\(number)"
        case .timestamp(let time): time.rfc3339
        case .boolean(let flag): "\(flag)"
        case .map(let members): "{" + members.keys.sorted().joined(separator: ", ") + "}"
        default: FieldProfile.kind(value)
        }
    }
}
