import ChatFunctions
import FirestoreModel
import HeraldCore
import Testing

@Suite struct PresenceSweeperTests {
    static let now = Timestamp(seconds: 1_000_000)

    func user(_ fields: [String: FirestoreValue]) throws -> FirestoreDocument {
        FirestoreDocument(name: try DocumentName(project: "p", path: "users/u1"), fields: fields, updateTime: Timestamp(seconds: 999_990))
    }

    func ago(_ seconds: Int64) -> FirestoreValue { .timestamp(Timestamp(seconds: Self.now.seconds - seconds)) }

    func step(_ preset: String, _ label: String, _ fields: [String: FirestoreValue]) throws -> SweepStep {
        let sweeper = PresenceSweeper(schema: Schema.presets[preset]!)
        let sweep = try #require(sweeper.sweeps(at: Self.now).first { $0.label == label })
        return sweeper.plan(sweep, for: try user(fields), at: Self.now)
    }

    func update(_ step: SweepStep) throws -> (fields: [String: FirestoreValue], mask: Set<FieldPath>, precondition: Precondition?) {
        let write = try #require(step.writes.first)
        guard case .update(_, let fields, let mask?) = write.operation else { throw Unexpected() }
        return (fields, Set(mask), write.precondition)
    }
    struct Unexpected: Error {}

    @Test func aStaleOnlineUserGoesOfflineLastSeenAtTheirLastHeartbeat() throws {
        let write = try update(
            try step(
                "default", "offline",
                [
                    "online": .boolean(true), "heartbeatAt": ago(95), "typingIn": .string("family"), "typingAt": ago(95),
                    "viewingConversationId": .string("family"), "viewingAt": ago(95),
                ]))
        #expect(write.fields == ["online": .boolean(false), "lastSeen": ago(95)])
        #expect(
            write.mask == [
                FieldPath("online"), FieldPath("lastSeen"), FieldPath("typingIn"), FieldPath("typingAt"),
                FieldPath("viewingConversationId"), FieldPath("viewingAt"),
            ])
        // A heartbeat landing between the query and the write makes the write fail, and the heartbeat wins.
        #expect(write.precondition == .updateTime(Timestamp(seconds: 999_990)))
    }

    @Test(arguments: ["default", "prd000", "prd001", "prd004"])
    func everyPresetMarksItsOwnFields(preset: String) throws {
        let schema = Schema.presets[preset]!
        let online: FirestoreValue = schema.onlineStatusValue.map(FirestoreValue.string) ?? .boolean(true)
        let write = try update(try step(preset, "offline", [schema.onlineField: online, schema.heartbeatField: ago(61)]))
        #expect(write.fields[schema.onlineField] == (schema.offlineStatusValue.map(FirestoreValue.string) ?? .boolean(false)))
        // Where the heartbeat is the last-seen field itself (PRD 001, 004) it is left as it is.
        #expect(write.fields[schema.lastSeenField ?? schema.heartbeatField] == (schema.lastSeenField == nil ? nil : ago(61)))
        #expect(!write.mask.contains(FieldPath(schema.heartbeatField)))
    }

    @Test func freshOfflineOrHeartbeatlessUsersAreLeftAlone() throws {
        #expect(try step("default", "offline", ["online": .boolean(true), "heartbeatAt": ago(59)]).isEmpty)
        #expect(try step("default", "offline", ["online": .boolean(false), "heartbeatAt": ago(600)]).isEmpty)
        #expect(try step("default", "offline", ["online": .boolean(true)]).isEmpty)
        #expect(try step("prd000", "offline", ["status": .string("offline"), "heartbeat": ago(600)]).isEmpty)
        #expect(try step("default", "offline", ["online": .boolean(true), "heartbeatAt": .string("yesterday")]).isEmpty)
    }

    @Test func staleTypingAndViewingMarksAreClearedFreshOnesKept() throws {
        let typing = try update(try step("default", "typing", ["online": .boolean(true), "typingIn": .string("c1"), "typingAt": ago(11)]))
        #expect(typing.fields.isEmpty && typing.mask == [FieldPath("typingIn"), FieldPath("typingAt")])
        #expect(try step("default", "typing", ["typingIn": .string("c1"), "typingAt": ago(5)]).isEmpty)
        let viewing = try update(try step("default", "viewing", ["viewingConversationId": .string("c1"), "viewingAt": ago(120)]))
        #expect(viewing.mask == [FieldPath("viewingConversationId"), FieldPath("viewingAt")])
        #expect(try step("default", "viewing", ["viewingConversationId": .string("c1"), "viewingAt": ago(30)]).isEmpty)
    }

    @Test func theOfflineQueryAsksForOnlineUsersWithAnOldHeartbeatInHeartbeatOrder() throws {
        let sweeper = PresenceSweeper(schema: Schema.presets["prd000"]!, presenceStaleAfter: 90)
        let query = try #require(sweeper.sweeps(at: Self.now).first).query
        #expect(query.collectionID == "users")
        #expect(
            query.filter
                == .and([
                    .field(FieldPath("status"), .equal, .string("online")),
                    .field(FieldPath("heartbeat"), .lessThan, ago(90)),
                ]))
        #expect(query.orderBy == [StructuredQuery.Order(FieldPath("heartbeat"))])
    }

    @Test func thresholdsComeFromTheEnvironmentAndBadOnesAreRefused() throws {
        let sweeper = try PresenceSweeper(settings: FunctionSettings(environment: ["HERALD_PRESENCE_STALE_AFTER": "120", "HERALD_TYPING_STALE_AFTER": "4"]))
        #expect(sweeper.presenceStaleAfter == 120 && sweeper.typingStaleAfter == 4 && sweeper.viewingStaleAfter == 60)
        #expect(throws: SettingsError.self) { try PresenceSweeper(settings: FunctionSettings(environment: ["HERALD_PRESENCE_STALE_AFTER": "soon"])) }
    }
}
