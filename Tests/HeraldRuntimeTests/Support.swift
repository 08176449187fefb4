import FirestoreEvents
import FirestoreModel
import Foundation
import GoogleClients
import HeraldCore
import HeraldRuntime
import HeraldTesting
import Synchronization
import WireFormats

/// A small function for exercising the runtime: a new message in `rooms/{roomId}/messages/{id}`
/// reads its room, copies the text to the room and pushes to every token the room lists.
struct RelayFunction: EventFunction {
    static let name = "relay"
    static let summary = "test function"
    var trigger: Trigger { Trigger(pattern: "rooms/{roomId}/messages/{messageId}", kinds: [.created]) }

    func plan(for change: DocumentChange, reading: Reads) throws(NotReadYet) -> Plan {
        guard let roomName = change.document.parent, let room = try reading.document(roomName) else { return .skip("room missing") }
        guard let text = change.newDocument?["text"] else { return .skip("message has no text") }
        let tokens = room["tokens"]?.arrayValue?.compactMap(\.stringValue) ?? []
        return Plan(
            writes: [
                Write(
                    .update(roomName, fields: ["lastText": text], mask: [FieldPath("lastText")]),
                    transforms: [FieldTransform(FieldPath("count"), .increment(.integer(1)))], precondition: .exists(true))
            ],
            pushes: tokens.map {
                PushMessage(
                    userID: "u", token: $0, fcm: FCMMessage(token: $0, notification: .init(title: "Room", body: text == .null ? "" : text.stringValue ?? "")))
            }
        )
    }
}

/// `RelayFunction` with 600 more documents written, one group each: more than one commit holds, so its
/// plan is laid out in ledger parts and commits on its own.
struct WideRelay: EventFunction {
    static let name = "wide-relay"
    static let summary = "test function"
    var trigger: Trigger { RelayFunction().trigger }

    func plan(for change: DocumentChange, reading: Reads) throws(NotReadYet) -> Plan {
        let relay = try RelayFunction().plan(for: change, reading: reading)
        guard case .apply = relay.decision, let room = change.document.parent else { return relay }
        let groups = (0..<600).compactMap { index -> [Write]? in
            guard let extra = try? room.sibling(path: "\(room.path)/extra/d\(index)") else { return nil }
            return [Write(.update(extra, fields: ["index": .integer(Int64(index))], mask: nil))]
        }
        return Plan(writes: relay.writes, groups: groups, pushes: relay.pushes)
    }
}

/// Fails every read with the given error.
struct FailingGateway: DocumentGateway {
    let error: any Error
    var isDryRun: Bool { false }
    func read(_ names: [DocumentName]) async throws -> DocumentsRead { throw error }
    func list(_ collections: [CollectionPath]) async throws -> [CollectionPath: [FirestoreDocument]] { throw error }
    func lookUp(_ lookups: [ValueLookup]) async throws -> [ValueLookup: [FirestoreDocument]] { throw error }
    func execute(_ plan: Plan, for change: DocumentChange, delivery: String) async throws -> EffectsReport.Outcome { throw error }
}

/// Holds every read until `release()` is called, to keep an event in flight.
final class GatedGateway: DocumentGateway, @unchecked Sendable {
    let inner: SnapshotGateway
    private let (gate, opener) = AsyncStream.makeStream(of: Void.self)
    private let (entered, enteredContinuation) = AsyncStream.makeStream(of: Void.self)
    var isDryRun: Bool { true }

    init(_ inner: SnapshotGateway) { self.inner = inner }

    func read(_ names: [DocumentName]) async throws -> DocumentsRead {
        enteredContinuation.yield()
        for await _ in gate { break }
        return try await inner.read(names)
    }
    func list(_ collections: [CollectionPath]) async throws -> [CollectionPath: [FirestoreDocument]] { try await inner.list(collections) }
    func lookUp(_ lookups: [ValueLookup]) async throws -> [ValueLookup: [FirestoreDocument]] { try await inner.lookUp(lookups) }

    func execute(_ plan: Plan, for change: DocumentChange, delivery: String) async throws -> EffectsReport.Outcome { .applied }

    func waitUntilEntered() async { for await _ in entered { return } }
    func release() {
        opener.yield()
        opener.finish()
    }
}

enum Rooms {
    static let room = try! DocumentName(project: "herald-test", path: "rooms/r1")
    static let message = try! DocumentName(project: "herald-test", path: "rooms/r1/messages/m1")

    static let snapshot = SnapshotGateway(documents: [
        FirestoreDocument(name: room, fields: ["tokens": .array([.string("tok-a"), .string("tok-b")]), "count": .integer(4)])
    ])

    static func created(id: String = "evt-1", document: DocumentName = message, text: String = "hello") -> DocumentChange {
        DocumentChange(
            eventID: id, kind: .created, time: Timestamp(seconds: 1_795_165_200), document: document,
            newDocument: FirestoreDocument(name: document, fields: ["text": .string(text)]))
    }

    /// The change as Eventarc's binary-mode HTTP request: headers and protobuf body.
    static func httpRequest(_ change: DocumentChange, extraHeaders: [String: String] = [:]) throws -> (headers: [String: String], body: [UInt8]) {
        let type = "google.cloud.firestore.document.v1.\(change.kind.rawValue)"
        let event = DecodedEvent(change: change, envelope: EventEnvelope(encoding: .binaryProtobuf, type: type))
        let request = try Fixture.request(from: Array(Fixture.binary(event, json: false).serialized().utf8))
        return (request.headers.merging(extraHeaders) { $1 }, request.body)
    }
}

/// True the first time it is asked, false ever after: a stand-in that misbehaves once.
final class FirstTime: Sendable {
    private let taken = Mutex(false)
    var isTaken: Bool { taken.withLock { $0 } }
    func take() -> Bool {
        taken.withLock { taken in
            defer { taken = true }
            return !taken
        }
    }
}

/// A `FirestoreAPI` that passes every call to a real client: a test that watches or changes only the
/// commits implements `commit` and gets the rest from here.
protocol ForwardingFirestore: FirestoreAPI {
    var inner: FirestoreClient { get }
}

extension ForwardingFirestore {
    var project: String { inner.project }
    var database: String { inner.database }
    func batchGet(_ names: [DocumentName], transaction: String?) async throws -> [DocumentName: FirestoreDocument?] {
        try await inner.batchGet(names, transaction: transaction)
    }
    func runQuery(_ query: StructuredQuery, parent: DocumentName?, transaction: String?) async throws -> [FirestoreDocument] {
        try await inner.runQuery(query, parent: parent, transaction: transaction)
    }
    func forEachPage(of query: StructuredQuery, parent: DocumentName?, pageSize: Int, _ body: ([FirestoreDocument]) async throws -> Void) async throws {
        try await inner.forEachPage(of: query, parent: parent, pageSize: pageSize, body)
    }
    func commitIdempotent(_ writes: [Write], retry: RetryPolicy?, deadline: ContinuousClock.Instant?, essential: Bool) async throws
        -> FirestoreClient.CommitResult
    {
        try await inner.commitIdempotent(writes, retry: retry, deadline: deadline, essential: essential)
    }
    func batchWrite(_ writes: [Write]) async throws -> [FirestoreClient.WriteOutcome] { try await inner.batchWrite(writes) }
}
