import ChatFunctions
import FirestoreEvents
import FirestoreModel
import HeraldCore
import Testing

@Suite struct TokenCleanupTests {
    static let good = (0..<12).map { "dGVzdC10b2tlbi0\($0):APA91bH-abcdefghijklmnopqrstuvwxyz_\($0)" }

    /// A write of users/u1 from `old` to `fields`; by default the tokens are the same before (no stamp).
    func change(_ fields: [String: FirestoreValue], old: [String: FirestoreValue]? = nil) throws -> DocumentChange {
        let name = try DocumentName(project: "p", path: "users/u1")
        return DocumentChange(
            eventID: "e", kind: .written, time: Timestamp(seconds: 10), document: name,
            oldDocument: FirestoreDocument(name: name, fields: old ?? fields, updateTime: Timestamp(seconds: 5)),
            newDocument: FirestoreDocument(name: name, fields: fields, updateTime: Timestamp(seconds: 9)))
    }

    /// The plan, with the user document read as the event left it.
    func plan(_ schema: String, _ fields: [String: FirestoreValue], old: [String: FirestoreValue]? = nil) throws -> Plan {
        let change = try change(fields, old: old)
        let function = TokenCleanup(schema: Schema.presets[schema]!)
        let read = (function.firstReads(for: change)?.documents ?? [])
        return function.plan(for: change, given: DocumentsRead(found: Dictionary(uniqueKeysWithValues: read.map { ($0, change.newDocument!) }))).plan
    }

    /// A user document written with 600 tokens claims and looks up only the ten it keeps (each claim and
    /// removal a write: 600 of them were refused as one commit, every retry, and nothing was trimmed).
    @Test func aDocumentWithThousandsOfTokensClaimsOnlyThoseItKeeps() throws {
        let tokens = (0..<600).map { "dGVzdC10b2tlbi0\($0):APA91bH" }
        let event = try self.change(["fcmTokens": .array(tokens.map { .string($0) })], old: [:])
        let reads = try #require(TokenCleanup(schema: Schema.presets["default"]!).firstReads(for: event))
        #expect(reads.lookups.count == 10)
        #expect(reads.documents.count == 1 + 10, "the user document and ten claims")
        #expect(Set(reads.lookups.compactMap(\.value.stringValue)) == Set(tokens.suffix(10)))
    }

    @Test func arraysAreDedupedCleanedAndCappedKeepingTheNewest() throws {
        let messy: [FirestoreValue] =
            [.string(Self.good[0]), .string(""), .string("not a token"), .string(Self.good[1]), .string(Self.good[0])]
            + Self.good[2...].map { .string($0) }
        let plan = try plan("default", ["fcmTokens": .array(messy)])
        let write = try #require(plan.writes.first)
        guard case .update(_, let fields, let mask) = write.operation else {
            Issue.record("expected an update")
            return
        }
        #expect(mask == [FieldPath("fcmTokens")])
        #expect(write.precondition == .updateTime(Timestamp(seconds: 9)))
        // good[0] counts at its newest position (after good[1]); the oldest beyond ten are dropped.
        let expected = Array(([Self.good[1], Self.good[0]] + Self.good[2...]).suffix(10))
        #expect(fields["fcmTokens"] == .array(expected.map { .string($0) }))
        // Its own write triggers the function again: now a no-op, so it can never loop.
        #expect(try self.plan("default", fields).decision == .skip(reason: "tokens already normal"))
    }

    /// Hostile tokens a client wrote beside real ones of every kind: only the malformed go, whatever
    /// kind they pretend to be; FCM's, Expo's and APNs's tokens all stay.
    @Test func onlyMalformedTokensGoWhateverTheirKind() throws {
        let expo = "ExponentPushToken[xxxxxxxxxxxxxxxxxxxxxx]"
        let apns = String(repeating: "a1b2", count: 16)
        let hostile = [
            String(repeating: "t", count: 10_000), "ExponentPushToken[\u{1}\u{7}]", "ExponentPushToken[abc", String(apns.dropLast()), "ExpoPushToken[]",
        ]
        let tokens = [Self.good[0], expo] + hostile + [apns]
        let plan = try plan("default", ["fcmTokens": .array(tokens.map { .string($0) })])
        guard case .update(_, let fields, _)? = plan.writes.first?.operation else {
            Issue.record("expected an update: \(plan)")
            return
        }
        #expect(fields["fcmTokens"] == .array([Self.good[0], expo, apns].map { .string($0) }))
    }

