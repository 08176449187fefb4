import ChatFunctions
import FirestoreModel
import Foundation
import HeraldCore
import HeraldRuntime
import HeraldTesting
import Testing
import WireFormats

/// Schema files: one table of keys behind reading, writing and docs/schema.md, and every value checked
/// as the input it is (issue 47, class 2).
@Suite struct SchemaFileTests {
    /// A property of `Schema` without a key (and so without its row in docs/schema.md) fails here.
    @Test func everySchemaPropertyHasItsKeyAndRow() throws {
        let properties = Set(Mirror(reflecting: Schema.presets["default"]!).children.compactMap(\.label)).subtracting(["name"])
        let covered = Set(Schema.keys.flatMap(\.properties))
        #expect(properties == covered, "without a key: \(properties.subtracting(covered)); keys without a property: \(covered.subtracting(properties))")
        #expect(Set(Schema.keys.map(\.name)).count == Schema.keys.count, "each key once")
        for key in Schema.keys { #expect(!key.use.isEmpty && !key.concept.isEmpty, "\(key.name)") }
    }

    /// `herald schema show` prints a complete file that reads back as the same schema, for every preset.
    @Test(arguments: ["default", "prd000", "prd001", "prd004"])
    func aPresetShownReadsBackAsItself(preset: String) throws {
        let schema = try #require(Schema.presets[preset])
        var shown = try Schema.load("shown.json", file: try JSONValue(parsing: schema.fileText))
        shown.name = preset
        #expect(shown == schema)
        // No key leans on the default preset: the file alone says everything.
        let members = try #require(try JSONValue(parsing: schema.fileText).objectValue)
        #expect(members["extends"] == nil && Schema.keys.allSatisfy { members[$0.name] != nil })
    }

    static func load(_ text: String) throws -> Schema { try Schema.load("mine.json", file: try JSONValue(parsing: text)) }

    /// Each hostile value is refused by name, before anything runs (the runtime and `herald deploy` load the same way).
    @Test(arguments: [
        (#"{"messagePattern": "rooms/{roomId}/posts"}"#, "messagePattern"),
        (#"{"messagePattern": "rooms/{id}/posts/{id}"}"#, "wildcard {id} appears twice"),
        (#"{"messagePattern": "{coll}/{roomId}/posts/{postId}"}"#, "stands for a collection"),
        (#"{"messagePattern": "rooms//posts/{postId}"}"#, "empty segment"),
        (#"{"messagePattern": "rooms/{room-id}/posts/{postId}"}"#, "not a wildcard"),
        (#"{"messagePattern": "rooms/{roomId}/posts/post"}"#, "must end with a {wildcard}"),
        (#"{"messagePattern": "__rooms__/{roomId}/posts/{postId}", "conversationCollection": "__rooms__"}"#, "reserved"),
        (#"{"userCollection": "people/x"}"#, "holds a slash"),
        (#"{"userCollection": ".."}"#, "is invalid"),
        (#"{"userCollection": "__x__"}"#, "reserved"),
        (#"{"badgeField": "stats..badge"}"#, "no dots"),
        (#"{"badgeField": "`badge"}"#, "backticks"),
        (#"{"badgeField": ""}"#, "an empty field name"),
        (#"{"badgeField": "b\u200Bdge"}"#, "invisible"),
        (#"{"memberFields": []}"#, "1 to 10 field names"),
        (#"{"notificationText": {"group": {"body": "{who}: {preview}"}}}"#, "unknown placeholder {who}"),
        (#"{"notificationText": {"group": {"bodyKey": "a key; rm"}}}"#, "string resource name"),
        (#"{"badgeField": "pushTokens", "tokens": {"mapKeys": "pushTokens"}}"#, "both name the user field \"pushTokens\""),
        (#"{"unreadCountField": "lastMessage"}"#, "both name the conversation field \"lastMessage\""),
        (#"{"userCollection": "conversations"}"#, "name the same collection"),
        (#"{"messagePattern": "rooms/{roomId}/posts/{postId}", "conversationCollection": "chats"}"#, "are under \"rooms\""),
        (#"{"groupTypeField": "kind"}"#, "needs \"groupTypeValue\""),
        (#"{"groupTypeValue": "group"}"#, "no \"groupTypeField\""),
        (#"{"extends": "prd001", "messagePattern": "rooms/{roomId}/posts/{postId}", "conversationCollection": "rooms"}"#, "top-level message collections only"),
        (#"{"messagePattern": "users/{userId}", "conversationIDField": "cid"}"#, "a user and a message would be one document"),
        (#"{"notificationText": {"direct": {"titleKey": "my_title"}}}"#, "no title to localize"),
        (#"{"tokens": {"array": "a", "single": "b"}}"#, "key \"tokens\""),
        (#"{"lastMessage": {"flat": {}}}"#, "names no field"),
        (#"{"BadgeField": "x"}"#, "did you mean \"badgeField\""),
        (#"{"a": {"b": {"c": {"d": {"e": 1}}}}}"#, "nested 5 levels deep"),
        (#"{"statusField": "meta.status"}"#, "no dots"),
        (#"{"senderIDField": "user..id"}"#, "is not a field path"),
        (#"{"senderIDField": "user.__id__"}"#, "reserved"),
        (#"{"textField": "user", "senderIDField": "user._id"}"#, "keys \"senderIDField\" and \"textField\" overlap"),
        (#"{"senderIDField": "heraldUnread.by"}"#, "keys \"senderIDField\" and \"unreadMarkField\" overlap"),
        (#"{"mediaFields": {"image": "a photo"}}"#, "key \"mediaFields.image\" must name a type"),
        (#"{"mediaFields": {"image": 3}}"#, "key \"mediaFields.image\" must name a type"),
        (#"{"mediaFields": {"type": "image"}}"#, "keys \"typeField\" and \"mediaFields\" both name the message field \"type\""),
        (#"{"mediaFields": ["image"]}"#, "key \"mediaFields\" must be an object"),
        (#"{"timeFormat": "ms"}"#, "key \"timeFormat\" must be one of"),
        (#"{"tokens": {"documentPerUser": "users"}}"#, "the tokens need a collection of their own"),
    ])
    func aHostileSchemaFileIsRefusedByName(file: String, reason: String) throws {
        let error = #expect(throws: SchemaError.self) { try Self.load(file) }
        #expect(error?.description.contains(reason) == true, "\(file): \(String(describing: error))")
    }

    @Test func aFieldNameOrPatternOverFirestoresLimitsIsRefused() throws {
        let long = String(repeating: "a", count: 1501)
        #expect(throws: SchemaError.self) { try Self.load(#"{"badgeField": "\#(long)"}"#) }
        let deep = (0..<1600).map { "c\($0)/{w\($0)}" }.joined(separator: "/")
        let error = #expect(throws: SchemaError.self) { try Self.load(#"{"messagePattern": "\#(deep)"}"#) }
        #expect(error?.description.contains("bytes") == true, "\(String(describing: error))")
    }

    /// A file of megabytes, or nested a thousand deep, is refused before it is parsed further.
    @Test func aHugeOrDeepFileIsRefused() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-schema-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let huge = directory.appendingPathComponent("huge.json")
        try Data(("{\"// pad\": \"" + String(repeating: "x", count: 3 << 20) + "\"}").utf8).write(to: huge)
        #expect { _ = try FunctionSettings.reading(schema: huge.path) } throws: { "\($0)".contains("cannot read schema file") }
        let deep = directory.appendingPathComponent("deep.json")
        try Data((String(repeating: "[", count: 1000) + String(repeating: "]", count: 1000)).utf8).write(to: deep)
        #expect { _ = try Schema.load(FunctionSettings.reading(schema: deep.path)) } throws: { "\($0)".contains("nested deeper") }
    }

    /// How `herald deploy` hands a schema file to Cloud Run: its JSON as HERALD_SCHEMA's value.
    @Test func theSchemaJSONItselfIsASetting() throws {
        let settings = try FunctionSettings.reading(schema: #"{"extends": "prd004", "badgeField": "badgeCount"}"#)
        let schema = try Schema.load(settings)
        #expect(schema.badgeField == "badgeCount" && schema.senderIDField == "senderID")
        #expect { _ = try Schema.load(FunctionSettings.reading(schema: #"{"badgeField": 3}"#)) } throws: { "\($0)".contains("badgeField") }
        #expect { _ = try FunctionSettings.reading(schema: "{not json") } throws: { "\($0)".contains("HERALD_SCHEMA") }
        // A key named twice is a mistake, not the last one winning; a comment may repeat.
        #expect { _ = try FunctionSettings.reading(schema: #"{"badgeField": "a", "badgeField": "b"}"#) } throws: {
            "\($0)".contains("key \"badgeField\" appears twice")
        }
        let commented = try FunctionSettings.reading(schema: #"{"// badgeField": "one", "// badgeField": "two", "badgeField": "b"}"#)
        #expect(try Schema.load(commented).badgeField == "b")
    }

    /// Message fields Herald only reads may be inside a map, as react-native-gifted-chat keeps its sender;
    /// a file naming them reads back as itself.
    @Test func messageFieldsHeraldReadsMayBeInsideAMap() throws {
        let schema = try Self.load(#"{"senderIDField": "user._id", "senderNameField": "user.name", "textField": "content.`rich.text`"}"#)
        #expect(schema.senderIDField == "user._id" && schema.senderNameField == "user.name")
        #expect(Schema.path(of: schema.textField) == ["content", "rich.text"])
        var shown = try Schema.load("shown.json", file: try JSONValue(parsing: schema.fileText))
        shown.name = schema.name
        #expect(shown == schema)
        let message = FirestoreDocument(
            name: try DocumentName(project: "p", path: "conversations/c1/messages/m1"),
            fields: ["user": .map(["_id": .string("alice"), "name": .string("Alice")]), "user._id": .string("not this one")])
        #expect(Schema.value(of: schema.senderIDField, in: message) == .string("alice"))
    }

    @Test func commentsAreSkippedAndNestedMessagesNameTheirConversations() throws {
        let schema = try Self.load(#"{"// why": "our layout", "messagePattern": "rooms/{roomId}/posts/{postId}"}"#)
        #expect(schema.conversationCollection == "rooms", "derived from the pattern")
    }
}
