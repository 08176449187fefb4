import FirestoreModel
import WireFormats

/// The checks of a schema file's values: what Firestore and Eventarc accept, and what Herald can read
/// and write. Each problem names its key.
enum SchemaCheck {
    /// A top-level field name Herald reads and writes: a Firestore field name without dots or backticks
    /// (Herald's fields are top-level; a nested path `a.b` would be read as a field named "a.b").
    /// With `nested`, a field path into maps (`user._id`, ``user.`first.name` ``) is taken too.
    static func field(_ json: JSONValue, key: String, orNull: Bool = false, nested: Bool = false) throws(SchemaError) -> String {
        guard let name = json.stringValue else {
            throw SchemaError("key \"\(key)\" must be a field name (a string)\(orNull ? " or null" : "")")
        }
        if let problem = nested ? pathProblem(name) : fieldProblem(name) { throw SchemaError("key \"\(key)\": \(problem)") }
        return name
    }

    /// Why `text` is no field path Herald can read (nil if it is): Firestore's path syntax, each segment a field name.
    static func pathProblem(_ text: String) -> String? {
        guard text.contains(".") || text.contains("`") else { return fieldProblem(text) }
        guard text.utf8.count <= FirestoreNames.maximumBytes, let path = try? FieldPath(parsing: text) else {
            return "\(FirestoreNames.quoted(text)) is not a field path (`user._id`, with backticks around a name holding a dot)"
        }
        guard path.segments.count <= 20 else { return "\(FirestoreNames.quoted(text)) is \(path.segments.count) maps deep; Firestore allows 20" }
        for segment in path.segments {
            if let problem = FirestoreNames.fieldNameProblem(segment) { return "\(FirestoreNames.quoted(text)): \(problem)" }
            if hasInvisibleCharacters(segment) { return "\(FirestoreNames.quoted(text)) holds control or invisible characters" }
        }
        return nil
    }

    static func fieldProblem(_ name: String) -> String? {
        if let problem = FirestoreNames.fieldNameProblem(name) { return problem }
        if name.contains(".") || name.contains("`") {
            return
                "\(FirestoreNames.quoted(name)) is not a field name: Herald writes top-level fields, so no dots or backticks (only message fields Herald reads may be inside a map)"
        }
        if hasInvisibleCharacters(name) { return "\(FirestoreNames.quoted(name)) holds control or invisible characters" }
        return nil
    }

    static func hasInvisibleCharacters(_ name: String) -> Bool {
        name.unicodeScalars.contains { $0.properties.generalCategory == .control || $0.properties.generalCategory == .format }
    }

    /// A top-level collection id.
    static func collection(_ json: JSONValue, key: String, orNull: Bool = false) throws(SchemaError) -> String {
        guard let id = json.stringValue else { throw SchemaError("key \"\(key)\" must be a collection id (a string)\(orNull ? " or null" : "")") }
        if let problem = collectionProblem(id) { throw SchemaError("key \"\(key)\": \(problem)") }
        return id
    }

    static func collectionProblem(_ id: String) -> String? {
        if id.contains("/") { return "\(FirestoreNames.quoted(id)) holds a slash: it must be a top-level collection id" }
        if let problem = FirestoreNames.idProblem(id) { return problem }
        if id.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) { return "\(FirestoreNames.quoted(id)) holds control characters" }
        return nil
    }

    /// A document pattern as Eventarc takes it: collection ids and `{wildcard}` document ids in turn,
    /// ending with a document wildcard; each wildcard named once.
    static func pattern(_ json: JSONValue, key: String) throws(SchemaError) -> String {
        guard let text = json.stringValue else { throw SchemaError("key \"\(key)\" must be a document pattern (a string)") }
        if let problem = patternProblem(text) { throw SchemaError("key \"\(key)\": \(problem)") }
        return text
    }

    static func patternProblem(_ text: String) -> String? {
        let example = "a document pattern like rooms/{roomId}/posts/{postId}"
        guard text.utf8.count <= SchemaFile.maximumPatternBytes else {
            return "a pattern of \(text.utf8.count) bytes; a document name is at most \(SchemaFile.maximumPatternBytes)"
        }
        let segments = text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard segments.count % 2 == 0 else {
            return "\(FirestoreNames.quoted(text)) is not \(example): it has \(segments.count) segments, a document path has an even number"
        }
        guard segments.count <= 200 else {
            return "\(FirestoreNames.quoted(text)) has \(segments.count) segments; a document path has at most 200"
        }
        var wildcards = Set<String>()
        for (index, segment) in segments.enumerated() {
            if segment.isEmpty { return "\(FirestoreNames.quoted(text)) has an empty segment" }
            if segment.hasPrefix("{") || segment.hasSuffix("}") {
                let name = String(segment.dropFirst().dropLast())
                guard segment.hasPrefix("{"), segment.hasSuffix("}"), !name.isEmpty,
                    name.utf8.allSatisfy({ $0 == UInt8(ascii: "_") || (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) })
                else { return "\(FirestoreNames.quoted(segment)) is not a wildcard: use {name} with letters, digits and _" }
                guard index % 2 == 1 else {
                    return "\(FirestoreNames.quoted(segment)) stands for a collection: Herald needs the collections named (\(example))"
                }
                guard wildcards.insert(name).inserted else { return "wildcard {\(name)} appears twice in \(FirestoreNames.quoted(text))" }
            } else {
                if let problem = collectionProblem(segment) { return problem }
                if segment.contains("{") || segment.contains("}") { return "\(FirestoreNames.quoted(segment)) mixes a wildcard with text" }
            }
        }
        guard segments.last?.hasPrefix("{") == true else { return "\(FirestoreNames.quoted(text)) must end with a {wildcard}: \(example)" }
        return nil
    }
}