    @Test func aMalformedSingleTokenIsClearedAndAGoodOneLeftAlone() throws {
        #expect(try plan("prd004", ["fcmToken": .string(Self.good[0])]).decision == .skip(reason: "tokens already normal"))
        #expect(try plan("prd004", [:]).decision == .skip(reason: "tokens already normal"))
        let clear = try #require(try plan("prd004", ["fcmToken": .string("  ")]).writes.first)
        guard case .update(_, let fields, let mask) = clear.operation else {
            Issue.record("expected an update")
            return
        }
        #expect(fields.isEmpty && mask == [FieldPath("fcmToken")])  // masked and absent: the field is deleted
    }

    @Test func malformedMapKeysAreDeleted() throws {
        var schema = Schema.presets["default"]!
        schema.tokens = .mapKeys(field: "notificationTokens")
        let fields: [String: FirestoreValue] = ["notificationTokens": .map([Self.good[0]: .boolean(true), "bad token": .boolean(true)])]
        let change = try change(fields)
        let plan = TokenCleanup(schema: schema).plan(for: change, given: DocumentsRead(found: [change.document: change.newDocument!])).plan
        guard case .update(_, let set, let mask) = plan.writes.first?.operation else {
            Issue.record("expected an update")
            return
        }
        #expect(set.isEmpty)
        #expect(mask == [FieldPath("notificationTokens", "bad token")])
    }

    /// Tokens kept as map keys with the time each was written (`{token: serverTimestamp()}`, or epoch
    /// milliseconds) have an order: the oldest beyond ten go, and pushes go to the ten newest (keys sorted
    /// by name pushed to the two oldest). With no times (`{token: true}`) nothing orders them and only
    /// malformed keys go.
    @Test func mapKeysWithTimesKeepTheTenNewest() throws {
        var schema = Schema.presets["default"]!
        schema.tokens = .mapKeys(field: "notificationTokens")
        // good[i] written at 1000 - i: good[10] and good[11], last by name, are the oldest.
        let times: [(Int) -> FirestoreValue] = [
            { .timestamp(Timestamp(seconds: 1000 - Int64($0))) }, { .integer(1_000_000 - Int64($0) * 1000) },
        ]
        for time in times {
            let map = Dictionary(uniqueKeysWithValues: Self.good.enumerated().map { index, token in (token, time(index)) })
            let change = try change(["notificationTokens": .map(map)])
            let plan = TokenCleanup(schema: schema).plan(for: change, given: DocumentsRead(found: [change.document: change.newDocument!])).plan
            guard case .update(_, let set, let mask) = plan.writes.first?.operation else {
                Issue.record("expected an update: \(plan.decision)")
                return
            }
            #expect(set.isEmpty)
            #expect(mask == [FieldPath("notificationTokens", Self.good[10]), FieldPath("notificationTokens", Self.good[11])])
            #expect(schema.tokens(of: change.newDocument!).suffix(10) == Self.good[0..<10].reversed())
        }
        let untimed = try change(["notificationTokens": .map(Dictionary(uniqueKeysWithValues: Self.good.map { ($0, FirestoreValue.boolean(true)) }))])
        let plan = TokenCleanup(schema: schema).plan(for: untimed, given: DocumentsRead(found: [untimed.document: untimed.newDocument!])).plan
        #expect(plan.writes.isEmpty, "\(plan.decision)")
    }

