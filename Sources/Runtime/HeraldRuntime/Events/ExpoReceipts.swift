import FirestoreModel
import GoogleClients
import HeraldCore
import Logging
import PushClients
import PushTokens
import WireFormats

/// Expo's ticket says it took a notification; its receipt, ready within about 15 minutes and kept for
/// about a day, says whether Apple or Google took it from Expo. A `DeviceNotRegistered` receipt is a
/// dead token, as a ticket's is.
///
/// The tickets of an event's Expo pushes are kept in its ledger entry, in the record of its pushes
/// (`expoTickets.{ticket}`: the token, its user, the write that removes it; `expoTicketsAt`: when):
/// no write of its own. The daily pass of a function that reads receipts (`tokenCleanup`) asks Expo
/// for those at least 15 minutes old, removes the tokens Expo names dead (the same guard as a send's
/// judges the batch), and forgets each ticket once its receipt came, or once it is a day old and Expo
/// has none.
enum ExpoReceipts {
    static let sweepLabel = "expo receipts"
    static let ticketsField = "expoTickets"
    static let sentAtField = "expoTicketsAt"
    /// Expo's receipts are ready within about 15 minutes, and kept for about a day.
    static let readyAfter: Int64 = 15 * 60
    static let forgottenAfter: Int64 = 86_400

    /// The ledger fields (and their mask) that keep the tickets of the Expo pushes sent: ids Expo gave,
    /// those a field name can hold.
    static func record(_ sent: [(push: PushMessage, result: SendResult)], at time: Timestamp) -> (fields: [String: FirestoreValue], mask: [FieldPath]) {
        var tickets: [String: FirestoreValue] = [:]
        for (push, result) in sent where PushToken.kind(of: push.token) == .expo {
            guard case .sent(let id) = result, (1...128).contains(id.utf8.count), FirestoreNames.fieldNameProblem(id) == nil else { continue }
            var ticket: [String: FirestoreValue] = ["token": .string(push.token), "user": .string(push.userID)]
            if let removal = push.removal { ticket["removal"] = .string(removal.json.serialized()) }
            tickets[id] = .map(ticket)
        }
        guard !tickets.isEmpty else { return ([:], []) }
        return (
            [ticketsField: .map(tickets), sentAtField: .timestamp(time)],
            tickets.keys.sorted().map { FieldPath(ticketsField, $0) } + [FieldPath(sentAtField)]
        )
    }

    /// What one pass did.
    struct Counts: Sendable {
        var asked = 0
        var dead = 0
        var forgotten = 0
    }

    /// Reads the receipts of the tickets kept in `ledger` (a collection path) and acts on them.
    static func pass(
        ledger: String, firestore: any FirestoreAPI, expo: ExpoPushClient, deadTokens: DeadTokenGuard, at now: Timestamp, dryRun: Bool,
        logger: Logger
    ) async throws -> Counts {
        let segments = ledger.split(separator: "/").map(String.init)
        guard let collection = segments.last else { return Counts() }
        let parent =
            segments.count > 1
            ? try DocumentName(project: firestore.project, database: firestore.database, path: segments.dropLast().joined(separator: "/")) : nil
        let query = StructuredQuery(
            collectionID: collection, filter: .field(FieldPath(sentAtField), .lessThan, .timestamp(Timestamp(seconds: now.seconds - readyAfter, nanos: 0))),
            orderBy: [StructuredQuery.Order(FieldPath(sentAtField))])
        var counts = Counts()
        try await firestore.forEachPage(of: query, parent: parent, pageSize: 300) { entries in
            var asked: [(entry: FirestoreDocument, id: String, push: PushMessage)] = []
            for entry in entries {
                for (id, value) in entry[ticketsField]?.mapValue ?? [:] {
                    guard let ticket = value.mapValue, let token = ticket["token"]?.stringValue else { continue }
                    let removal = ticket["removal"]?.stringValue.flatMap { try? JSONValue(parsing: $0) }.flatMap {
                        try? RequestDecoding.write($0, path: "removal")
                    }
                    let push = PushMessage(userID: ticket["user"]?.stringValue ?? "", token: token, fcm: FCMMessage(token: token), removal: removal)
                    asked.append((entry, id, push))
                }
            }
            counts.asked += asked.count
            guard !asked.isEmpty, !dryRun else { return }
            let receipts = try await expo.receipts(asked.map(\.id))
            let answered = asked.compactMap { item in receipts[item.id].map { (item.push, $0) } }
            let outcome = deadTokens.judge(answered, logger: logger)
            counts.dead += outcome.marks.values.filter { $0 == .dead }.count
            for (push, result) in answered {
                if case .failed(let reason, _, _) = result { logger.warning("Expo's receipt for a push to a device of \(push.userID): \(reason)") }
            }
            // Each entry loses the tickets answered, and those a day old that Expo no longer knows.
            var updates: [Write] = []
            for entry in Dictionary(grouping: asked, by: { $0.entry.name }).values {
                let document = entry[0].entry
                let sentAt = document[sentAtField]?.timestampValue?.seconds ?? 0
                let done = entry.filter { receipts[$0.id] != nil || now.seconds - sentAt > forgottenAfter }
                counts.forgotten += done.filter { receipts[$0.id] == nil }.count
                guard !done.isEmpty, let version = document.updateTime else { continue }
                let emptied = done.count == (document[ticketsField]?.mapValue?.count ?? 0)
                let mask = done.map { FieldPath(ticketsField, $0.id) } + (emptied ? [FieldPath(sentAtField)] : [])
                updates.append(Write(.update(document.name, fields: [:], mask: mask), precondition: .updateTime(version)))
            }
            for write in outcome.removals + updates {
                do { _ = try await firestore.commit([write], transaction: nil) } catch {
                    logger.info("kept a ledger entry or token that changed since it was read: \(error)")
                }
            }
        }
        return counts
    }
}