extension Schema {
    /// The collection holding a nested message pattern's parent document (the conversation), or nil for
    /// a top-level message collection.
    var messageParentCollection: String? {
        let segments = messagePattern.split(separator: "/", omittingEmptySubsequences: false)
        return segments.count >= 4 ? String(segments[segments.count - 4]) : nil
    }

    /// What must hold between the keys: checked after a file is read, and for every preset by a test.
    func validate() throws(SchemaError) {
        let segments = messagePattern.split(separator: "/", omittingEmptySubsequences: false)
        if segments.count == 2 && conversationIDField == nil {
            throw SchemaError("key \"conversationIDField\" is needed when messages are a top-level collection (\(messagePattern))")
        }
        if segments.count >= 4, let field = conversationIDField {
            throw SchemaError(
                "key \"conversationIDField\" is \"\(field)\" but messages (\(messagePattern)) are under their conversation: it is for top-level message collections only (set it to null)"
            )
        }
        if segments.count == 2 && segments[0] == Substring(userCollection) {
            throw SchemaError(
                "keys \"messagePattern\" and \"userCollection\" name the same collection \"\(userCollection)\": a user and a message would be one document")
        }
        if let parent = messageParentCollection, parent != conversationCollection {
            throw SchemaError(
                "key \"conversationCollection\" is \"\(conversationCollection)\" but messages (\(messagePattern)) are under \"\(parent)\": a message's conversation is its parent document"
            )
        }
        if segments.count == 2 && segments[0] == Substring(conversationCollection) {
            throw SchemaError("keys \"messagePattern\" and \"conversationCollection\" name the same collection \"\(conversationCollection)\"")
        }
        if userCollection == conversationCollection {
            throw SchemaError(
                "keys \"userCollection\" and \"conversationCollection\" name the same collection \"\(userCollection)\": a user and a conversation would be one document"
            )
        }
        if let badges = badgeCollection,
            badges == userCollection || badges == conversationCollection || (segments.count == 2 && segments[0] == Substring(badges))
        {
            throw SchemaError("key \"badgeCollection\" names \"\(badges)\", the collection of other documents: the badges need a collection of their own")
        }
        if let problem = tokens.layout.problem(in: self) { throw SchemaError(problem) }
        if (onlineStatusValue == nil) != (offlineStatusValue == nil) {
            throw SchemaError("keys \"onlineStatusValue\" and \"offlineStatusValue\" go together: set both for a string status field, or neither for a boolean")
        }
        if let online = onlineStatusValue, online == offlineStatusValue {
            throw SchemaError("keys \"onlineStatusValue\" and \"offlineStatusValue\" are both \"\(online)\"")
        }
        if groupTypeField != nil && groupTypeValue == nil {
            throw SchemaError("key \"groupTypeField\" needs \"groupTypeValue\": the value that marks a group")
        }
        if let value = groupTypeValue, groupTypeField == nil {
            throw SchemaError("key \"groupTypeValue\" is \"\(value)\" but no \"groupTypeField\" names the field it is the value of")
        }
        for place in [SchemaKey.Place.message, .conversation, .user] {
            var owners: [[String]: String] = [:]
            for (key, field) in fieldNames(in: place) {
                let path = Schema.path(of: field)
                if let other = owners[path] {
                    throw SchemaError("keys \"\(other)\" and \"\(key)\" both name the \(place.rawValue) field \"\(field)\": each must have its own")
                }
                // A path inside another key's field (`user` and `user._id`): one of them would read or write over the other.
                if let (outer, other) = owners.sorted(by: { $0.value < $1.value }).first(where: { $0.key.starts(with: path) || path.starts(with: $0.key) }) {
                    let (inside, around) = outer.count > path.count ? (other, key) : (key, other)
                    throw SchemaError(
                        "keys \"\(inside)\" and \"\(around)\" overlap: the \(place.rawValue) field \"\(inside)\" names is inside the one \"\(around)\" names")
                }
                owners[path] = key
            }
        }
    }

    /// Every field the keys name in one kind of document, with the key that names it (member fields each once).
    func fieldNames(in place: SchemaKey.Place) -> [(key: String, field: String)] {
        var names: [(String, String)] = []
        for key in Self.keys where key.place == place {
            switch key.value {
            case .field(let path): names.append((key.name, self[keyPath: path]))
            case .optionalField(let path): if let field = self[keyPath: path] { names.append((key.name, field)) }
            case .fields(let path): names += self[keyPath: path].firstOccurrences { $0 }.map { (key.name, $0) }
            case .lastMessage:
                switch lastMessage {
                case .map(let field): names.append(("lastMessage", field))
                case .flat(let text, let senderID, let senderName, let timestamp):
                    names += [text, senderID, senderName, timestamp].compactMap { $0 }.map { ("lastMessage", $0) }
                }
            case .tokens:
                if let field = tokens.layout.userDocumentField { names.append(("tokens", field)) }
            case .mediaFields: names += mediaFields.keys.sorted().map { ("mediaFields", $0) }
            case .pattern, .collection, .optionalCollection, .optionalText, .notificationText, .timeFormat: break
            }
        }
        return names
    }
}

extension Schema {
    /// Why `name` cannot be a field of a schema (nil if it can), for tools that propose one.
    public static func fieldNameProblem(_ name: String) -> String? { SchemaCheck.fieldProblem(name) }
    /// Why `text` cannot be a path into maps for a key that may name one (`SchemaKey.mayBeNested`), nil if it can.
    public static func fieldPathProblem(_ text: String) -> String? { SchemaCheck.pathProblem(text) }
}
