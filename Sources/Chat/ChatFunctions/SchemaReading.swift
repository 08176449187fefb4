import FirestoreEvents
import FirestoreModel
import HeraldCore
import WireFormats

/// Reading the chat's documents through the schema: which conversation a message is in, who its
/// members are, where their user documents live, and whether it is a group.
extension Schema {
    public func conversationName(for change: DocumentChange) -> DocumentName? {
        if let field = conversationIDField {
            guard let id = (change.newDocument ?? change.oldDocument)?[field]?.stringValue, !id.isEmpty, !id.utf8.contains(UInt8(ascii: "/")) else {
                return nil
            }
            return try? change.document.sibling(path: "\(conversationCollection)/\(id)")
        }
        return change.document.parent
    }

    /// A member's user document, in the same database as the conversation.
    public func userName(_ id: String, near conversation: DocumentName) -> DocumentName? {
        try? conversation.sibling(path: "\(userCollection)/\(id)")
    }

    /// Where a user's badge is kept, from the database root: their user document, or their own document
    /// in `badgeCollection`.
    public func badgePath(of userID: String) -> String { "\(badgeCollection ?? userCollection)/\(userID)" }

    /// What to read, besides these users' documents, for their tokens.
    func tokenReads(of ids: [String], near conversation: DocumentName) -> TokenReads {
        var reads = TokenReads()
        for user in ids.compactMap({ userName($0, near: conversation) }) {
            let more = tokens.layout.reads(for: user)
            reads.documents += more.documents
            reads.collections += more.collections
            reads.lookups += more.lookups
        }
        return reads
    }

    /// Whether tokens are kept in documents of their own rather than in the user document (the daily
    /// pass queries those documents).
    var tokensOutsideTheUser: Bool { tokens.layout.documents != nil }

    /// The user's push tokens, oldest first, each once, as the user document and `read` (the token
    /// documents, for tokens kept in documents of their own) hold them.
    public func tokens(of user: FirestoreDocument, read: DocumentsRead = DocumentsRead()) -> [String] {
        TokenStore(tokens, documents: read).tokens(of: user)
    }

    /// The member ids from the first member field that lists any: each once, and only ids that can be a
    /// user's document id and a map key (`unreadCount.{id}`); any client can write the array.
    public func members(of conversation: FirestoreDocument) -> [String] { memberList(of: conversation).ids }

    /// The user ids a member (or read, or delivered) field holds: an array's strings, or a map's keys
    /// (`{uid: true}`, `{uid: {role: …}}`, `{uid: timestamp}`) but those whose value is false or null (a
    /// member who left), in key order; nil for anything else.
    public static func userIDs(in value: FirestoreValue?) -> [String]? {
        switch value {
        case .array(let items)?: items.compactMap(\.stringValue)
        case .map(let map)?: map.filter { $0.value != .boolean(false) && $0.value != .null }.keys.sorted()
        default: nil
        }
    }

    /// The members, and a warning for each listed string that cannot be a user id (left out).
    func memberList(of conversation: FirestoreDocument) -> (ids: [String], warnings: [String]) {
        for field in memberFields {
            if let ids = Self.userIDs(in: conversation[field]), !ids.isEmpty {
                // The usual case, checked cheaply: short plain ids.
                if ids.allSatisfy({
                    !$0.isEmpty && $0.utf8.count <= 128 && !$0.containsByte(UInt8(ascii: "/")) && !$0.hasPrefix("__") && $0 != "." && $0 != ".."
                }) {
                    return (ids.firstOccurrences { $0 }, [])
                }
                let usable = ids.filter(FirestoreNames.isUsableAsIDAndFieldName)
                let warnings = ids.filter { !FirestoreNames.isUsableAsIDAndFieldName($0) }.prefix(5).map { id in
                    "\(conversation.name.path) \(field) lists \(FirestoreNames.idProblem(id) ?? FirestoreNames.fieldNameProblem(id) ?? "an unusable id"): not a user id, left out"
                }
                return (usable.firstOccurrences { $0 }, warnings)
            }
        }
        return ([], [])
    }

    public func isGroup(_ conversation: FirestoreDocument) -> Bool {
        if let flag = groupFlagField, let value = conversation[flag]?.booleanValue { return value }
        if let field = groupTypeField, let value = conversation[field]?.stringValue { return value == groupTypeValue }
        return members(of: conversation).count > 2
    }
}
