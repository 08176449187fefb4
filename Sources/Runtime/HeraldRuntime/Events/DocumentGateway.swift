import FirestoreEvents
import FirestoreModel
import HeraldCore
import SystemAccess
import WireFormats

/// The runtime's side of a function's I/O: read documents, and carry out a plan.
public protocol DocumentGateway: Sendable {
    func read(_ names: [DocumentName]) async throws -> DocumentsRead
    /// Every document of each collection (a bounded number: these are small collections such as a user's tokens).
    func list(_ collections: [CollectionPath]) async throws -> [CollectionPath: [FirestoreDocument]]
    /// The documents each lookup finds (at most `ValueLookup.maximumFound` each).
    func lookUp(_ lookups: [ValueLookup]) async throws -> [ValueLookup: [FirestoreDocument]]
    /// Carries the plan out exactly once for this event, as it was delivered (a redelivery reports `.duplicate`);
    /// of a plan `skipUnlessStarted`, what this event's ledger holds pending (`.skipped` without an entry).
    /// - delivery: this delivery's name, the same for every plan tried in it (`newDeliveryName()`): what
    ///   one try committed, a later try of the same delivery knows as its own.
    func execute(_ plan: Plan, for event: DocumentChange, delivery: String) async throws -> EffectsReport.Outcome
    /// True when nothing is written or sent, only planned.
    var isDryRun: Bool { get }
    /// The document at `path` as this gateway names it, where its documents carry names of their own (a
    /// snapshot's, with their project); nil where the caller's project and database name it.
    func documentName(atPath path: String) -> DocumentName?
    /// Where its documents are, as a message says it ("in the documents file"); nil for a project's Firestore.
    var documentsPlace: String? { get }
}

extension DocumentGateway {
    public func documentName(atPath path: String) -> DocumentName? { nil }
    public var documentsPlace: String? { nil }
}

/// A new delivery's name: 16 random hex digits (a ledger claim's key).
public func newDeliveryName() -> String {
    let digits = Array("0123456789abcdef".utf8)
    return String(decoding: (0..<16).map { _ in digits[Int.random(in: 0..<16)] }, as: UTF8.self)
}

/// Documents from a JSON snapshot file, for running a function fully offline (`--documents FILE`).
/// Nothing is ever written: executing a plan only reports it.
public struct SnapshotGateway: DocumentGateway {
    public let documents: [DocumentName: FirestoreDocument]
    public var isDryRun: Bool { true }
    public var documentsPlace: String? { "in the documents file" }
    public func documentName(atPath path: String) -> DocumentName? { documents.keys.first { $0.path == path } }

    public init(documents: [FirestoreDocument]) {
        self.documents = Dictionary(documents.map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
    }

    /// Reads `{"documents": [Document, …]}` or a bare array of documents, in Firestore's REST JSON.
    public init(contentsOf path: String) throws {
        let bytes: [UInt8]
        do { bytes = try LocalFile.read(path) } catch { throw SnapshotError("cannot read \(error)") }
        let json: JSONValue
        do { json = try JSONValue(parsing: bytes) } catch { throw SnapshotError("\(path): \(error)") }
        guard let list = json.arrayValue ?? json["documents"]?.arrayValue else {
            throw SnapshotError("\(path): expected {\"documents\": [...]} or an array of Firestore documents")
        }
        var documents: [FirestoreDocument] = []
        for (i, item) in list.enumerated() {
            do {
                guard let document = try FirestoreJSON.document(from: item, path: "documents[\(i)]") else {
                    throw FirestoreJSONError(path: "documents[\(i)]", reason: "empty document")
                }
                documents.append(document)
            } catch { throw SnapshotError("\(path): \(error)") }
        }
        self.init(documents: documents)
    }

    public func read(_ names: [DocumentName]) async throws -> DocumentsRead {
        DocumentsRead.answering(NotReadYet(documents: names), from: documents)
    }

    public func list(_ collections: [CollectionPath]) async throws -> [CollectionPath: [FirestoreDocument]] {
        DocumentsRead.answering(NotReadYet(collections: collections), from: documents).collections
    }

    public func lookUp(_ lookups: [ValueLookup]) async throws -> [ValueLookup: [FirestoreDocument]] {
        DocumentsRead.answering(NotReadYet(lookups: lookups), from: documents).lookups
    }

    public func execute(_ plan: Plan, for event: DocumentChange, delivery: String) async throws -> EffectsReport.Outcome { .applied }
}

public struct SnapshotError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
