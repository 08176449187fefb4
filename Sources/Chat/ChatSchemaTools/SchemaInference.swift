import ChatFunctions
import FirestoreModel
import WireFormats

/// A schema file proposed from an app's data: each key with the evidence it rests on, and each key
/// the data could not decide left out with the choices it leaves.
public struct SchemaProposal: Sendable {
    public struct Entry: Sendable {
        public var key: String
        public var value: JSONValue
        public var evidence: String
    }

    public var entries: [Entry] = []
    /// Keys left out: the reason names the choices (the default preset's value applies meanwhile).
    public var undecided: [(key: String, reason: String)] = []
    /// About the data as a whole (what was not read).
    public var notes: [String] = []

    public subscript(key: String) -> JSONValue? { entries.first { $0.key == key }?.value }

    /// The schema file, with the evidence and the open choices as `//` comments beside their keys.
    public var text: String {
        var members: [(key: String, value: JSONValue, comments: [String])] = [
            (
                "extends", "default",
                notes + ["Proposed by `herald schema infer` from your data; keys not listed keep the default preset's (`herald schema show default`)."]
            )
        ]
        for key in Schema.keys {
            if let entry = entries.first(where: { $0.key == key.name }) {
                members.append((key.name, entry.value, [entry.evidence]))
            } else if let open = undecided.first(where: { $0.key == key.name }) {
                // JSON has no comments: an undecided key is a comment member alone.
                members.append(("// \(key.name)", .string("not decided: \(open.reason)"), []))
            }
        }
        return Schema.fileText(members)
    }

    /// The proposal read back as a schema file would be, so it is checked like one.
    public func schema(name: String = "proposed") throws(SchemaError) -> Schema {
        var members: [String: JSONValue] = ["extends": "default"]
        for entry in entries { members[entry.key] = entry.value }
        return try Schema.load(name, file: .object(members))
    }
}

public struct InferenceError: Error, Sendable, CustomStringConvertible {
    public var description: String
}

/// Reads an app's layout from its documents: which arrays list user ids (members), which collection
/// holds documents whose field names a member (messages, sender), and so on, each decision taken only
/// when the data shows it in most documents (80 %), with names as a tie-breaker, never as proof alone.
public enum SchemaInference {
    public static func propose(from data: AppData) throws(InferenceError) -> SchemaProposal {
        var inferring = Inferring(data: data)
        return try inferring.run()
    }
}

struct Inferring {
    let data: AppData
    var proposal = SchemaProposal()

    // What was found, step by step.
    var users: String = ""
    var userIDs: Set<String> = []
    var conversations: AppData.GroupPath = []
    var memberFields: [String] = []
    var messages: AppData.GroupPath = []
    var conversationIDField: String?
    var senderField = ""
    var textField: String?
    var timestampField: String?
    /// The kind the app's times have (`Schema.TimeFormat.kind`): timestamps unless its data says otherwise.
    var timeKind = Schema.TimeFormat.timestamp.kind

    init(data: AppData) { self.data = data }

    /// Records a decision; one naming a field Herald cannot use (`group.name`) is left open instead, so
    /// the rest of the proposal still loads.
    /// With `path`, the value is a path into maps (`user._id`) for a key that may name one.
    mutating func decide(_ key: String, _ value: JSONValue, _ evidence: String, path: Bool = false) {
        if key.hasSuffix("Field") || key.hasSuffix("Fields") || key == "lastMessage" || key == "tokens",
            let problem = Self.strings(in: value, skipping: ["subcollection"]).lazy.compactMap({
                path ? Schema.fieldPathProblem($0) : Schema.fieldNameProblem($0)
            }).first
        {
            return leaveOpen(key, "\(evidence), but \(problem): rename the field to use it")
        }
        proposal.entries.append(.init(key: key, value: value, evidence: evidence))
    }

    static func strings(in value: JSONValue, skipping: Set<String>) -> [String] {
        switch value {
        case .string(let text): [text]
        case .array(let items): items.flatMap { strings(in: $0, skipping: skipping) }
        case .object(let members): members.filter { !skipping.contains($0.key) }.flatMap { strings(in: $0.value, skipping: skipping) }
        default: []
        }
    }

    mutating func leaveOpen(_ key: String, _ reason: String) { proposal.undecided.append((key, reason)) }

    static func mostly(_ count: Int, of total: Int) -> Bool { total > 0 && count * 5 >= total * 4 }

    mutating func run() throws(InferenceError) -> SchemaProposal {
        proposal.notes = data.limits
        guard data.documentsKept > 0 else {
            throw InferenceError(
                description:
                    "the data holds no documents: there is nothing to infer a schema from (export data your app wrote, or point --from at a Firestore that holds some)"
            )
        }
        try findMembers()
        try findMessages()
        findTimeFormat()
        messageFields()
        conversationFields()
        userFields()
        return proposal
    }

    func members(of conversation: FirestoreDocument) -> [String] {
        for field in memberFields {
            if let ids = Schema.userIDs(in: conversation[field]), !ids.isEmpty { return ids }
        }
        return []
    }

