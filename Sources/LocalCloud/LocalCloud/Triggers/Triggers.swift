import EmbeddedFirestore
import FirestoreEvents
import FirestoreModel
import Foundation
import Synchronization
import WireFormats

/// One Eventarc-style trigger: Firestore events of one kind on documents matching a pattern,
/// delivered to an HTTP endpoint as CloudEvents in binary mode.
public struct TriggerRegistration: Sendable, Hashable {
    public enum ContentType: String, Sendable, Hashable {
        case protobuf = "application/protobuf"
        case json = "application/json"
    }

    public var name: String
    public var pattern: String
    public var kind: DocumentChange.Kind
    public var url: String
    /// Other instances of the same service (`herald dev --instances N`): each delivery goes to one of
    /// `url` and these with the fewest deliveries in flight, as Cloud Run routes Eventarc's requests to
    /// an instance with a free slot; the identity token's audience stays `url`'s, the service's.
    public var instances: [String] = []
    /// The identity token's audience: the service's URL (by default `url`'s scheme, host and port).
    public var audience: String?
    /// Requests one instance takes at once (Cloud Run's `containerConcurrency`): the service has at most
    /// this many deliveries per instance in flight; nil, the local cloud's default for a service.
    public var concurrency: Int?
    public var contentType: ContentType
    /// `projects/P/databases/D`; nil matches every database.
    public var database: String?

    public init(name: String, pattern: String, kind: DocumentChange.Kind, url: String, contentType: ContentType = .protobuf, database: String? = nil) {
        self.name = name
        self.pattern = pattern
        self.kind = kind
        self.url = url
        self.contentType = contentType
        self.database = database
    }

    public var eventType: String { "google.cloud.firestore.document.v1.\(kind.rawValue)" }

    /// The audience of the identity token a delivery carries.
    var tokenAudience: String { audience ?? Self.audience(of: url) }

    /// The audience of the identity token a delivery carries: the destination's scheme, host and port
    /// with a `/` path, as a Cloud Run service URL is.
    public static func audience(of url: String) -> String {
        guard let components = URLComponents(string: url), let scheme = components.scheme, let host = components.host else { return url }
        return "\(scheme)://\(host)\(components.port.map { ":\($0)" } ?? "")/"
    }

    func matches(_ change: LocalFirestore.Change) -> Bool {
        if let database, database != change.name.databaseName { return false }
        guard DocumentPattern(pattern).match(change.name) != nil else { return false }
        switch (kind, change.before, change.after) {
        case (.written, _, _): return true
        case (.created, nil, .some), (.updated, .some, .some), (.deleted, .some, nil): return true
        default: return false
        }
    }
}

/// The triggers in force; `herald dev` and tests register them, at start or while running.
public final class TriggerRegistry: Sendable {
    let triggers = Mutex<[String: TriggerRegistration]>([:])

    public init(_ initial: [TriggerRegistration] = []) {
        triggers.withLock { for t in initial { $0[t.name] = t } }
    }

    public func register(_ trigger: TriggerRegistration) { triggers.withLock { $0[trigger.name] = trigger } }

    /// A function's trigger for these kinds of change: one registration per kind, as Eventarc takes one
    /// event type per trigger (the first named after the function); every kind at once is `written`.
    public func register(
        function name: String, pattern: String, kinds: Set<DocumentChange.Kind>, url: String, instances: [String] = [], audience: String? = nil,
        concurrency: Int? = nil
    ) {
        let each: [DocumentChange.Kind] =
            kinds.contains(.written) || kinds.isSuperset(of: [.created, .updated, .deleted])
            ? [.written] : kinds.sorted { $0.rawValue > $1.rawValue }
        for (index, kind) in each.enumerated() {
            var registration = TriggerRegistration(name: index == 0 ? name : "\(name)-\(kind.rawValue)", pattern: pattern, kind: kind, url: url)
            registration.instances = instances
            registration.audience = audience
            registration.concurrency = concurrency
            register(registration)
        }
    }
    public func remove(_ name: String) { triggers.withLock { _ = $0.removeValue(forKey: name) } }
    public subscript(name: String) -> TriggerRegistration? { triggers.withLock { $0[name] } }
    public var all: [TriggerRegistration] { triggers.withLock { $0.values.sorted { $0.name < $1.name } } }
}

/// Writes the events of each commit into the `deliveries` table, inside the commit's own SQLite
/// transaction: a change is never committed without its events, and events survive restarts.
final class EventOutbox: Sendable {
    let registry: TriggerRegistry
    let location: String
    let wake: @Sendable () -> Void

    init(registry: TriggerRegistry, location: String = "local", wake: @escaping @Sendable () -> Void) {
        self.registry = registry
        self.location = location
        self.wake = wake
    }

    /// What the local Firestore calls with each commit.
    var observer: CommitObserver {
        CommitObserver(
            record: { changes, time, trace, caller, db in try self.enqueue(changes, commitTime: time, trace: trace, caller: caller, db) }, committed: wake)
    }

    /// - trace: the trace of the event whose function made the changes: recorded with each change, and as
    ///   the source of the events they cause.
    /// - caller: who wrote them (a signed-in user), recorded with the events they cause.
    func enqueue(_ changes: [LocalFirestore.Change], commitTime: Timestamp, trace: String? = nil, caller: String? = nil, _ db: Database) throws {
        let triggers = registry.all
        let now = Date().timeIntervalSince1970
        for change in changes {
            if let trace {
                let kind = change.before == nil ? "created" : change.after == nil ? "deleted" : "updated"
                try db.execute(
                    sql: "INSERT INTO trace_writes (trace_id, document, kind, at) VALUES (?, ?, ?, ?)",
                    arguments: [trace, change.name.path, kind, now])
            }
            for trigger in triggers where trigger.matches(change) {
                let event = DocumentChange(
                    eventID: UUID().uuidString.lowercased(), kind: trigger.kind, time: commitTime, document: change.name,
                    oldDocument: change.before, newDocument: change.after,
                    updateMask: change.before != nil && change.after != nil ? DocumentChange.updateMask(change.before!.fields, change.after!.fields) : nil
                )
                let (headers, body) = Self.cloudEvent(event, type: trigger.eventType, contentType: trigger.contentType, location: location)
                try db.execute(
                    sql: """
                        INSERT INTO deliveries (trigger, event_id, event_type, document, headers, body, next_attempt_at, created_at,
                            trace_id, source_trace, writer)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        trigger.name, event.eventID, trigger.eventType, change.name.path,
                        JSONValue.object(headers.mapValues { .string($0) }).serialized(), body, now, now,
                        TraceParent.newTraceID(), trace, caller,
                    ])
            }
        }
    }

    /// Eventarc's binary-mode CloudEvent for a Firestore change: `ce-*` attributes and the data.
    static func cloudEvent(_ event: DocumentChange, type: String, contentType: TriggerRegistration.ContentType, location: String) -> ([String: String], Data) {
        let name = event.document
        let headers = [
            "ce-id": event.eventID, "ce-source": "//firestore.googleapis.com/\(name.databaseName)", "ce-specversion": "1.0",
            "ce-type": type, "ce-subject": "documents/\(name.path)", "ce-time": event.time.rfc3339,
            "ce-database": name.database, "ce-namespace": "(default)", "ce-document": name.path,
            "ce-location": location, "ce-project": name.project, "content-type": contentType.rawValue,
        ]
        let body = contentType == .protobuf ? Data(event.protobufData()) : Data(event.jsonData().serialized().utf8)
        return (headers, body)
    }
}
