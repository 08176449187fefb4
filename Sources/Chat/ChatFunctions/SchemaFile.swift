import FirestoreModel
import HeraldCore
import WireFormats

/// Reads a schema JSON file over a preset and writes one back, through `Schema.keys`. A schema file is
/// input like any other: every key, path, field name and template is checked, and the first problem
/// is named with its key, before anything runs or deploys. Keys starting with `//` are comments.
enum SchemaFile {
    /// A schema file is a few kilobytes; a larger one is not one.
    static let maximumBytes = 64 * 1024
    /// `notificationText.group.title` is three levels below the file.
    static let maximumDepth = 4
    /// Firestore's limit on a document's name, which a message pattern becomes.
    static let maximumPatternBytes = 6 * 1024

    static func decode(_ json: JSONValue, name: String, tokenLayouts: TokenLayouts) throws(SchemaError) -> Schema {
        guard case .object(let members) = json else { throw SchemaError("must be a JSON object") }
        if json.depth > maximumDepth { throw SchemaError("is nested \(json.depth) levels deep; a schema file has at most \(maximumDepth)") }
        var schema = Schema.presets["default"]!
        if let base = members["extends"] {
            guard let baseName = base.stringValue, let preset = Schema.presets[baseName] else {
                throw SchemaError("key \"extends\" must name a preset (\(Schema.presets.keys.sorted().joined(separator: ", ")))")
            }
            schema = preset
        }
        schema.name = name
        for (key, value) in members.sorted(by: { $0.key < $1.key }) where key != "extends" && !FunctionSettings.isSchemaComment(key) {
            guard let entry = Schema.key(named: key) else {
                let near = Schema.keys.map(\.name).filter { $0.lowercased() == key.lowercased() }.first
                throw SchemaError("unknown key \(FirestoreNames.quoted(key))\(near.map { "; did you mean \"\($0)\"?" } ?? "")")
            }
            try entry.set(value, in: &schema, tokenLayouts: tokenLayouts)
        }
        if members["conversationCollection"] == nil, let parent = schema.messageParentCollection {
            schema.conversationCollection = parent
        }
        try schema.validate()
        return schema
    }

}

extension Schema {
    /// The complete schema file for this schema: every key, in the table's order, each after a comment
    /// saying what it is (`herald schema show`). Read back, it gives this schema.
    public var fileText: String {
        Self.fileText(Self.keys.map { key in (key.name, key.json(in: self), ["\(key.concept), \(key.place.rawValue): \(key.use)"]) })
    }