    /// Conversations: documents with arrays whose strings are ids of one top-level collection's documents (the users).
    mutating func findMembers() throws(InferenceError) {
        // Which top-level collections hold a document of each id: one pass, so thousands of collections stay cheap.
        var holders: [String: [String]] = [:]
        for path in data.groups.keys where path.count == 1 {
            for document in data.documents(in: path) { holders[document.name.documentID, default: []].append(path[0]) }
        }
        // Arrays of ids first; maps keyed by them only where no array lists members (a map of ids may as
        // well be who muted, typed or read: only `{uid: true}` or `{uid: {…}}` maps are taken).
        var found: (best: MemberLists, maps: Bool)?
        for maps in [false, true] where found == nil {
            found = bestMembers(holders: holders, maps: maps).map { ($0, maps) }
        }
        guard let (best, maps) = found else {
            throw InferenceError(
                description:
                    "found no conversations: no collection holds arrays (or maps keyed by) two or more ids of another collection's documents (the members, e.g. participantIds: [\"u1\", \"u2\"] with users/u1 and users/u2). Looked at \(data.groups.count) collections: \(data.groups.keys.map(AppData.describe).sorted().prefix(12).joined(separator: ", "))"
            )
        }
        users = best.users
        userIDs = data.ids(of: users)
        conversations = best.conversations
        memberFields = best.fields.map(\.0)
        let noun = best.conversations.last!
        decide("userCollection", .string(users), "\(users): its document ids are the ids conversations list as members")
        decide(
            "memberFields", .array(memberFields.map(JSONValue.string)),
            best.fields.map { field, count in
                "\(field): \(maps ? "map keyed by user ids" : "array of user ids") (\(users)/…) in \(count) of \(best.total) \(noun)"
            }
            .joined(separator: "; "))
    }

    /// A collection whose documents list members (ids of `users` documents) in `fields`, with how many list them.
    typealias MemberLists = (conversations: AppData.GroupPath, users: String, fields: [(String, Int)], total: Int, score: Int)

