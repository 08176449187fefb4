import ChatFunctions
import FirestoreEvents
import FirestoreModel
import Foundation
import HeraldCore
import HeraldRuntime
import Testing
import WireFormats

/// A conversation in one preset's own field names: Alice writes to Bob (and Carol in the group).
struct PreferencesWorld {
    let schema: Schema
    var isGroup = true
    var conversation: [String: FirestoreValue] = [:]
    var users: [String: [String: FirestoreValue]] = [:]
    var message: [String: FirestoreValue] = [:]
    var text = "Dinner at 6pm"
    /// Alice's display name.
    var senderName = "Alice"
    var type = "text"
    /// 2026-07-01 12:00 UTC: 14:00 in Berlin.
    var now = Timestamp(seconds: 1_782_907_200)

    init(_ preset: String) { schema = Schema.presets[preset]! }
    init(_ schema: Schema) { self.schema = schema }

    var members: [String] { isGroup ? ["alice", "bob", "carol"] : ["alice", "bob"] }

    func plan() throws -> Plan {
        let (change, read) = try event()
        return OnMessageCreated(schema: schema, timeZones: TimeZoneRulesTests.database.timeZones).plan(for: change, given: read).plan
    }

    /// The message's event, and every document of this world as onMessageCreated would read it.
    func event() throws -> (DocumentChange, DocumentsRead) {
        let conversationName = try DocumentName(project: "p", path: "\(schema.conversationCollection)/c1")
        var conversationFields: [String: FirestoreValue] = [
            schema.memberFields[0]: .array(members.map { .string($0) }),
            schema.groupNameField: .string("Family"),
        ]
        if let flag = schema.groupFlagField { conversationFields[flag] = .boolean(isGroup) }
        if let field = schema.groupTypeField { conversationFields[field] = .string(isGroup ? schema.groupTypeValue ?? "group" : "direct") }
        conversationFields.merge(conversation) { $1 }
        var read = DocumentsRead()
        // Last written now, as Firestore would have it for a conversation showing a message of now.
        read.found[conversationName] = FirestoreDocument(name: conversationName, fields: conversationFields, updateTime: now)
        for id in members {
            let name = try DocumentName(project: "p", path: "\(schema.userCollection)/\(id)")
            var fields: [String: FirestoreValue] = [schema.displayNameField: .string(id == "alice" ? senderName : id.prefix(1).uppercased() + id.dropFirst())]
            // The user's one device, as the app writes it at sign-in.
            let seed = try schema.tokens.layout.seed(["tok-\(id)"], of: name, stamp: nil)
            fields.merge(seed.userFields) { $1 }
            fields.merge(users[id] ?? [:]) { $1 }
            read.found[name] = FirestoreDocument(name: name, fields: fields, updateTime: Timestamp(seconds: 5))
            for case .update(let device, let deviceFields, _) in seed.writes.map(\.operation) {
                read.found[device] = FirestoreDocument(name: device, fields: deviceFields, updateTime: Timestamp(seconds: 6))
            }
        }
        let path = schema.conversationIDField == nil ? "\(schema.conversationCollection)/c1/messages/m1" : "messages/m1"
        let messageName = try DocumentName(project: "p", path: path)
        var fields: [String: FirestoreValue] = [:]
        for (field, value) in [
            (schema.senderIDField, FirestoreValue.string("alice")), (schema.textField, .string(text)), (schema.typeField, .string(type)),
            (schema.timestampField, .timestamp(now)),
        ] {
            Schema.set(value, field: field, in: &fields)
        }
        if let field = schema.conversationIDField { fields[field] = .string("c1") }
        fields.merge(message) { $1 }
        let change = DocumentChange(
            eventID: "e", kind: .created, time: now, document: messageName,
            newDocument: FirestoreDocument(name: messageName, fields: fields, createTime: now))
        read.found[messageName] = change.newDocument
        return (change, read)
    }

