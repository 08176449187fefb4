import ChatFunctions
import FirestoreModel
import HeraldCore
import Testing
import WireFormats

/// Times a client invents: a time Herald ages or orders by is trusted up to when Firestore recorded
/// the write that holds it plus a minute, and taken as that bound beyond it. Each case fails where a
/// time dated in the future is trusted: a user online forever, marks never cleared, pushes never
/// sent, tokens never removed.
@Suite struct ClientTimesTests {
    static let now = Timestamp(seconds: 1_800_000_000)
    /// When Firestore recorded the user's document: ten minutes before the sweep.
    static let written = Timestamp(seconds: now.seconds - 600)
    /// Year 9999, the latest time Firestore keeps.
    static let farFuture = Timestamp(seconds: 253_402_300_799)

    static func user(_ fields: [String: FirestoreValue], written: Timestamp = written) throws -> FirestoreDocument {
        FirestoreDocument(name: try DocumentName(project: "p", path: "users/u1"), fields: fields, updateTime: written)
    }

    static func schema(_ format: String) throws -> Schema {
        try Schema.load("\(format).json", file: try JSONValue(parsing: #"{"extends": "default", "timeFormat": "\#(format)"}"#))
    }

    func plan(_ sweeper: PresenceSweeper, _ label: String, _ user: FirestoreDocument) throws -> SweepStep {
        let sweep = try #require(sweeper.sweeps(at: Self.now).first { $0.label == label }, "no sweep \(label)")
        return sweeper.plan(sweep, for: user, at: Self.now)
    }

    @Test(arguments: ["timestamp", "epochMilliseconds", "epochSeconds"])
    func aHeartbeatFromTheFutureIsSetBackToWhenItWasWritten(format: String) throws {
        let schema = try Self.schema(format)
        let sweeper = PresenceSweeper(schema: schema)
        let sweep = try #require(sweeper.sweeps(at: Self.now).first { $0.label == "heartbeats from the future" })
        #expect(
            sweep.query.filter
                == .and([
                    .field(FieldPath("online"), .equal, .boolean(true)),
                    .field(FieldPath("heartbeatAt"), .greaterThan, schema.stored(Self.now.adding(.seconds(60)))),
                ]))
        let forged = try Self.user(["online": .boolean(true), "heartbeatAt": schema.stored(Self.farFuture)])
        let step = sweeper.plan(sweep, for: forged, at: Self.now)
        let bound = Self.written.adding(.seconds(60))
        #expect(
            step.writes == [
                Write(
                    .update(forged.name, fields: ["heartbeatAt": schema.stored(bound)], mask: [FieldPath("heartbeatAt")]),
                    precondition: .updateTime(Self.written))
            ])
        #expect(step.warnings.count == 1 && step.warnings[0].contains("users/u1 heartbeatAt is 9999-12-31"), "\(step.warnings)")
        // Set back, it ages like any heartbeat: stale two minutes after the write, the user goes offline.
        let setBack = try Self.user(["online": .boolean(true), "heartbeatAt": schema.stored(bound)], written: Self.now)
        #expect(sweeper.plan(sweep, for: setBack, at: Self.now).isEmpty, "a heartbeat within the bound is left alone")
        let later = Self.now.adding(.seconds(600))
        let offline = try #require(sweeper.sweeps(at: later).first { $0.label == "offline" })
        #expect(
            sweeper.plan(offline, for: setBack, at: later).writes.first?.operation
                == .update(
                    setBack.name, fields: ["online": .boolean(false), "lastSeen": schema.stored(bound)],
                    mask: [
                        FieldPath("online"), FieldPath("lastSeen"), FieldPath("typingIn"), FieldPath("typingAt"), FieldPath("viewingConversationId"),
                        FieldPath("viewingAt"),
                    ]))
    }

    @Test func aClockALittleAheadAndAnOfflineUserAreLeftAlone() throws {
        let sweeper = PresenceSweeper(schema: Schema.presets["default"]!)
        let ahead = try Self.user(["online": .boolean(true), "heartbeatAt": .timestamp(Self.now.adding(.seconds(50)))])
        #expect(try plan(sweeper, "heartbeats from the future", ahead).isEmpty, "within the minute a clock may be ahead")
        let offline = try Self.user(["online": .boolean(false), "heartbeatAt": .timestamp(Self.farFuture)])
        #expect(try plan(sweeper, "heartbeats from the future", offline).isEmpty)
    }

    @Test func typingAndViewingMarksFromTheFutureAreSetBack() throws {
        let sweeper = PresenceSweeper(schema: Schema.presets["default"]!)
        let user = try Self.user([
            "online": .boolean(true), "heartbeatAt": .timestamp(Self.now), "typingIn": .string("c1"), "typingAt": .timestamp(Self.farFuture),
            "viewingConversationId": .string("c1"), "viewingAt": .timestamp(Self.farFuture),
        ])
        let bound = FirestoreValue.timestamp(Self.written.adding(.seconds(60)))
        for (label, field) in [("typing from the future", "typingAt"), ("viewing from the future", "viewingAt")] {
            let step = try plan(sweeper, label, user)
            #expect(step.writes.map(\.operation) == [.update(user.name, fields: [field: bound], mask: [FieldPath(field)])], "\(label)")
        }
        // A document Herald's clock sees as written later than now is bounded by now.
        let early = try Self.user(["typingAt": .timestamp(Self.farFuture)], written: Self.now.adding(.seconds(3600)))
        #expect(
            try plan(sweeper, "typing from the future", early).writes.first?.operation
                == .update(early.name, fields: ["typingAt": .timestamp(Self.now.adding(.seconds(60)))], mask: [FieldPath("typingAt")]))
    }

    /// A recipient whose viewing mark is dated in the future is viewing only while their document was
    /// written within the freshness: the push is sent once the app is gone.
    @Test func aViewingMarkFromTheFutureHoldsNoPushBack() throws {
        var world = World()
        world.users["bob"]?["viewingConversationId"] = .string("c1")
        world.users["bob"]?["viewingAt"] = .timestamp(Self.farFuture)
        world.usersUpdateTime = Timestamp(seconds: world.now.seconds - 3600)
        #expect(try world.plan().pushes.map(\.userID) == ["bob"], "the mark is an hour old by Firestore's record")
        world.usersUpdateTime = Timestamp(seconds: world.now.seconds - 10)
        #expect(try world.plan().pushes.isEmpty, "written ten seconds ago: bob is looking")
    }

    @Test func tokensFromTheFutureAreAgedFromWhenTheirDocumentWasWritten() throws {
        let day: Int64 = 86_400
        let cleanup = TokenCleanup(schema: Schema.presets["default"]!)
        let sweep = try #require(cleanup.sweeps(at: Self.now).first { $0.label == "tokens from the future" })
        #expect(sweep.query.filter == .field(FieldPath("tokensUpdatedAt"), .greaterThan, .timestamp(Self.now.adding(.seconds(60)))))
        let tokens = FirestoreValue.array([.string(TokenCleanupTests.good[0])])
        let seenForever = FirestoreValue.timestamp(Self.farFuture)
        let abandoned = try Self.user(
            ["fcmTokens": tokens, "tokensUpdatedAt": .timestamp(Self.farFuture), "heartbeatAt": seenForever],
            written: Timestamp(seconds: Self.now.seconds - 90 * day))
        #expect(
            cleanup.plan(sweep, for: abandoned, at: Self.now).writes.first?.operation == .update(abandoned.name, fields: [:], mask: [FieldPath("fcmTokens")]))
        let recent = try Self.user(["fcmTokens": tokens, "tokensUpdatedAt": .timestamp(Self.farFuture)], written: Timestamp(seconds: Self.now.seconds - day))
        #expect(cleanup.plan(sweep, for: recent, at: Self.now).isEmpty, "written yesterday: kept")
        // The stale sweep and the future one split the documents between them: none is planned twice.
        let stale = try #require(cleanup.sweeps(at: Self.now).first { $0.label == "tokens" })
        #expect(cleanup.plan(stale, for: abandoned, at: Self.now).isEmpty)

        // A token map's times: each bounded by when the map's document was written (ten years ahead is
        // still a time the map's values are read as).
        var schema = Schema.presets["default"]!
        schema.tokens = .mapKeys(field: "notificationTokens")
        let tenYearsAhead = Timestamp(seconds: Self.now.seconds + 3650 * day)
        let mapped = try Self.user(
            [
                "notificationTokens": .map([TokenCleanupTests.good[0]: .timestamp(tenYearsAhead)]),
                "tokensUpdatedAt": .timestamp(Timestamp(seconds: Self.now.seconds - 90 * day)),
            ], written: Timestamp(seconds: Self.now.seconds - 90 * day))
        let mapSweep = try #require(TokenCleanup(schema: schema).sweeps(at: Self.now).first { $0.label == "tokens" })
        #expect(
            TokenCleanup(schema: schema).plan(mapSweep, for: mapped, at: Self.now).writes.first?.operation
                == .update(mapped.name, fields: [:], mask: [FieldPath("notificationTokens", TokenCleanupTests.good[0])]))
    }

    /// Token documents the app keeps with numbers are swept with numbers, in the future as in the past.
    @Test func numberedTokenDocumentsFromTheFutureAreFoundToo() throws {
        let schema = try Schema.load(
            "codelab.json",
            file: try JSONValue(
                parsing:
                    #"{"extends": "default", "timeFormat": "epochMilliseconds", "tokens": {"documentPerToken": {"collection": "fcmTokens", "userField": "uid"}}}"#
            ))
        let cleanup = TokenCleanup(schema: schema)
        let labels = cleanup.sweeps(at: Self.now).map(\.label)
        #expect(labels == ["tokens", "tokens kept with numbers", "tokens from the future", "tokens kept with numbers from the future"])
        let future = try #require(cleanup.sweeps(at: Self.now).first { $0.label == "tokens kept with numbers from the future" })
        #expect(future.query.filter == .field(FieldPath("tokensUpdatedAt"), .greaterThan, .integer((Self.now.seconds + 60) * 1000)))
    }
}
