import ChatDemo
import ChatFunctions
import FirestoreModel
import Foundation
import GoogleClients
import WireFormats

/// What the documents and pushes must be, computed from the messages themselves, and every place
/// where they are not.
struct ChaosTruth {
    let world: ChaosWorld
    let schema: Schema
    let demo: DemoWorld
    let app: FirestoreClient
    /// Who signed in last on each roaming device.
    let owners: [String: String]
    /// Messages whose onMessageCreated delivery was cut off by a SIGKILL.
    let interrupted: Set<String>
    /// "message/user" pairs whose push the function recorded unanswered, once (then sent once more) and
    /// twice (not sent a third time): `ChaosRun.unansweredPushes`.
    let unanswered: (once: Set<String>, twice: Set<String>)
    /// Messages deleted by their sender right after writing them: counted by nobody in the end, and
    /// announced to each recipient device at most once (none if deleted before their event was handled).
    let unsent: [String: (conversation: String, sender: String)]

    struct Outcome {
        var checks = 0
        var mismatches: [String] = []
        var duplicatesEmitted = 0
        var repeatsAfterKill = 0
        /// Alerts FCM never answered twice and never delivered.
        var unansweredUndelivered = 0
        /// Devices that got an unanswered push and its second send (one alert: the same collapse id).
        var resentDeliveredTwice = 0
        /// Devices whose last push was checked against their user's stored total.
        var badgesChecked = 0

        mutating func expect(_ condition: Bool, _ what: @autoclosure () -> String) {
            checks += 1
            if !condition { mismatches.append(what()) }
        }
    }

    func check(pushes: [JSONValue]) async throws -> Outcome {
        var outcome = Outcome()
        let users = try await all(StructuredQuery(collectionID: schema.userCollection))
        var badgeDocuments = users
        if let collection = schema.badgeCollection { badgeDocuments = try await all(StructuredQuery(collectionID: collection)) }
        // Kept apart, a badge not counted yet has no document: it is what the user document still holds, or 0.
        let badges = { (user: String) in self.schema.storedBadge(badgeDocument: badgeDocuments[user], userDocument: users[user])?.integerValue }
        let conversations = try await all(StructuredQuery(collectionID: schema.conversationCollection))
        var unreadTotals: [String: Int64] = [:]
        var alerts: [String: [String]] = [:]  // message id → tokens that must get exactly one push
        for conversation in world.conversations {
            guard let document = conversations[conversation.id] else {
                outcome.expect(false, "conversation \(conversation.id) is missing")
                continue
            }
            let (parent, query) = try demo.messagesQuery(in: conversation.id)
            let messages = try await app.runQuery(query, parent: parent)
            let newest = messages.max { number(of: $0) < number(of: $1) }
            if let newest { expectLast(newest, in: document, conversation.id, &outcome) }
            for member in conversation.members {
                let unread = messages.filter { sender(of: $0) != member && !readers(of: $0).contains(member) }.count
                unreadTotals[member, default: 0] += Int64(unread)
                outcome.expect(
                    document[schema.unreadCountField]?.mapValue?[member]?.integerValue == Int64(unread),
                    "\(conversation.id): unread of \(member) is \(document[schema.unreadCountField]?.mapValue?[member]?.integerValue.map(String.init) ?? "missing"), truth \(unread)"
                )
            }
            for message in messages {
                let recipients = conversation.members.filter { $0 != sender(of: message) }
                let allRead = Set(recipients).isSubset(of: readers(of: message))
                let status = message[schema.statusField]?.stringValue ?? "none"
                outcome.expect(
                    allRead ? status == "read" : ["sent", "delivered"].contains(status),
                    "\(message.name.path): status \(status) with \(allRead ? "every" : "not every") recipient having read it")
                alerts[message.name.documentID] = world.stableDevices.filter { recipients.contains($0.value) }.map(\.key)
            }
        }
        for person in world.people {
            guard let user = users[person.id] else {
                outcome.expect(false, "user \(person.id) is missing")
                continue
            }
            let badge = badges(person.id)
            outcome.expect(
                badge == unreadTotals[person.id, default: 0],
                "badge of \(person.id) is \(badge.map(String.init) ?? "missing"), truth \(unreadTotals[person.id, default: 0])")
            let roaming = Set(schema.tokens(of: user)).intersection(world.roamingDevices)
            let truth = Set(owners.filter { $0.value == person.id }.map(\.key))
            outcome.expect(roaming == truth, "\(person.id) holds roaming devices \(roaming.sorted()), truth \(truth.sorted())")
        }
        checkPushes(pushes, alerts: alerts, &outcome)
        checkLastBadges(pushes, badges: badges, &outcome)
        return outcome
    }

