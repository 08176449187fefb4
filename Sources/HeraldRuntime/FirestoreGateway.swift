import Crypto
import Foundation
import FirestoreEvents
import FirestoreModel
import GoogleClients
import HeraldCore
import Logging

/// Reads from Firestore and carries plans out exactly once per (function, event):
/// 1. the plan's writes and a ledger document are committed atomically, the ledger with the
///    precondition that it does not exist yet: if it does, this event was applied before;
/// 2. pushes not yet marked sent in the ledger are sent, and the ledger records what became of them,
///    so a redelivery after a crash sends only what is still pending;
/// 3. whoever sends holds a claim on the ledger (`claimedAt`) until it has recorded the outcome: a
///    redelivery that arrives while the first is still sending (a trigger's timeout) answers 503
///    instead of sending the same pushes again, and takes over only once the claim is older than
///    `pushLease` (its holder crashed).
/// A dry run reads for real and writes and sends nothing.
public struct FirestoreGateway: DocumentGateway {
    public let firestore: FirestoreClient
    public let fcm: FCMClient?
    public let isDryRun: Bool
    public let functionName: String
    /// Ledger documents live at `{ledgerCollection}/{key}`; they carry `expireAt` for a TTL policy.
    public let ledgerCollection: String
    public let ledgerLifetime: TimeInterval
    /// How long a claim on an event's pushes holds before another delivery may take them over; longer
    /// than a send can take (the Cloud Run request timeout, 60 s).
    public let pushLease: TimeInterval
    let logger: Logger

    public init(firestore: FirestoreClient, fcm: FCMClient?, functionName: String, dryRun: Bool, logger: Logger,
                ledgerCollection: String = "_herald/events/ledger", ledgerLifetime: TimeInterval = 7 * 86_400, pushLease: TimeInterval = 60) {
        self.firestore = firestore
        self.fcm = fcm
        self.isDryRun = dryRun
        self.functionName = functionName
        self.ledgerCollection = ledgerCollection
        self.ledgerLifetime = ledgerLifetime
        self.pushLease = pushLease
        self.logger = logger
    }

    public func read(_ names: [DocumentName]) async throws -> DocumentsRead {
        do {
            var read = DocumentsRead()
            for (name, document) in try await firestore.batchGet(names) {
                if let document { read.found[name] = document } else { read.missing.insert(name) }
            }
            return read
        } catch { throw Self.classify(error) }
    }

    public static let maximumListed = 100

    public func list(_ collections: [CollectionPath]) async throws -> [CollectionPath: [FirestoreDocument]] {
        try await runQueries(collections) { (StructuredQuery(collectionID: $0.collectionID, limit: Self.maximumListed), $0.parent) }
    }

    public func lookUp(_ lookups: [ValueLookup]) async throws -> [ValueLookup: [FirestoreDocument]] {
        try await runQueries(lookups) { ($0.query, nil) }
    }

    /// One query per key, all at once: what each key's query (and parent, nil for the root) found.
    func runQueries<Key: Hashable & Sendable>(
        _ keys: [Key], _ query: @escaping @Sendable (Key) -> (StructuredQuery, DocumentName?)
    ) async throws -> [Key: [FirestoreDocument]] {
        do {
            return try await withThrowingTaskGroup(of: (Key, [FirestoreDocument]).self) { group in
                for key in keys {
                    group.addTask {
                        let (structured, parent) = query(key)
                        return (key, try await firestore.runQuery(structured, parent: parent))
                    }
                }
                var result: [Key: [FirestoreDocument]] = [:]
                for try await (key, documents) in group { result[key] = documents }
                return result
            }
        } catch { throw Self.classify(error) }
    }

    /// The ledger document for this function and this write. A write is known by its document, kind and
    /// the document's update time, so one write delivered under two event ids is still caught; an event
    /// without document data falls back on its id. Hashed, so any of these makes a valid document id.
    public func ledgerName(for change: DocumentChange) throws -> DocumentName {
        let identity: String
        if let time = change.newDocument?.updateTime ?? change.oldDocument?.updateTime {
            identity = "\(functionName)\n\(change.document.resourceName)\n\(change.effectiveKind.rawValue)\n\(time.rfc3339)"
        } else {
            identity = "\(functionName)\n\(change.eventID)"
        }
        let key = SHA256.hash(data: Data(identity.utf8)).map { String(format: "%02x", $0) }.joined()
        return try DocumentName(project: firestore.project, database: firestore.database, path: "\(ledgerCollection)/\(key)")
    }

    public func execute(_ plan: Plan, for change: DocumentChange) async throws -> EffectsReport.Outcome {
        if isDryRun { return .applied }
        let ledger = try ledgerName(for: change)
        var duplicate = false
        var pending = plan.pushes
        do {
            let entry = Write(.update(ledger, fields: [
                "function": .string(functionName), "eventId": .string(change.eventID), "document": .string(change.document.path),
                "expireAt": .timestamp(Timestamp(seconds: Int64(Date().timeIntervalSince1970 + ledgerLifetime))),
                "pushes": .map(Dictionary(plan.pushes.map { ($0.token, FirestoreValue.string("pending")) }, uniquingKeysWith: { first, _ in first })),
            ], mask: nil), transforms: [FieldTransform(FieldPath("appliedAt"), .setToRequestTime)]
                + (plan.pushes.isEmpty ? [] : [FieldTransform(FieldPath("claimedAt"), .setToRequestTime)]), precondition: .exists(false))
            _ = try await firestore.commit(plan.writes + [entry])
        } catch let error as GoogleAPIError where error.status == .alreadyExists {
            // Applied before, if the ledger says so. Send only what it still has pending.
            guard let entry = try await read([ledger])[ledger] else { throw Self.classify(error) }
            duplicate = true
            let states = entry["pushes"]?.mapValue ?? [:]
            pending = plan.pushes.filter { states[$0.token] == .string("pending") }
            if !pending.isEmpty { try await claim(entry) }
        } catch let error as GoogleAPIError where error.status == .notFound || error.status == .failedPrecondition {
            // A document the plan relied on changed between the read and the commit. Nothing was
            // written; a retry reads again and plans again.
            throw DownstreamError.changedDuringPlanning("a document changed while the event was planned (\(error.message))")
        } catch {
            throw Self.classify(error)
        }
        if !pending.isEmpty {
            try await send(pending, ledger: ledger)
        }
        return duplicate && pending.isEmpty ? .duplicate : .applied
    }

