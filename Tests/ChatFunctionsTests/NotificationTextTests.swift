import ChatFunctions
import FirestoreModel
import HeraldCore
import Testing
import WireFormats

/// Each preset's alert text, as docs/notifications.md lists it: the WhatsApp-style document's one line
/// for `default`, "sender name and message preview" for the others.
@Suite struct NotificationTextTests {
    struct Shown: Equatable, CustomStringConvertible {
        var title: String?
        var body: String?
        var titleKey: String?
        var titleArguments: [String]
        var bodyKey: String?
        var bodyArguments: [String]
        var description: String { "\(title ?? "-") | \(body ?? "-") | \(titleKey ?? "-") \(titleArguments) | \(bodyKey ?? "-") \(bodyArguments)" }
    }

    /// What Bob's phone shows when John (the sender) writes, in a 1:1 chat or in Family, mentioning Bob or not.
    static func shown(_ preset: String, group: Bool, mention: Bool = false, text: String, type: String = "text") throws -> Shown {
        try shown(schema: Schema.presets[preset]!, group: group, mention: mention, text: text, type: type)
    }

    static func shown(schema: Schema, group: Bool, mention: Bool = false, text: String, type: String = "text") throws -> Shown {
        var world = PreferencesWorld(schema)
        world.isGroup = group
        world.senderName = "John"
        world.text = text
        world.type = type
        if mention { world.message[try #require(schema.mentionsField)] = .array([.string("bob")]) }
        let push = try #require(try world.plan().pushes.first { $0.token == "tok-bob" }).content
        let apns = push["apns"]?["payload"]?["aps"]?["alert"]
        let android = push["android"]?["notification"]
        #expect(apns?["title"] == push["notification"]?["title"] && apns?["body"] == push["notification"]?["body"], "APNs shows the same")
        #expect(android?["title_loc_key"] == apns?["title-loc-key"] && android?["body_loc_key"] == apns?["loc-key"], "Android has the same keys")
        #expect(
            push["data"]?["summary"]?.stringValue
                == [push["notification"]?["title"]?.stringValue, push["notification"]?["body"]?.stringValue].compactMap { $0 }.joined(separator: ": "))
        return Shown(
            title: push["notification"]?["title"]?.stringValue, body: push["notification"]?["body"]?.stringValue,
            titleKey: apns?["title-loc-key"]?.stringValue, titleArguments: apns?["title-loc-args"]?.arrayValue?.compactMap(\.stringValue) ?? [],
            bodyKey: apns?["loc-key"]?.stringValue, bodyArguments: apns?["loc-args"]?.arrayValue?.compactMap(\.stringValue) ?? [])
    }

    @Test func theDefaultPresetShowsTheWhatsAppStyleDocumentsLines() throws {
        #expect(
            try Self.shown("default", group: false, text: "Hey, how are you?")
                == Shown(
                    title: nil, body: "John: Hey, how are you?", titleKey: nil, titleArguments: [], bodyKey: "herald_direct_body",
                    bodyArguments: ["John", "Hey, how are you?"]))
        #expect(
            try Self.shown("default", group: true, text: "Dinner at 6pm")
                == Shown(
                    title: nil, body: "Family • John: Dinner at 6pm", titleKey: nil, titleArguments: [], bodyKey: "herald_group_body",
                    bodyArguments: ["Family", "John", "Dinner at 6pm"]))
        #expect(
            try Self.shown("default", group: true, mention: true, text: "Dinner at 6pm")
                == Shown(
                    title: nil, body: "Family • John mentioned you: Dinner at 6pm", titleKey: nil, titleArguments: [], bodyKey: "herald_mention_body",
                    bodyArguments: ["Family", "John", "Dinner at 6pm"]))
        let photo = try Self.shown("default", group: true, text: "", type: "image")
        #expect(photo.body == "Family • John: 📷 Photo" && photo.bodyArguments == ["Family", "John", "📷 Photo"], "\(photo)")
    }

    @Test(arguments: ["prd000", "prd001", "prd004"]) func theOtherPresetsShowSenderNameAndPreview(preset: String) throws {
        #expect(
            try Self.shown(preset, group: false, text: "Hey, how are you?")
                == Shown(title: "John", body: "Hey, how are you?", titleKey: nil, titleArguments: [], bodyKey: nil, bodyArguments: []))
        #expect(
            try Self.shown(preset, group: true, text: "Dinner at 6pm")
                == Shown(
                    title: "John in Family", body: "Dinner at 6pm", titleKey: "herald_group_message_title", titleArguments: ["John", "Family"],
                    bodyKey: nil, bodyArguments: []))
        #expect(
            try Self.shown(preset, group: true, mention: true, text: "Dinner at 6pm")
                == Shown(
                    title: "John mentioned you in Family", body: "Dinner at 6pm", titleKey: "herald_mention_title", titleArguments: ["John", "Family"],
                    bodyKey: nil, bodyArguments: []))
        let photo = try Self.shown(preset, group: false, text: "", type: "image")
        #expect(photo == Shown(title: "John", body: "📷 Photo", titleKey: nil, titleArguments: [], bodyKey: "herald_body_photo", bodyArguments: []))
    }

    @Test func aSchemaFileSetsItsOwnTextAndKeys() throws {
        let file = try JSONValue(
            parsing:
                #"{"extends": "prd004", "notificationText": {"group": {"title": "{group}", "body": "{sender}: {preview}", "bodyKey": "my_group_body"}, "direct": {"title": null, "body": "{sender} says {preview}"}}}"#
        )
        let schema = try Schema.load("mine.json", file: file)
        #expect(
            try Self.shown(schema: schema, group: true, text: "Dinner at 6pm")
                == Shown(
                    title: "Family", body: "John: Dinner at 6pm", titleKey: nil, titleArguments: [], bodyKey: "my_group_body",
                    bodyArguments: ["John", "Dinner at 6pm"]))
        #expect(
            try Self.shown(schema: schema, group: false, text: "Hi")
                == Shown(title: nil, body: "John says Hi", titleKey: nil, titleArguments: [], bodyKey: nil, bodyArguments: []),
            "a text without its key is not localized")
        #expect(try Self.shown(schema: schema, group: true, mention: true, text: "Hi").title == "John mentioned you in Family", "the preset's mention stays")
    }

    @Test(arguments: [
        (#"{"notificationText": {"group": {"body": "{who}: {preview}"}}}"#, "unknown placeholder {who}"),
        (#"{"notificationText": {"group": {"body": "{sender: {preview}"}}}"#, "unknown placeholder {sender: {preview}"),
        (#"{"notificationText": {"group": {"body": "{sender"}}}"#, "is not closed"),
        (#"{"notificationText": {"direct": {"body": "{group}: {preview}"}}}"#, "a 1:1 chat has no {group}"),
        (#"{"notificationText": {"channel": {"body": "x"}}}"#, "not \"channel\""),
        (#"{"notificationText": {"group": {"body": ""}}}"#, "1 to 500 bytes"),
        (#"{"notificationText": {"group": {"subtitle": "x"}}}"#, "unknown member \"subtitle\""),
    ])
    func aBadTemplateIsRefusedByName(file: String, reason: String) throws {
        let json = try JSONValue(parsing: file)
        let error = #expect(throws: SchemaError.self) { try Schema.load("bad.json", file: json) }
        #expect(error?.description.contains(reason) == true, "\(String(describing: error))")
    }
}