    /// What a recipient's device gets: `alert`, `alert: mention` (its text says so), `silent: REASON`, or
    /// `nothing`. Each preset's exact text is NotificationTextTests'.
    func outcome(_ id: String) throws -> String {
        let plan = try plan()
        guard let push = plan.pushes.first(where: { $0.token == "tok-\(id)" }) else { return "nothing" }
        if push.body != nil { return push.summary?.contains("mentioned you") == true ? "alert: mention" : "alert" }
        return "silent: \(push.content["data"]?["reason"]?.stringValue ?? "?")"
    }
}

@Suite struct NotificationPreferencesTests {
    static let presets = Schema.presets.keys.sorted()

    static func at(_ text: String) -> Timestamp { Timestamp(seconds: Int64(ISO8601DateFormatter().date(from: text)!.timeIntervalSince1970)) }

    @Test(arguments: presets) func aMuteSilencesAlertsButNotCountsAndExpires(preset: String) throws {
        var world = PreferencesWorld(preset)
        let mutedBy = try #require(world.schema.mutedByField)
        let mutedUntil = try #require(world.schema.mutedUntilField)
        #expect(try world.outcome("bob") == "alert")
        world.conversation[mutedBy] = .array([.string("bob")])
        #expect(try world.outcome("bob") == "silent: muted")
        #expect(try world.outcome("carol") == "alert")
        let plan = try world.plan()
        #expect(plan.write(to: world.schema.badgePath(of: "bob")) != nil, "the badge still goes up")
        #expect(plan.pushes.first { $0.token == "tok-bob" }?.badge == 1)

        world.conversation = [mutedUntil: .map(["bob": .timestamp(Timestamp(seconds: world.now.seconds + 8 * 3600))])]
        #expect(try world.outcome("bob") == "silent: muted")
        world.conversation = [mutedUntil: .map(["bob": .timestamp(Timestamp(seconds: world.now.seconds - 1))])]
        #expect(try world.outcome("bob") == "alert", "an expired mute")
        world.conversation = [mutedUntil: .map(["bob": .boolean(true)])]
        #expect(try world.outcome("bob") == "silent: muted")
        world.conversation = [mutedUntil: .map(["bob": .string("forever?")])]
        #expect(try world.outcome("bob") == "alert", "what cannot be read is not a mute")
    }