    @Test func aDeletedUserNeedsNothing() throws {
        let name = try DocumentName(project: "p", path: "users/u1")
        let deleted = DocumentChange(
            eventID: "e", kind: .written, time: Timestamp(seconds: 1), document: name,
            oldDocument: FirestoreDocument(name: name, fields: [:]))
        #expect(
            TokenCleanup(schema: Schema.presets["default"]!).plan(for: deleted, given: DocumentsRead()).plan.decision
                == .skip(reason: "the user document was deleted"))
    }

    @Test func aChangedTokenSetIsStampedOnceAndTheStampWriteIsANoOp() throws {
        let plan = try plan(
            "default", ["fcmTokens": .array([.string(Self.good[0]), .string(Self.good[1])])], old: ["fcmTokens": .array([.string(Self.good[0])])])
        let write = try #require(plan.writes.first)
        #expect(write.transforms == [FieldTransform(FieldPath("tokensUpdatedAt"), .setToRequestTime)])
        guard case .update(_, let fields, let mask) = write.operation else {
            Issue.record("expected an update")
            return
        }
        #expect(fields.isEmpty && mask == [], "only the stamp: the tokens are already normal")
        // The stamp's own event: the same tokens before and after.
        let again = try self.plan(
            "default", ["fcmTokens": .array([.string(Self.good[0]), .string(Self.good[1])]), "tokensUpdatedAt": .timestamp(Timestamp(seconds: 9))])
        #expect(again.decision == .skip(reason: "tokens already normal"))
    }

    /// Bob signs in on the phone Alice used: the token leaves Alice's document, conditional on the version read.
    @Test(arguments: ["default", "prd004"])
    func aTokenThatChangedAccountsLeavesThePreviousOwner(preset: String) throws {
        let schema = Schema.presets[preset]!
        let function = TokenCleanup(schema: schema)
        let token = Self.good[3]
        let (bobFields, aliceFields): ([String: FirestoreValue], [String: FirestoreValue]) =
            if let field = (schema.tokens.layout as? SingleTokenField)?.field {
                ([field: .string(token)], [field: .string(token), "displayName": .string("Alice")])
            } else {
                (["fcmTokens": .array([.string(token)])], ["fcmTokens": .array([.string(Self.good[4]), .string(token)])])
            }
        let bob = try DocumentName(project: "p", path: "users/u1")
        let change = DocumentChange(
            eventID: "e", kind: .written, time: Timestamp(seconds: 10), document: bob,
            oldDocument: FirestoreDocument(name: bob, fields: [:], updateTime: Timestamp(seconds: 5)),
            newDocument: FirestoreDocument(name: bob, fields: bobFields, updateTime: Timestamp(seconds: 9)))
        let lookups = (function.firstReads(for: change)?.lookups ?? [])
        #expect(lookups.count == 1)
        let alice = FirestoreDocument(name: try DocumentName(project: "p", path: "users/alice"), fields: aliceFields, updateTime: Timestamp(seconds: 7))
        let bobAsFound = FirestoreDocument(name: bob, fields: bobFields, updateTime: Timestamp(seconds: 9))
        #expect(lookups[0].matches(alice) && lookups[0].matches(bobAsFound))
        let toRead = (function.firstReads(for: change)?.documents ?? [])
        #expect(toRead.count == 2 && toRead[0] == bob && toRead[1].path.hasPrefix("_herald/tokens/claims/"), "Bob's document and the token's claim")
        let plan = function.plan(for: change, given: DocumentsRead(found: [bob: bobAsFound], lookups: [lookups[0]: [alice, bobAsFound]])).plan
        let removals = plan.writes.filter { $0.document == alice.name }
        #expect(removals.count == 1 && removals[0].precondition == .updateTime(Timestamp(seconds: 7)))
        let claim = try #require(plan.writes.first { $0.document == toRead[1] })
        #expect(claim.precondition == .exists(false), "the first claim of this token")
        if case .update(_, let fields, _) = claim.operation {
            #expect(fields == ["user": .string("users/u1"), "gainedAt": .timestamp(Timestamp(seconds: 9))])
        } else {
            Issue.record("the claim is an update")
        }
        #expect(!plan.writes.contains { $0.document == bob && $0.transforms.isEmpty }, "Bob keeps his token")
        switch removals[0].operation {
        case .update(_, let fields, let mask): #expect(fields.isEmpty && mask == [FieldPath("fcmToken")])
        case .transform: #expect(removals[0].transforms == [FieldTransform(FieldPath("fcmTokens"), .removeAllFromArray([.string(token)]))])
        default: Issue.record("unexpected removal \(removals[0])")
        }
        // Nothing gained (a heartbeat): no lookup at all.
        let heartbeat = DocumentChange(
            eventID: "h", kind: .written, time: Timestamp(seconds: 11), document: bob,
            oldDocument: change.newDocument, newDocument: change.newDocument)
        let heartbeatLookups = function.firstReads(for: heartbeat)?.lookups ?? []
        #expect(heartbeatLookups.isEmpty)
    }

    @Test func theDailyPassRemovesStaleTokensOfUsersNotSeenAndChecksDoubtfulOnes() throws {
        let day: Int64 = 86_400
        let now = Timestamp(seconds: 400 * day)
        let function = TokenCleanup(schema: Schema.presets["default"]!, validate: true)
        let sweep = try #require(function.sweeps(at: now).first)
        #expect(sweep.query.filter == .field(FieldPath("tokensUpdatedAt"), .lessThan, .timestamp(Timestamp(seconds: 370 * day))))
        func user(changed daysAgo: Int64, seen seenDaysAgo: Int64?) throws -> FirestoreDocument {
            var fields: [String: FirestoreValue] = [
                "fcmTokens": .array([.string(Self.good[0]), .string(Self.good[1])]),
                "tokensUpdatedAt": .timestamp(Timestamp(seconds: now.seconds - daysAgo * day)),
            ]
            if let seenDaysAgo { fields["heartbeatAt"] = .timestamp(Timestamp(seconds: now.seconds - seenDaysAgo * day)) }
            // Firestore recorded the document's last write when its newest time was written.
            let written = Timestamp(seconds: now.seconds - min(daysAgo, seenDaysAgo ?? daysAgo) * day)
            return FirestoreDocument(name: try DocumentName(project: "p", path: "users/u1"), fields: fields, updateTime: written)
        }
        let stale = function.plan(sweep, for: try user(changed: 61, seen: 70), at: now)
        #expect(stale.writes.count == 1 && stale.checks.isEmpty && stale.writes[0].precondition == .updateTime(Timestamp(seconds: now.seconds - 61 * day)))
        // Seen yesterday: the app is in use and refreshes its token; only checked.
        let active = function.plan(sweep, for: try user(changed: 61, seen: 1), at: now)
        #expect(active.writes.isEmpty && active.checks.map(\.token) == [Self.good[0], Self.good[1]])
        #expect(active.checks.allSatisfy { $0.removal != nil })
        #expect(function.plan(sweep, for: try user(changed: 10, seen: nil), at: now).isEmpty)
        #expect(
            TokenCleanup(schema: Schema.presets["default"]!).plan(sweep, for: try user(changed: 40, seen: nil), at: now).isEmpty,
            "without validate, doubtful tokens are left alone")
    }

    /// A map of tokens with the time each device last wrote its own (`{token: serverTimestamp()}`, refreshed
    /// on every start as Firebase advises): the daily pass removes the tokens not refreshed for 60 days,
    /// not the whole map, and keeps a token refreshed yesterday even when the user's presence is unknown.
    @Test func aTimedMapLosesOnlyItsStaleTokens() throws {
        let day: Int64 = 86_400
        let now = Timestamp(seconds: 20_000 * day)
        var schema = Schema.presets["default"]!
        schema.tokens = .mapKeys(field: "notificationTokens")
        let sweep = try #require(TokenCleanup(schema: schema).sweeps(at: now).first)
        func user(_ tokens: [String: FirestoreValue]) throws -> FirestoreDocument {
            FirestoreDocument(
                name: try DocumentName(project: "p", path: "users/u1"),
                fields: ["notificationTokens": .map(tokens), "tokensUpdatedAt": .timestamp(Timestamp(seconds: now.seconds - 90 * day))],
                updateTime: written)
        }
        // When Firestore recorded the document's last write: a token was refreshed yesterday.
        let written = Timestamp(seconds: now.seconds - day)
        let ago = { (days: Int64) in Timestamp(seconds: now.seconds - days * day) }
        for time in [{ FirestoreValue.timestamp(ago($0)) }, { FirestoreValue.integer(ago($0).seconds * 1000) }] {
            let mixed = try user([Self.good[0]: time(1), Self.good[1]: time(61), Self.good[2]: time(40)])
            let step = TokenCleanup(schema: schema).plan(sweep, for: mixed, at: now)
            guard case .update(_, let fields, let mask)? = step.writes.first?.operation else {
                Issue.record("expected an update: \(step)")
                continue
            }
            #expect(step.writes.count == 1 && fields.isEmpty && mask == [FieldPath("notificationTokens", Self.good[1])])
            #expect(step.writes[0].precondition == .updateTime(written))
            let fresh = try user([Self.good[0]: time(1), Self.good[2]: time(40)])
            #expect(TokenCleanup(schema: schema).plan(sweep, for: fresh, at: now).isEmpty, "nothing is 60 days old")
            let checked = TokenCleanup(schema: schema, validate: true).plan(sweep, for: fresh, at: now)
            #expect(checked.writes.isEmpty && checked.checks.map(\.token) == [Self.good[2]], "only the token 40 days old is checked")
        }
        // Seen yesterday: the app is in use (it may write a token's time only once): stale tokens are only checked.
        var seen = try user([Self.good[0]: .timestamp(ago(1)), Self.good[1]: .timestamp(ago(61))])
        seen.fields["heartbeatAt"] = .timestamp(ago(1))
        #expect(TokenCleanup(schema: schema).plan(sweep, for: seen, at: now).isEmpty)
        #expect(TokenCleanup(schema: schema, validate: true).plan(sweep, for: seen, at: now).checks.map(\.token) == [Self.good[1]])
        // A value that is no time (`true`) is judged by when the map last changed (90 days ago); the others by their own.
        let mixed = try user([Self.good[0]: .boolean(true), Self.good[1]: .timestamp(ago(1))])
        #expect(
            TokenCleanup(schema: schema).plan(sweep, for: mixed, at: now).writes.first?.operation
                == .update(mixed.name, fields: [:], mask: [FieldPath("notificationTokens", Self.good[0])]))
        // No value is a time: the map as a whole, as before.
        let untimed = try user([Self.good[0]: .boolean(true), Self.good[1]: .boolean(true)])
        #expect(
            TokenCleanup(schema: schema).plan(sweep, for: untimed, at: now).writes.first?.operation
                == .update(untimed.name, fields: [:], mask: [FieldPath("notificationTokens")]))
    }

    /// The event's document may be long gone (a heartbeat since): the writes are made from the document as it is now.
    @Test func writesAreConditionalOnTheCurrentVersionNotTheEventsOne() throws {
        let change = try change(["fcmTokens": .array([.string(Self.good[0]), .string(Self.good[0])])])
        let now = FirestoreDocument(
            name: change.document,
            fields: ["fcmTokens": .array([.string(Self.good[0]), .string(Self.good[0])]), "heartbeatAt": .timestamp(Timestamp(seconds: 20))],
            updateTime: Timestamp(seconds: 21))
        let plan = TokenCleanup(schema: Schema.presets["default"]!).plan(for: change, given: DocumentsRead(found: [change.document: now])).plan
        #expect(plan.writes.first?.precondition == .updateTime(Timestamp(seconds: 21)))
        // A heartbeat alone needs no read at all.
        let heartbeat = try self.change(
            ["fcmTokens": .array([.string(Self.good[0])]), "heartbeatAt": .timestamp(Timestamp(seconds: 30))],
            old: ["fcmTokens": .array([.string(Self.good[0])]), "heartbeatAt": .timestamp(Timestamp(seconds: 0))])
        #expect(TokenCleanup(schema: Schema.presets["default"]!).firstReads(for: heartbeat) == nil)
    }

    /// Sign-ins on one device reach tokenCleanup in any order: the claim keeps the latest, so an older
    /// gain arriving late neither takes the token back nor keeps it.
    struct Roaming {
        let function = TokenCleanup(schema: Schema.presets["default"]!)
        let token = TokenCleanupTests.good[5]

        func user(_ id: String, tokens: [String], at seconds: Int64) throws -> FirestoreDocument {
            FirestoreDocument(
                name: try DocumentName(project: "p", path: "users/\(id)"),
                fields: ["fcmTokens": .array(tokens.map(FirestoreValue.string))], updateTime: Timestamp(seconds: seconds))
        }

        /// The plan for `id` gaining the token at `gainedAt`, with the claim as recorded and the other holders as found now.
        func plan(gain id: String, at gainedAt: Int64, claim: (user: String, at: Int64)?, holders: [FirestoreDocument]) throws -> Plan {
            let now = try user(id, tokens: [token], at: gainedAt)
            let change = DocumentChange(
                eventID: "e-\(id)", kind: .written, time: Timestamp(seconds: gainedAt), document: now.name,
                oldDocument: try user(id, tokens: [], at: gainedAt - 1), newDocument: now)
            let firstDocuments = function.firstReads(for: change)?.documents ?? []
            let claimName = try #require(firstDocuments.last)
            var found = [now.name: now]
            if let claim {
                found[claimName] = FirestoreDocument(
                    name: claimName, fields: ["user": .string("users/\(claim.user)"), "gainedAt": .timestamp(Timestamp(seconds: claim.at))],
                    updateTime: Timestamp(seconds: claim.at + 1))
            }
            let firstLookups = function.firstReads(for: change)?.lookups ?? []
            let lookup = try #require(firstLookups.first)
            return function.plan(for: change, given: DocumentsRead(found: found, lookups: [lookup: holders + [now]])).plan
        }

        func removals(in plan: Plan, from id: String) -> Int {
            plan.writes.filter { $0.document.path == "users/\(id)" && $0.transforms.contains { $0.field == FieldPath("fcmTokens") } }.count
        }
    }

    /// Carol signed in at 12 and her event came first; Bob's sign-in at 9 arrives late: Bob gives the
    /// token up, Carol keeps it, and the claim stays hers.
    @Test func aLateOlderSignInGivesTheTokenUpInsteadOfTakingItBack() throws {
        let roaming = Roaming()
        let plan = try roaming.plan(gain: "bob", at: 9, claim: ("carol", 12), holders: [try roaming.user("carol", tokens: [roaming.token], at: 12)])
        #expect(roaming.removals(in: plan, from: "carol") == 0)
        #expect(plan.writes.count == 1, "only Bob's own document: no claim write")
        let bob = try #require(plan.writes.first)
        #expect(bob.document.path == "users/bob" && bob.precondition == .updateTime(Timestamp(seconds: 9)))
        guard case .update(_, let fields, let mask) = bob.operation else {
            Issue.record("expected an update")
            return
        }
        #expect(mask == [FieldPath("fcmTokens")] && fields["fcmTokens"] == .array([]))
    }

    /// A holder whose document changed after Bob's sign-in may have signed in later (its event not yet
    /// here): left alone. The holder the claim named before Bob is the device's previous account: removed
    /// even though its document changed since (a heartbeat).
    @Test func onlyHoldersThatGotTheTokenEarlierLoseIt() throws {
        let roaming = Roaming()
        let alice = try roaming.user("alice", tokens: [roaming.token], at: 20)
        let dave = try roaming.user("dave", tokens: [roaming.token], at: 15)
        let erin = try roaming.user("erin", tokens: [roaming.token], at: 4)
        let plan = try roaming.plan(gain: "bob", at: 10, claim: ("alice", 3), holders: [alice, dave, erin])
        #expect(roaming.removals(in: plan, from: "alice") == 1, "the previous claimant")
        #expect(roaming.removals(in: plan, from: "dave") == 0, "changed after Bob's sign-in")
        #expect(roaming.removals(in: plan, from: "erin") == 1, "unchanged since before Bob's sign-in")
        let claim = try #require(plan.writes.first { $0.document.path.hasPrefix("_herald/") })
        #expect(claim.precondition == .updateTime(Timestamp(seconds: 4)), "conditional on the claim as read")
        // The same event again, after its claim was written: the claim is Bob's, nothing more to claim.
        let again = try roaming.plan(gain: "bob", at: 10, claim: ("bob", 10), holders: [erin])
        #expect(!again.writes.contains { $0.document.path.hasPrefix("_herald/") })
        #expect(roaming.removals(in: again, from: "erin") == 1)
    }
}

@Suite struct TokenCleanupWithoutEventDataTests {
    /// Read back after an event without its data, every token looks gained: none may be taken from others for it.
    @Test func anEventWithoutItsDataTakesNoTokenFromAnyone() throws {
        let user = try DocumentName(project: "p", path: "users/bob")
        var change = DocumentChange(
            eventID: "e", kind: .written, time: Timestamp(seconds: 10), document: user,
            newDocument: FirestoreDocument(name: user, fields: ["fcmTokens": .array([.string("tok-shared")])], updateTime: Timestamp(seconds: 10)))
        let function = TokenCleanup(schema: Schema.presets["default"]!)
        let withData = function.firstReads(for: change)?.lookups ?? []
        #expect(withData.count == 1, "with its data, a new token is looked for elsewhere")
        change.dataWasOmitted = true
        let withoutData = function.firstReads(for: change)?.lookups ?? []
        #expect(withoutData.isEmpty)
    }

}