    /// A schema file as text: one key per line in the given order, each preceded by its comment lines
    /// (`"// key": "…"`), so a proposal reads top to bottom with its evidence.
    public static func fileText(_ members: [(key: String, value: JSONValue, comments: [String])]) -> String {
        var lines: [String] = []
        for member in members {
            for comment in member.comments { lines.append("  \(JSONValue.string("// \(member.key)").serialized()): \(JSONValue.string(comment).serialized())") }
            lines.append("  \(JSONValue.string(member.key).serialized()): \(member.value.serialized())")
        }
        return "{\n" + lines.joined(separator: ",\n") + "\n}\n"
    }
}

extension SchemaKey {
    /// Sets the key's value from a schema file, checked.
    func set(_ json: JSONValue, in schema: inout Schema, tokenLayouts: TokenLayouts = .standard) throws(SchemaError) {
        switch value {
        case .pattern(let path): schema[keyPath: path] = try SchemaCheck.pattern(json, key: name)
        case .collection(let path): schema[keyPath: path] = try SchemaCheck.collection(json, key: name)
        case .field(let path): schema[keyPath: path] = try SchemaCheck.field(json, key: name, nested: mayBeNested)
        case .optionalField(let path):
            schema[keyPath: path] = json == .null ? nil : try SchemaCheck.field(json, key: name, orNull: true, nested: mayBeNested)
        case .optionalCollection(let path): schema[keyPath: path] = json == .null ? nil : try SchemaCheck.collection(json, key: name, orNull: true)
        case .optionalText(let path):
            guard json == .null || (json.stringValue.map { (1...FirestoreNames.maximumBytes).contains($0.utf8.count) } ?? false) else {
                throw SchemaError("key \"\(name)\" must be a string of 1 to \(FirestoreNames.maximumBytes) bytes, or null")
            }
            schema[keyPath: path] = json.stringValue
        case .fields(let path):
            guard let list = json.arrayValue, (1...10).contains(list.count) else {
                throw SchemaError("key \"\(name)\" must be an array of 1 to 10 field names")
            }
            var names: [String] = []
            for item in list { names.append(try SchemaCheck.field(item, key: name)) }
            schema[keyPath: path] = names
        case .lastMessage: schema.lastMessage = try SchemaFile.lastMessage(json)
        case .tokens: schema.tokens = try tokenLayouts.read(json)
        case .notificationText: schema.notificationText = try SchemaFile.notificationText(json, over: schema.notificationText)
        case .timeFormat:
            guard let format = json.stringValue.flatMap(Schema.TimeFormat.init(rawValue:)) else {
                throw SchemaError("key \"timeFormat\" must be one of \(Schema.TimeFormat.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", "))")
            }
            schema.timeFormat = format
        case .mediaFields: schema.mediaFields = try SchemaFile.mediaFields(json)
        }
    }
}

extension SchemaFile {
    static func lastMessage(_ value: JSONValue) throws(SchemaError) -> Schema.LastMessageShape {
        let usage = "key \"lastMessage\" must be {\"map\": FIELD} or {\"flat\": {\"text\", \"senderID\", \"senderName\", \"timestamp\": FIELD or null}}"
        guard case .object(let members) = value, members.count == 1 else { throw SchemaError(usage) }
        if let field = members["map"] { return .map(field: try SchemaCheck.field(field, key: "lastMessage.map")) }
        guard case .object(let flat) = members["flat"] ?? .null else { throw SchemaError(usage) }
        for name in flat.keys where !["text", "senderID", "senderName", "timestamp"].contains(name) {
            throw SchemaError("key \"lastMessage.flat\" has an unknown member \(FirestoreNames.quoted(name))")
        }
        func field(_ name: String) throws(SchemaError) -> String? {
            guard let value = flat[name], value != .null else { return nil }
            return try SchemaCheck.field(value, key: "lastMessage.flat.\(name)")
        }
        let shape = Schema.LastMessageShape.flat(
            text: try field("text"), senderID: try field("senderID"), senderName: try field("senderName"), timestamp: try field("timestamp"))
        guard case .flat(nil, nil, nil, nil) = shape else { return shape }
        throw SchemaError("key \"lastMessage.flat\" names no field")
    }

    static func mediaFields(_ value: JSONValue) throws(SchemaError) -> [String: String] {
        guard case .object(let members) = value, members.count <= 10 else {
            throw SchemaError("key \"mediaFields\" must be an object of at most 10 message fields, each naming a type: {\"image\": \"image\"}")
        }
        var fields: [String: String] = [:]
        for (field, type) in members.sorted(by: { $0.key < $1.key }) {
            let name = try SchemaCheck.field(.string(field), key: "mediaFields", nested: true)
            guard let type = type.stringValue, Preview.type(type) == type else {
                throw SchemaError("key \"mediaFields.\(field)\" must name a type: a word of 1 to 32 printable ASCII characters such as \"image\"")
            }
            fields[name] = type
        }
        return fields
    }

    /// `{"direct"|"group"|"mention": {"title": TEXT|null, "body": TEXT, "titleKey": KEY, "bodyKey": KEY}}`, each
    /// member over the preset's; a text given without its key is shown as it is (no localization key).
    static func notificationText(_ value: JSONValue, over preset: NotificationText) throws(SchemaError) -> NotificationText {
        let usage = "key \"notificationText\" must be {\"direct\"|\"group\"|\"mention\": {\"title\": TEXT or null, \"body\": TEXT, \"titleKey\", \"bodyKey\"}}"
        guard case .object(let kinds) = value else { throw SchemaError(usage) }
        var text = preset
        for (kind, members) in kinds.sorted(by: { $0.key < $1.key }) {
            let path: WritableKeyPath<NotificationText, NotificationText.Template>
            switch kind {
            case "direct": path = \.direct
            case "group": path = \.group
            case "mention": path = \.mention
            default: throw SchemaError("\(usage); not \(FirestoreNames.quoted(kind))")
            }
            guard case .object(let members) = members else { throw SchemaError(usage) }
            var template = text[keyPath: path]
            for name in members.keys where !["title", "body", "titleKey", "bodyKey"].contains(name) {
                throw SchemaError("key \"notificationText.\(kind)\" has an unknown member \(FirestoreNames.quoted(name))")
            }
            for name in ["titleKey", "bodyKey"] {
                guard let key = members[name] else { continue }
                guard let string = key.stringValue, (1...100).contains(string.utf8.count),
                    string.utf8.allSatisfy({
                        $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".") || (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0)
                    })
                else {
                    throw SchemaError("key \"notificationText.\(kind).\(name)\" must be a string resource name of 1 to 100 letters, digits, _ or .")
                }
            }
            func pattern(_ name: String, key: String) throws(SchemaError) -> NotificationText.Pattern? {
                guard let value = members[name] else { return nil }
                guard let template = value.stringValue, (1...500).contains(template.utf8.count) else {
                    throw SchemaError("key \"notificationText.\(kind).\(name)\" must be a string of 1 to 500 bytes")
                }
                let key = members[key]?.stringValue
                let pattern: NotificationText.Pattern
                do { pattern = try NotificationText.Pattern(template, key: key) } catch {
                    throw SchemaError("key \"notificationText.\(kind).\(name)\": \(error)")
                }
                if kind == "direct" && pattern.parts.contains(.group) {
                    throw SchemaError("key \"notificationText.direct.\(name)\": a 1:1 chat has no {group}")
                }
                return pattern
            }
            if members["title"] == .null {
                template.title = nil
            } else if let title = try pattern("title", key: "titleKey") {
                template.title = title
            } else if let key = members["titleKey"] {
                guard template.title != nil else {
                    throw SchemaError("key \"notificationText.\(kind).titleKey\": this alert has no title to localize (give it a \"title\" too)")
                }
                template.title?.key = key.stringValue
            }
            if let body = try pattern("body", key: "bodyKey") {
                template.body = body
            } else if let key = members["bodyKey"] {
                template.body.key = key.stringValue
            }
            text[keyPath: path] = template
        }
        return text
    }
}

extension NotificationText {
    /// As a schema file writes it: every kind, with its keys.
    var json: JSONValue {
        func kind(_ template: Template) -> JSONValue {
            var members: [String: JSONValue] = ["title": template.title.map { .string($0.template) } ?? .null, "body": .string(template.body.template)]
            if let key = template.title?.key { members["titleKey"] = .string(key) }
            if let key = template.body.key { members["bodyKey"] = .string(key) }
            return .object(members)
        }
        return ["direct": kind(direct), "group": kind(group), "mention": kind(mention)]
    }
}

extension NotificationText.Pattern {
    /// The text it was read from.
    public var template: String {
        parts.map { part in
            switch part {
            case .text(let text): text
            case .sender: "{sender}"
            case .group: "{group}"
            case .preview: "{preview}"
            }
        }.joined()
    }
}

extension JSONValue {
    /// How many levels of arrays and objects it holds (a scalar: 0).
    var depth: Int {
        switch self {
        case .array(let items): 1 + (items.lazy.map(\.depth).max() ?? 0)
        case .object(let members): 1 + (members.values.lazy.map(\.depth).max() ?? 0)
        default: 0
        }
    }
}