    @Test(arguments: presets) func mentionsBreakThroughAMuteAndLevelsDecideInGroups(preset: String) throws {
        var world = PreferencesWorld(preset)
        let mentions = try #require(world.schema.mentionsField)
        let levels = try #require(world.schema.notificationLevelField)
        world.conversation[try #require(world.schema.mutedUntilField)] = .map(["bob": .boolean(true)])
        world.message[mentions] = .array([.string("bob"), .string("mallory"), .integer(3)])
        #expect(try world.outcome("bob") == "alert: mention")
        #expect(try world.outcome("carol") == "alert")
        world.message = [:]
        world.text = "@bob can you bring wine? cc @Carol."
        #expect(try world.outcome("bob") == "alert: mention", "by @name, in any case")
        #expect(try world.outcome("carol") == "alert: mention")
        world.text = "@Bobby is coming too"
        #expect(try world.outcome("bob") == "silent: muted", "a longer name is not a mention")

        world = PreferencesWorld(preset)
        world.conversation[levels] = .map(["bob": .string("none"), "carol": .string("mentions")])
        world.message[mentions] = .array([.string("bob")])
        #expect(try world.outcome("bob") == "silent: level-none", "none: not even mentions")
        #expect(try world.outcome("carol") == "silent: level-mentions")
        world.message[mentions] = .array([.string("carol")])
        #expect(try world.outcome("carol") == "alert: mention")
        world.isGroup = false
        world.message = [:]
        world.conversation[levels] = .map(["bob": .string("mentions")])
        #expect(try world.outcome("bob") == "alert", "in a 1:1 chat every message is for them")
    }

    @Test(arguments: presets) func quietHoursAcrossMidnightInTheirOwnTimeZone(preset: String) throws {
        try TimeZoneRulesTests.requireDatabase()
        var world = PreferencesWorld(preset)
        let quietHours = try #require(world.schema.quietHoursField)
        world.users["bob"] = [quietHours: .map(["start": .string("22:00"), "end": .string("07:00"), "timeZone": .string("Europe/Berlin")])]
        for (utc, expected) in [
            ("2026-07-01T12:00:00Z", "alert"),  // 14:00 in Berlin
            ("2026-07-01T19:59:00Z", "alert"),  // 21:59
            ("2026-07-01T20:00:00Z", "silent: quiet-hours"),  // 22:00
            ("2026-07-01T23:30:00Z", "silent: quiet-hours"),  // 01:30 the next day
            ("2026-07-02T04:59:00Z", "silent: quiet-hours"),  // 06:59
            ("2026-07-02T05:00:00Z", "alert"),
        ] {  // 07:00
            world.now = Self.at(utc)
            #expect(try world.outcome("bob") == expected, "\(utc)")
            #expect(try world.outcome("carol") == "alert")
        }
        // The zone may also be the user's own field.
        world.users["bob"] = [
            quietHours: .map(["start": .string("22:00"), "end": .string("07:00")]),
            try #require(world.schema.timeZoneField): .string("America/New_York"),
        ]
        world.now = Self.at("2026-07-02T03:00:00Z")  // 23:00 in New York, 05:00 in Berlin
        #expect(try world.outcome("bob") == "silent: quiet-hours")
        world.now = Self.at("2026-07-02T12:00:00Z")
        #expect(try world.outcome("bob") == "alert")
    }

    @Test(arguments: presets) func quietHoursFollowDaylightSavingChanges(preset: String) throws {
        try TimeZoneRulesTests.requireDatabase()
        var world = PreferencesWorld(preset)
        let quietHours = try #require(world.schema.quietHoursField)
        world.users["bob"] = [quietHours: .map(["start": .string("22:00"), "end": .string("07:00"), "timeZone": .string("Europe/Berlin")])]
        // 05:30 UTC is 06:30 in winter (quiet) and 07:30 in summer (not): the day the clocks change decides.
        world.now = Self.at("2026-03-28T05:30:00Z")
        #expect(try world.outcome("bob") == "silent: quiet-hours")
        world.now = Self.at("2026-03-29T05:30:00Z")
        #expect(try world.outcome("bob") == "alert", "the morning after clocks went forward")
        world.now = Self.at("2026-10-24T05:30:00Z")
        #expect(try world.outcome("bob") == "alert")
        world.now = Self.at("2026-10-25T05:30:00Z")
        #expect(try world.outcome("bob") == "silent: quiet-hours", "the morning after clocks went back")
        // Southern hemisphere: Sydney's summer time starts in October.
        world.users["bob"] = [quietHours: .map(["start": .string("22:00"), "end": .string("07:00"), "timeZone": .string("Australia/Sydney")])]
        world.now = Self.at("2026-10-02T20:30:00Z")  // Saturday 06:30 AEST (quiet)
        #expect(try world.outcome("bob") == "silent: quiet-hours")
        world.now = Self.at("2026-10-03T20:30:00Z")  // Sunday 07:30 AEDT: clocks went forward at 02:00
        #expect(try world.outcome("bob") == "alert")
    }

    @Test(arguments: presets) func snoozeAndMentionsDuringDoNotDisturb(preset: String) throws {
        try TimeZoneRulesTests.requireDatabase()
        var world = PreferencesWorld(preset)
        let quietHours = try #require(world.schema.quietHoursField)
        let snoozed = try #require(world.schema.snoozedUntilField)
        let mentions = try #require(world.schema.mentionsField)
        world.users["bob"] = [snoozed: .timestamp(Timestamp(seconds: world.now.seconds + 60))]
        #expect(try world.outcome("bob") == "silent: snoozed")
        world.message[mentions] = .array([.string("bob")])
        #expect(try world.outcome("bob") == "silent: snoozed", "do-not-disturb holds mentions unless the user allows them")
        world.users["bob"]?[quietHours] = .map(["start": .string("00:00"), "end": .string("00:00"), "allowMentions": .boolean(true)])
        #expect(try world.outcome("bob") == "alert: mention")
        world.message = [:]
        #expect(try world.outcome("bob") == "silent: snoozed")
        world.users["bob"]?[snoozed] = .timestamp(Timestamp(seconds: world.now.seconds - 60))
        #expect(try world.outcome("bob") == "alert", "a snooze that ended")
        world.users["bob"] = [quietHours: .map(["start": .string("00:00"), "end": .string("24:00"), "timeZone": .string("Pacific/Auckland")])]
        #expect(try world.outcome("bob") == "silent: quiet-hours", "all day")
    }

    @Test(arguments: presets) func unreadableSettingsAlertAndSayWhy(preset: String) throws {
        var world = PreferencesWorld(preset)
        let quietHours = try #require(world.schema.quietHoursField)
        for (settings, warning) in [
            (["start": FirestoreValue.string("22:00"), "end": .string("07:00"), "timeZone": .string("Mars/Olympus_Mons")], "unknown time zone"),
            (["start": .string("22:00"), "end": .string("07:00"), "timeZone": .string("../../etc/passwd")], "unknown time zone"),
            (["start": .string("25:00"), "end": .string("07:00")], "quietHours needs start and end"),
            (["start": .integer(1320), "end": .string("07:00")], "quietHours needs start and end"),
        ] {
            world.users["bob"] = [quietHours: .map(settings)]
            world.now = Self.at("2026-07-01T23:00:00Z")
            let plan = try world.plan()
            #expect(plan.pushes.first { $0.token == "tok-bob" }?.body?.hasSuffix("Dinner at 6pm") == true, "an alert")
            #expect(plan.warnings.contains { $0.contains(warning) }, "\(plan.warnings)")
        }
    }

    /// The presets whose alerts are "sender name and message preview" (the default's one line is NotificationTextTests').
    @Test(arguments: presets.filter { Schema.presets[$0]!.notificationText == .senderTitle })
    func notificationsCarryLocalizationKeysGroupingAndActions(preset: String) throws {
        var world = PreferencesWorld(preset)
        world.message[try #require(world.schema.mentionsField)] = .array([.string("bob")])
        let plan = try world.plan()
        let toBob = try #require(plan.pushes.first { $0.token == "tok-bob" }).content
        let toCarol = try #require(plan.pushes.first { $0.token == "tok-carol" }).content
        #expect(toBob["android"]?["notification"]?["title_loc_key"] == "herald_mention_title")
        #expect(toBob["android"]?["notification"]?["title_loc_args"] == ["Alice", "Family"])
        #expect(toBob["apns"]?["payload"]?["aps"]?["alert"]?["title-loc-key"] == "herald_mention_title")
        #expect(toBob["apns"]?["payload"]?["aps"]?["alert"]?["title-loc-args"] == ["Alice", "Family"])
        #expect(toBob["data"]?["mentioned"] == "true")
        #expect(toCarol["apns"]?["payload"]?["aps"]?["alert"]?["title-loc-key"] == "herald_group_message_title")
        #expect(toCarol["data"]?["mentioned"] == nil)
        for push in [toBob, toCarol] {
            #expect(push["apns"]?["payload"]?["aps"]?["category"] == "HERALD_MESSAGE")
            #expect(push["apns"]?["payload"]?["aps"]?["thread-id"] == "c1")
            #expect(push["android"]?["notification"]?["tag"] == "c1", "one notification per conversation on Android")
            #expect(push["android"]?["notification"]?["body_loc_key"] == nil, "a message's text is never translated")
        }
        // A photo: the label is translated; a 1:1 chat's title is just the sender's name.
        world = PreferencesWorld(preset)
        world.isGroup = false
        world.text = ""
        world.type = "image"
        let photo = try #require(try world.plan().pushes.first).content
        #expect(photo["notification"]?["body"] == "📷 Photo")
        #expect(photo["android"]?["notification"]?["body_loc_key"] == "herald_body_photo")
        #expect(photo["apns"]?["payload"]?["aps"]?["alert"]?["loc-key"] == "herald_body_photo")
        #expect(photo["android"]?["notification"]?["title_loc_key"] == nil)
    }
}
