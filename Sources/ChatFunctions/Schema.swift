import Foundation
import FirestoreModel

/// Where the chat app keeps things in Firestore. The product documents' apps differ
/// (see shared/requirements/README.md); a preset or a JSON file says which layout this deployment uses.
public struct Schema: Sendable, Hashable {
    public var name: String
    /// Document pattern of a message, e.g. `conversations/{conversationId}/messages/{messageId}`.
    public var messagePattern: String
    /// Collection of conversation documents.
    public var conversationCollection: String
    /// Collection of user documents.
    public var userCollection: String

    public static let presets: [String: Schema] = [
        "default": Schema(name: "default", messagePattern: "conversations/{conversationId}/messages/{messageId}",
                          conversationCollection: "conversations", userCollection: "users"),
        "prd000": Schema(name: "prd000", messagePattern: "conversations/{conversationId}/messages/{messageId}",
                         conversationCollection: "conversations", userCollection: "users"),
        "prd001": Schema(name: "prd001", messagePattern: "messages/{messageId}",
                         conversationCollection: "conversations", userCollection: "users"),
        "prd004": Schema(name: "prd004", messagePattern: "chats/{chatID}/messages/{messageID}",
                         conversationCollection: "chats", userCollection: "users"),
    ]

    public var userPattern: String { "\(userCollection)/{userId}" }

    /// A preset by name, or a schema JSON file (`{"messagePattern": …, "conversationCollection": …, "userCollection": …}`,
    /// optionally `"extends": PRESET`). Errors name the bad key.
    public static func load(_ nameOrPath: String) throws(SchemaError) -> Schema {
        if let preset = presets[nameOrPath] { return preset }
        guard nameOrPath.hasSuffix(".json") || nameOrPath.contains("/") else {
            throw SchemaError("unknown schema \"\(nameOrPath)\": use one of \(presets.keys.sorted().joined(separator: ", ")) or a path to a JSON file")
        }
        let bytes: Data
        do { bytes = try Data(contentsOf: URL(fileURLWithPath: nameOrPath)) } catch {
            throw SchemaError("cannot read schema file \(nameOrPath): \(error.localizedDescription)")
        }
        let json: JSONValue
        do { json = try JSONValue(parsing: bytes) } catch { throw SchemaError("schema file \(nameOrPath): \(error)") }
        guard case .object(let members) = json else { throw SchemaError("schema file \(nameOrPath): must be a JSON object") }
        var schema = presets["default"]!
        if let base = members["extends"] {
            guard let baseName = base.stringValue, let preset = presets[baseName] else {
                throw SchemaError("schema file \(nameOrPath): key \"extends\" must name a preset")
            }
            schema = preset
        }
        schema.name = nameOrPath
        let known: [String: WritableKeyPath<Schema, String>] = [
            "messagePattern": \.messagePattern, "conversationCollection": \.conversationCollection, "userCollection": \.userCollection,
        ]
        for (key, value) in members where key != "extends" {
            guard let path = known[key] else { throw SchemaError("schema file \(nameOrPath): unknown key \"\(key)\"") }
            guard let text = value.stringValue, !text.isEmpty else { throw SchemaError("schema file \(nameOrPath): key \"\(key)\" must be a non-empty string") }
            schema[keyPath: path] = text
        }
        let segments = schema.messagePattern.split(separator: "/", omittingEmptySubsequences: false)
        guard segments.count % 2 == 0, segments.allSatisfy({ !$0.isEmpty }) else {
            throw SchemaError("schema file \(nameOrPath): key \"messagePattern\" must be a document pattern like coll/{id}")
        }
        for key in ["conversationCollection", "userCollection"] where schema[keyPath: known[key]!].contains("/") {
            throw SchemaError("schema file \(nameOrPath): key \"\(key)\" must be a top-level collection id")
        }
        return schema
    }
}

public struct SchemaError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