    /// What each phone shows in the end: the last push each device got (in the order FCM took them)
    /// carries its user's unread total as stored, 0 for a user who read everything. Roaming devices
    /// change hands, so only the devices that never do are checked.
    /// - badges: each user's stored badge, by user id.
    func checkLastBadges(_ pushes: [JSONValue], badges: (String) -> Int64?, _ outcome: inout Outcome) {
        let last = DeviceBadges.last(in: pushes)
        for (token, user) in world.stableDevices.sorted(by: { $0.key < $1.key }) {
            guard let shown = last[token] else { continue }
            let stored = badges(user)
            outcome.expect(shown == stored, "the last push to \(token) shows badge \(shown), \(user)'s stored total is \(stored.map(String.init) ?? "missing")")
            outcome.badgesChecked += 1
        }
    }

    /// Each (message, device) pair: exactly one alert for a recipient's own devices, at most one for a
    /// roaming device (who held it when the message came is a race), none to anybody else.
    func checkPushes(_ pushes: [JSONValue], alerts: [String: [String]], _ outcome: inout Outcome) {
        var counts: [String: [String: Int]] = [:]
        for push in pushes {
            guard let message = push["message"], message["notification"] != nil,
                let id = message["data"]?["messageId"]?.stringValue, let token = message["token"]?.stringValue
            else { continue }
            counts[id, default: [:]][token, default: 0] += 1
        }
        for (id, tokens) in alerts {
            for token in tokens {
                let count = counts[id]?[token] ?? 0
                let user = world.stableDevices[token]
                let resent = wasResent(id, to: token)
                let neverAnswered = user.map { unanswered.twice.contains("\(id)/\($0)") } ?? false
                if count == 0 && neverAnswered { outcome.unansweredUndelivered += 1 }
                if count == 2 && resent { outcome.resentDeliveredTwice += 1 }
                outcome.expect(
                    count == 1 || (count == 0 && neverAnswered) || (count == 2 && resent) || (count > 1 && interrupted.contains(id)),
                    "\(id) → \(token): \(count) pushes")
            }
        }
        for (id, (conversation, sender)) in unsent {
            // No push (deleted before its event was handled) or one, to the recipients' own devices only.
            let members = world.conversations.first { $0.id == conversation }?.members ?? []
            let recipients = Set(world.stableDevices.filter { members.contains($0.value) && $0.value != sender }.map(\.key))
            for (token, count) in counts[id] ?? [:] {
                outcome.expect(
                    (count == 1 || interrupted.contains(id)) && (recipients.contains(token) || world.roamingDevices.contains(token)),
                    "unsent \(id) → \(token): \(count) pushes")
            }
        }
        for (id, tokens) in counts {
            let expected = Set(alerts[id] ?? [])
            for (token, count) in tokens {
                if count > 1 {
                    // A process killed after FCM accepted a push and before the ledger recorded it sends
                    // it again: FCM takes no idempotency key. A push its service did not answer is sent once more
                    // on purpose. Either repeat has the same collapse key, tag and apns-collapse-id, so the
                    // device replaces the notification. Anything else is a bug.
                    if interrupted.contains(id) {
                        outcome.repeatsAfterKill += count - 1
                    } else if !(count == 2 && wasResent(id, to: token)) {
                        outcome.duplicatesEmitted += count - 1
                    }
                }
                outcome.expect(
                    expected.contains(token) || (world.roamingDevices.contains(token) && (count == 1 || (count == 2 && wasResent(id, to: token))))
                        || unsent[id] != nil
                        || (interrupted.contains(id) && (expected.contains(token) || world.roamingDevices.contains(token))),
                    "\(id) → \(token): \(count) pushes to a device that is not a recipient's")
            }
        }
    }

    /// Whether the function sent this message's push to this device once more after its push service did not answer
    /// (a roaming device: to whichever user held it).
    func wasResent(_ id: String, to token: String) -> Bool {
        let pairs = unanswered.once.union(unanswered.twice)
        if let user = world.stableDevices[token] { return pairs.contains("\(id)/\(user)") }
        return world.roamingDevices.contains(token) && pairs.contains { $0.hasPrefix("\(id)/") }
    }

    func expectLast(_ newest: FirestoreDocument, in conversation: FirestoreDocument, _ id: String, _ outcome: inout Outcome) {
        switch schema.lastMessage {
        case .map(let field):
            let last = conversation[field]?.mapValue?["messageId"]?.stringValue
            // A newer message that was unsent may stay shown as the last one: deleting does not move it back.
            let unsentNewer = last.map { unsent[$0] != nil && (Int($0.dropFirst()) ?? -1) > number(of: newest) } ?? false
            outcome.expect(last == newest.name.documentID || unsentNewer, "\(id): last message \(last ?? "none"), newest \(newest.name.documentID)")
        case .flat(_, _, _, let timestamp?):
            outcome.expect(
                conversation[timestamp] == Schema.value(of: schema.timestampField, in: newest), "\(id): last message time is not the newest message's")
        case .flat:
            break
        }
    }