    /// Takes the pending pushes of an event applied before, unless another delivery is sending them now.
    func claim(_ entry: FirestoreDocument) async throws {
        if let claimedAt = entry["claimedAt"]?.timestampValue {
            let age = Date().timeIntervalSince(claimedAt.date)
            if age < pushLease {
                throw DownstreamError.unavailable("another delivery of this event is sending its pushes (claimed \(Int(age)) s ago)",
                                                  retryAfterSeconds: Int(pushLease - age) + 1)
            }
        }
        guard let version = entry.updateTime else { throw DownstreamError.unavailable("the ledger entry has no version") }
        do {
            _ = try await firestore.commit([Write(.update(entry.name, fields: [:], mask: []),
                                                  transforms: [FieldTransform(FieldPath("claimedAt"), .setToRequestTime)],
                                                  precondition: .updateTime(version))])
        } catch let error as GoogleAPIError where error.status == .failedPrecondition || error.status == .notFound {
            throw DownstreamError.unavailable("another delivery of this event took its pushes over")
        } catch {
            throw Self.classify(error)
        }
    }

    func send(_ pushes: [PushMessage], ledger: DocumentName) async throws {
        guard let fcm else { throw DownstreamError.rejected("the plan has pushes but no FCM client is configured") }
        let results = await fcm.sendAll(pushes.map(\.message))
        var marks: [String: FirestoreValue] = [:]
        var retryable: [(String, Int?)] = []
        var removals: [Write] = []
        for (push, result) in zip(pushes, results) {
            switch result {
            case .sent: marks[push.token] = .string("sent")
            case .dead(let reason):
                marks[push.token] = .string("dead")
                logger.info("token of \(push.userID) is dead (\(reason)); removing it")
                if let removal = push.removal { removals.append(removal) }
            case .failed(let reason, true, let after):
                retryable.append((reason, after))
            case .failed(let reason, false, _):
                // Not transient: the message is already in the app; a push that can never go is not retried.
                marks[push.token] = .string("failed")
                logger.error("push to a device of \(push.userID) failed for good: \(reason)")
            }
        }
        // What became of each push, and the claim released (masked and absent: deleted) so a redelivery
        // for the transient failures may send them at once.
        // The pushes are out: losing this record would send them again, so it is retried for as long as
        // half the lease, even when a failure leaves unknown whether it was applied (writing it twice is harmless).
        let mask = marks.keys.map { FieldPath("pushes", $0) } + [FieldPath("claimedAt")]
        let budget = RetryPolicy(maximumAttempts: 100, initialDelay: .milliseconds(50), maximumDelay: .seconds(2),
                                 totalBudget: .milliseconds(Int64(pushLease * 500)))
        do {
            _ = try await firestore.commitIdempotent([Write(.update(ledger, fields: marks.isEmpty ? [:] : ["pushes": .map(marks)], mask: mask),
                                                            precondition: .exists(true))], retry: budget)
        } catch { throw Self.classify(error) }
        for removal in removals {
            // One at a time and best effort: a token changed since it was read must not be removed,
            // and its precondition failing must not fail the event.
            do { _ = try await firestore.commit([removal]) } catch {
                logger.info("kept a dead token that changed since it was read: \(error)")
            }
        }
        if let (reason, _) = retryable.first {
            let after = retryable.compactMap(\.1).max()
            let message = "\(retryable.count) of \(pushes.count) pushes failed transiently (\(reason))"
            throw after.map { DownstreamError.throttled(message, retryAfterSeconds: $0) } ?? DownstreamError.unavailable(message)
        }
    }

    /// Google's answers, as what the trigger should do.
    static func classify(_ error: any Error) -> any Error {
        switch error {
        case let api as GoogleAPIError:
            switch api.status {
            case .unavailable, .deadlineExceeded, .aborted, .internal, .unknown:
                return DownstreamError.unavailable("Firestore: \(api)", retryAfterSeconds: api.retryAfterSeconds)
            case .resourceExhausted:
                return DownstreamError.throttled("Firestore: \(api)", retryAfterSeconds: api.retryAfterSeconds)
            case .unauthenticated, .permissionDenied:
                // Usually an IAM change away from working: let the trigger retry rather than drop the event.
                return DownstreamError.unavailable("Firestore refused the credentials: \(api)")
            default:
                return DownstreamError.rejected("Firestore: \(api)")
            }
        case let transport as TransportError:
            return DownstreamError.unavailable("Firestore unreachable: \(transport)")
        case let auth as AuthError:
            return DownstreamError.unavailable(auth.description)
        case let downstream as DownstreamError:
            return downstream
        default:
            return error
        }
    }
}
