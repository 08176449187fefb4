import ChatFunctions
import FirestoreModel
import HeraldCore
import Testing
import WireFormats

/// Apps that keep times as numbers (`createdAt: Date.now()`, epoch milliseconds), declared with the
/// schema key `timeFormat`. Before it, Herald read none of their times (presence never expired, a
/// snooze never held) and wrote timestamps over their numbers, which a list ordered by `updatedAt`
/// sorts apart from the app's own values.
@Suite struct TimeFormatTests {
    static func schema(_ format: String) throws -> Schema {
        try Schema.load("\(format).json", file: try JSONValue(parsing: #"{"extends": "default", "timeFormat": "\#(format)"}"#))
    }

    /// 2026-07-01 12:00:00.123 UTC.
    static let sentAt = Timestamp(seconds: 1_782_907_200, nanos: 123_000_000)

    @Test func numbersAreReadInTheSchemasUnitOnly() throws {
        let milliseconds = try Self.schema("epochMilliseconds")
        let seconds = try Self.schema("epochSeconds")
        let timestamps = Schema.presets["default"]!
        #expect(milliseconds.time(.integer(1_782_907_200_123)) == Self.sentAt)
        #expect(milliseconds.time(.double(1_782_907_200_123)) == Self.sentAt)
        #expect(milliseconds.time(.integer(-1)) == Timestamp(seconds: -1, nanos: 999_000_000), "a millisecond before 1970")
        #expect(seconds.time(.integer(1_782_907_200)) == Timestamp(seconds: 1_782_907_200))
        #expect(seconds.time(.double(1_782_907_200.5)) == Timestamp(seconds: 1_782_907_200, nanos: 500_000_000))
        #expect(timestamps.time(.integer(1_782_907_200_123)) == nil, "a number is no time unless the schema says how")
        #expect(milliseconds.time(.timestamp(Self.sentAt)) == Self.sentAt, "a timestamp is read whatever the unit")
        // Any client may write any number: none traps or wraps.
        for hostile: FirestoreValue in [.integer(.max), .integer(.min), .double(1e300), .double(-.infinity), .double(.nan), .string("1782907200123")] {
            #expect(milliseconds.time(hostile) == nil && seconds.time(hostile) == nil, "\(hostile)")
        }
        #expect(milliseconds.stored(Self.sentAt) == .integer(1_782_907_200_123))
        #expect(seconds.stored(Self.sentAt) == .integer(1_782_907_200))
        #expect(timestamps.stored(Self.sentAt) == .timestamp(Self.sentAt))
    }

    @Test func aSchemaFileNamesTheFormatsItTakes() throws {
        let error = #expect(throws: SchemaError.self) { try Schema.load("m.json", file: ["extends": "default", "timeFormat": "epochMillis"]) }
        #expect(
            error?.description.contains(#"key "timeFormat" must be one of "timestamp", "epochMilliseconds", "epochSeconds""#) == true,
            "\(String(describing: error))")
        let schema = try Self.schema("epochMilliseconds")
        #expect(try Schema.load("back.json", file: try JSONValue(parsing: schema.fileText)).timeFormat == .epochMilliseconds)
    }

    /// The last message's time and `updatedAt` are written as the app keeps them, and a conversation
    /// already showing a newer message (as a number) is not moved back.
    @Test func theLastMessageIsWrittenAsTheAppKeepsTimes() throws {
        var world = PreferencesWorld(try Self.schema("epochMilliseconds"))
        world.message["timestamp"] = .integer(1_782_907_200_123)
        let conversation = try #require(world.plan().allWrites.first { $0.document.path == "conversations/c1" })
        guard case .update(_, let fields, _) = conversation.operation else { throw Unexpected() }
        #expect(fields["updatedAt"] == .integer(1_782_907_200_123))
        #expect(fields["lastMessage"]?.mapValue?["timestamp"] == .integer(1_782_907_200_123))

        world.conversation["lastMessage"] = .map(["timestamp": .integer(1_782_907_200_124), "text": .string("newer")])
        #expect(try !world.plan().allWrites.contains { $0.document.path == "conversations/c1" && Self.fields(of: $0)["lastMessage"] != nil })
    }

    /// A snooze and a mute kept as epoch milliseconds hold until then, and end then.
    @Test func aSnoozeOrAMuteKeptAsANumberHolds() throws {
        var world = PreferencesWorld(try Self.schema("epochMilliseconds"))
        let later = FirestoreValue.integer((world.now.seconds + 3600) * 1000)
        let earlier = FirestoreValue.integer((world.now.seconds - 3600) * 1000)
        #expect(try world.outcome("bob") == "alert" && world.outcome("carol") == "alert")
        world.users["bob"] = ["snoozedUntil": later]
        world.conversation["mutedUntil"] = .map(["carol": later])
        #expect(try world.outcome("bob") == "silent: snoozed")
        #expect(try world.outcome("carol") == "silent: muted")
        world.users["bob"] = ["snoozedUntil": earlier]
        world.conversation["mutedUntil"] = .map(["carol": earlier])
        #expect(try world.outcome("bob") == "alert" && world.outcome("carol") == "alert", "both ended")
    }

    /// presenceSweeper asks for heartbeats older than a number, and writes last seen as one.
    @Test func presenceKeptAsNumbersExpires() throws {
        let sweeper = PresenceSweeper(schema: try Self.schema("epochMilliseconds"))
        let now = Timestamp(seconds: 1_782_907_200)
        let sweep = try #require(sweeper.sweeps(at: now).first { $0.label == "offline" })
        guard case .and(let filters) = sweep.query.filter else { throw Unexpected() }
        #expect(filters.contains(.field(FieldPath("heartbeatAt"), .lessThan, .integer(1_782_907_140_000))))
        func user(heartbeat: FirestoreValue) throws -> FirestoreDocument {
            FirestoreDocument(
                name: try DocumentName(project: "p", path: "users/u1"), fields: ["online": .boolean(true), "heartbeatAt": heartbeat],
                updateTime: Timestamp(seconds: 1))
        }
        let stale = sweeper.plan(sweep, for: try user(heartbeat: .integer(1_782_907_100_250)), at: now)
        let write = try #require(stale.writes.first)
        #expect(Self.fields(of: write) == ["online": .boolean(false), "lastSeen": .integer(1_782_907_100_250)])
        #expect(sweeper.plan(sweep, for: try user(heartbeat: .integer(1_782_907_190_000)), at: now).writes.isEmpty, "fresh")
    }

    static func fields(of write: Write) -> [String: FirestoreValue] {
        guard case .update(_, let fields, _) = write.operation else { return [:] }
        return fields
    }
    struct Unexpected: Error {}
}