    func number(of message: FirestoreDocument) -> Int { Int(message.name.documentID.dropFirst()) ?? -1 }
    func sender(of message: FirestoreDocument) -> String? { Schema.value(of: schema.senderIDField, in: message)?.stringValue }
    func readers(of message: FirestoreDocument) -> Set<String> {
        Set(Schema.userIDs(in: message[schema.readByField]) ?? [])
    }

    /// Every document of a top-level collection, by id.
    func all(_ query: StructuredQuery) async throws -> [String: FirestoreDocument] {
        var documents: [String: FirestoreDocument] = [:]
        try await app.forEachPage(of: query) { page in
            for document in page { documents[document.name.documentID] = document }
        }
        return documents
    }
}

/// A chaos run's figures and findings.
public struct ChaosReport: Sendable, CustomStringConvertible {
    public var messages: Int
    public var users: Int
    public var conversations: Int
    /// Events the local cloud delivered (or dead-lettered), and delivery attempts in all.
    public var events: Int
    public var attempts: Int
    /// Injected API faults by `api.kind`.
    public var faults: [String: Int]
    public var injectedDuplicates: Int
    public var droppedAnswers: Int
    /// Message events delivered without their data; messages unsent; pushes their service answered too late for the function.
    public var dataOmitted: Int
    public var unsent: Int
    /// Pushes their service answered too late (sent once more), and of those, the ones unanswered again.
    public var unanswered: Int
    public var unansweredTwice: Int
    /// Devices that got both sends of an unanswered push (the same collapse identifiers: one alert).
    public var resentDeliveredTwice: Int
    /// Alerts FCM never took: unanswered twice and never delivered.
    public var unansweredUndelivered: Int
    public var kills: Int
    public var restarts: Int
    /// Deliveries a function recognised as already applied.
    public var duplicatesSeen: Int
    public var pushesRecorded: Int
    /// Pushes beyond the first for one (message, device), not explained by a kill in the send window.
    public var duplicatesEmitted: Int
    /// Pushes sent again because a kill fell between FCM's accept and the ledger's record.
    public var repeatsAfterKill: Int
    /// onMessageCreated deliveries cut off by a kill.
    public var interruptedDeliveries: Int
    public var checks: Int
    /// Devices whose last push was checked against their user's stored total.
    public var badgesChecked: Int
    public var mismatches: [String]
    public var deadLetters: [String]
    public var writerErrors: Int
    /// Pushes a function gave up on as failed for good (FCM refused them).
    public var pushesGivenUp: Int
    public var driven: Duration
    public var settled: Duration

    static func seconds(_ duration: Duration) -> String { String(format: "%.1f s", Double(duration / .milliseconds(1)) / 1000) }

    /// Function processes that died without being killed.
    public var crashes: Int { max(0, restarts - kills) }

    /// Nothing lost, nothing twice, nothing crashed.
    public var passed: Bool { mismatches.isEmpty && duplicatesEmitted == 0 && deadLetters.isEmpty && crashes == 0 }

    public var description: String {
        let faultLines = faults.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        return """
            chaos: \(users) users, \(conversations) conversations, \(messages) messages in \(Self.seconds(driven)) + \(Self.seconds(settled)) to settle
              events \(events) (\(attempts) delivery attempts), pushes recorded \(pushesRecorded)
              faults injected \(faults.values.reduce(0, +)): \(faultLines.isEmpty ? "none" : faultLines)
              deliveries duplicated \(injectedDuplicates), answers dropped \(droppedAnswers), without data \(dataOmitted); function processes killed \(kills), restarted \(restarts), crashed \(crashes)
              messages unsent \(unsent); pushes answered too late \(unanswered), sent once more (both delivered \(resentDeliveredTwice), unanswered again \(unansweredTwice), never delivered \(unansweredUndelivered))
              duplicates seen \(duplicatesSeen), duplicates emitted \(duplicatesEmitted); message deliveries cut off by a kill \(interruptedDeliveries), pushes repeated after one \(repeatsAfterKill)
              dead letters \(deadLetters.count), pushes given up \(pushesGivenUp), app write errors \(writerErrors)
              checks \(checks) (the last badge of \(badgesChecked) devices among them), mismatches \(mismatches.count)
            """ + mismatches.prefix(20).map { "\n    ✗ \($0)" }.joined() + deadLetters.prefix(10).map { "\n    dead: \($0)" }.joined()
    }
}