    /// The collection whose documents list members of another collection (the users) in most documents, with those fields.
    func bestMembers(holders: [String: [String]], maps: Bool) -> MemberLists? {
        func ids(_ value: FirestoreValue?) -> [String]? {
            guard maps else { return value?.arrayValue?.compactMap(\.stringValue) }
            guard let map = value?.mapValue, map.values.allSatisfy({ $0.booleanValue != nil || $0 == .null || $0.mapValue != nil }) else { return nil }
            return Schema.userIDs(in: value)
        }
        var best: MemberLists?
        for path in data.groups.keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            let documents = data.documents(in: path)
            let profiles = FieldProfile.profiles(of: documents).values.filter { maps ? $0.count("map") > 0 : $0.stringArrays > 0 }
            guard !profiles.isEmpty else { continue }
            // For each field, each document's lists of two or more ids that are all documents of one collection.
            var listing: [String: [String: Set<Int>]] = [:]  // collection → field → documents
            for (index, document) in documents.enumerated() {
                for profile in profiles {
                    guard let items = ids(document[profile.name]), items.count >= 2,
                        var common = holders[items[0]].map(Set.init)
                    else { continue }
                    for item in items.dropFirst() where !common.isEmpty { common.formIntersection(holders[item] ?? []) }
                    for collection in common where [collection] != path { listing[collection, default: [:]][profile.name, default: []].insert(index) }
                }
            }
            for (collection, fields) in listing.sorted(by: { $0.key < $1.key }) {
                // Fields that, where present, mostly list members; together in at least half the documents.
                let usable = fields.filter { field, hits in
                    Self.mostly(hits.count, of: profiles.first { $0.name == field }?.present ?? 0)
                }
                let covered = usable.values.reduce(into: Set<Int>()) { $0.formUnion($1) }.count
                guard covered * 2 >= documents.count else { continue }
                // Two collections holding a document per user (users and a status/{uid} beside them): the
                // one named like users, else the one whose documents say more.
                let better =
                    covered > best?.score ?? 0
                    || (covered == best?.score && path == best?.conversations && best.map { userLikeness(collection) > userLikeness($0.users) } == true)
                guard better else { continue }
                best = (
                    path, collection, usable.map { ($0.key, $0.value.count) }.sorted { $0.1 != $1.1 ? $0.1 > $1.1 : $0.0 < $1.0 }, documents.count,
                    covered
                )
            }
        }
        return best
    }

    /// How much a top-level collection looks like the users': named so, then fields per document.
    func userLikeness(_ collection: String) -> (Int, Int) {
        let documents = data.documents(in: [collection])
        let fields = documents.reduce(0) { $0 + $1.fields.count }
        return (Looks.named(collection, "user", "profile", "account", "member", "people", "person") ? 1 : 0, fields / max(documents.count, 1))
    }

    /// Messages: a collection under each conversation (or a top-level one naming its conversation) whose
    /// documents name a member of their conversation: the sender.
    mutating func findMessages() throws(InferenceError) {
        let conversationIDs = Set(data.documents(in: conversations).map(\.name.documentID))
        var best: (path: AppData.GroupPath, link: String?, sender: String, hits: Int, total: Int)?
        for path in data.groups.keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) where path != conversations && path != [users] {
            let nested = path.count == conversations.count + 1 && Array(path.dropLast()) == conversations
            let documents = data.documents(in: path)
            let profiles = FieldProfile.profiles(of: documents)
            var link: String?
            if !nested {
                guard path.count == 1, conversations.count == 1 else { continue }
                // A top-level collection whose documents name a conversation by id.
                link =
                    profiles.values.filter { profile in
                        profile.count("string") > 0
                            && Self.mostly(documents.filter { $0[profile.name]?.stringValue.map(conversationIDs.contains) ?? false }.count, of: documents.count)
                    }.map(\.name).sorted().first
                guard link != nil else { continue }
            }
            // Each message's conversation's members once, not once per field (a channel of thousands).
            var byConversation: [DocumentName: Set<String>] = [:]
            let memberSets = documents.map { message -> Set<String>? in
                guard let conversation = conversation(of: message, link: link) else { return nil }
                if let known = byConversation[conversation.name] { return known }
                let members = Set(members(of: conversation))
                byConversation[conversation.name] = members
                return members
            }
            // Top-level strings, and strings one map down (react-native-gifted-chat's `user: {_id, name}`).
            let topLevel = profiles.values.filter { $0.name != link && $0.count("string") > 0 }.map { [$0.name] }
            for field in (topLevel + Self.nestedStrings(in: documents, profiles: profiles)).sorted(by: { $0.lexicographicallyPrecedes($1) }) {
                let hits = zip(documents, memberSets).filter { message, members in
                    guard let sender = FieldPath.value(in: message.fields, at: field[...])?.stringValue, let members else { return false }
                    return members.contains(sender)
                }.count
                guard Self.mostly(hits, of: documents.count) else { continue }
                // A top-level name holding a dot is written as a path of one segment (`` `from.id` ``).
                let name = field.count == 1 && Schema.path(of: field[0]) == field ? field[0] : FieldPath(field).description
                // In a two-member chat the recipient is a member too: the name decides (fromUserId, not toUserId).
                let better =
                    hits > best?.hits ?? 0
                    || (hits == best?.hits && path == best?.path && best.map { Looks.senderLikeness(name) > Looks.senderLikeness($0.sender) } == true)
                if better { best = (path, link, name, hits, documents.count) }
            }
        }
        guard let best else {
            throw InferenceError(
                description:
                    "found conversations (\(AppData.describe(conversations)), members in \(memberFields.joined(separator: ", "))) but no messages: no collection under them (or top-level, naming a conversation) holds documents whose field names a member of their conversation"
            )
        }
        messages = best.path
        conversationIDField = best.link
        senderField = best.sender
        let pattern = zip(best.path, Self.wildcards(for: best.path)).map { "\($0)/{\($1)}" }.joined(separator: "/")
        let noun = best.path.last!
        decide(
            "messagePattern", .string(pattern),
            "\(data.seenPerGroup[best.path] ?? 0) documents in \(AppData.describe(best.path)) name a member of their conversation")
        if let link = best.link {
            decide("conversationIDField", .string(link), "\(link): the id of a \(conversations[0]) document in most \(noun)")
        }
        decide("conversationCollection", .string(conversations.last!), "the parent of \(noun): its documents list the members")
        decide(
            "senderIDField", .string(best.sender), "\(best.sender): a member of its conversation in \(best.hits) of \(best.total) \(noun)",
            path: Schema.path(of: best.sender) != [best.sender])
    }

    /// The string fields inside maps that most documents hold, as paths (`["user", "_id"]`): a map keyed
    /// by ids (`reactions: {uid: "👍"}`) gives no candidates, however many keys it has. With `map`, every
    /// string field found inside that map, in any number of documents.
    static func nestedStrings(in documents: [FirestoreDocument], profiles: [String: FieldProfile], map: String? = nil) -> [[String]] {
        var counts: [[String]: Int] = [:]
        for profile in profiles.values where map.map({ $0 == profile.name }) ?? mostly(profile.count("map"), of: documents.count) {
            for document in documents {
                for (key, value) in document[profile.name]?.mapValue ?? [:] where value.stringValue != nil { counts[[profile.name, key], default: 0] += 1 }
            }
        }
        return counts.filter { map != nil || mostly($0.value, of: documents.count) }.map(\.key)
    }

    func conversation(of message: FirestoreDocument, link: String?) -> FirestoreDocument? {
        if let link {
            guard let id = message[link]?.stringValue, !id.isEmpty, !id.contains("/"),
                let name = try? message.name.sibling(path: "\(conversations[0])/\(id)")
            else { return nil }
            return data.document(name)
        }
        return message.name.parent.flatMap(data.document)
    }

    static func wildcards(for collections: [String]) -> [String] {
        var used: Set<String> = []
        return collections.map { collection in
            var name = Looks.wildcard(for: collection)
            var index = 2
            while !used.insert(name).inserted {
                name = Looks.wildcard(for: collection) + "\(index)"
                index += 1
            }
            return name
        }
    }
}
