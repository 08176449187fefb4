import FirestoreEvents
import FirestoreModel

/// A Herald function: which changes it answers, what it reads, and a pure plan from (change, documents)
/// to effects. Functions do no I/O; the runtime reads, and an executor carries the plan out.
public protocol EventFunction: HeraldFunction {
    /// The document pattern and event kinds this function is deployed behind.
    var trigger: Trigger { get }

    /// The documents the plan needs that are not read yet. The runtime asks again after each batch
    /// (a conversation's members are known only once it is read) until nothing new is wanted.
    func documentsToRead(for change: DocumentChange, alreadyRead: DocumentsRead) -> [DocumentName]

    /// Collections whose documents the plan needs (push tokens kept in `users/{uid}/tokens`), asked
    /// after each read round like `documentsToRead`. Most functions need none.
    func collectionsToList(for change: DocumentChange, alreadyRead: DocumentsRead) -> [CollectionPath]

    /// Documents found by the value they hold (the other users who still have a push token), asked after
    /// each read round like `documentsToRead`. Most functions need none.
    func lookups(for change: DocumentChange, alreadyRead: DocumentsRead) -> [ValueLookup]

    func plan(for change: DocumentChange, documents: DocumentsRead) -> Plan
}

/// Where a function is triggered: a document pattern such as `conversations/{conversationId}/messages/{messageId}`
/// and the event kinds it handles.
public struct Trigger: Sendable, Hashable {
    public var pattern: String
    public var kinds: Set<DocumentChange.Kind>

    public init(pattern: String, kinds: Set<DocumentChange.Kind>) {
        self.pattern = pattern
        self.kinds = kinds
    }

    /// The pattern's wildcards bound to the path's segments, or nil if the path does not match.
    public func match(_ document: DocumentName) -> [String: String]? { DocumentPattern(pattern).match(document) }

    /// Why this trigger does not handle the change, or nil if it does.
    public func refusal(of change: DocumentChange) -> String? {
        guard match(change.document) != nil else {
            return "document \(change.document.path) does not match the trigger pattern \(pattern)"
        }
        guard kinds.contains(change.kind) || kinds.contains(change.effectiveKind) else {
            return "\(change.effectiveKind.rawValue) events need nothing from this function (it handles \(kinds.map(\.rawValue).sorted().joined(separator: ", ")))"
        }
        return nil
    }
}

/// The documents a function asked for: each found, or known missing.
public struct DocumentsRead: Sendable, Hashable {
    public var found: [DocumentName: FirestoreDocument]
    public var missing: Set<DocumentName>
    /// The documents of each collection listed (empty for an empty collection).
    public var collections: [CollectionPath: [FirestoreDocument]]
    /// The documents each lookup found.
    public var lookups: [ValueLookup: [FirestoreDocument]]

    public init(found: [DocumentName: FirestoreDocument] = [:], missing: Set<DocumentName> = [],
                collections: [CollectionPath: [FirestoreDocument]] = [:], lookups: [ValueLookup: [FirestoreDocument]] = [:]) {
        self.found = found
        self.missing = missing
        self.collections = collections
        self.lookups = lookups
    }

    public subscript(name: DocumentName) -> FirestoreDocument? { found[name] }

    /// All names asked for, in a stable order.
    public var names: [DocumentName] { (Array(found.keys) + missing).sorted() }
}

extension EventFunction {
    public func collectionsToList(for change: DocumentChange, alreadyRead: DocumentsRead) -> [CollectionPath] { [] }
    public func lookups(for change: DocumentChange, alreadyRead: DocumentsRead) -> [ValueLookup] { [] }
}

/// The documents of a top-level collection that hold a value in a field: equal to it, containing it
/// (an array), or present at all (a map key such as `notificationTokens.TOKEN`).
public struct ValueLookup: Sendable, Hashable, CustomStringConvertible {
    public enum Match: String, Sendable, Hashable { case equals, arrayContains, present }
    public static let maximumFound = 50

    public var collectionID: String
    public var field: FieldPath
    public var match: Match
    public var value: FirestoreValue

    public init(collectionID: String, field: FieldPath, _ match: Match, _ value: FirestoreValue = .null) {
        self.collectionID = collectionID
        self.field = field
        self.match = match
        self.value = value
    }

    public var description: String { "\(collectionID) where \(field) \(match.rawValue)" }

    public func matches(_ document: FirestoreDocument) -> Bool {
        guard document.name.segments.count == 2, document.name.collectionID == collectionID,
              let held = document.value(at: field) else { return false }
        switch match {
        case .equals: return held == value
        case .arrayContains: return held.arrayValue?.contains(value) ?? false
        case .present: return held != .null
        }
    }

    /// The same lookup as a Firestore query (at most `maximumFound` documents).
    public var query: StructuredQuery {
        let filter: StructuredQuery.Filter = switch match {
        case .equals: .field(field, .equal, value)
        case .arrayContains: .field(field, .arrayContains, value)
        case .present: .unary(field, .isNotNull)
        }
        return StructuredQuery(collectionID: collectionID, filter: filter, limit: Self.maximumFound)
    }
}

/// A collection under a document, e.g. `users/bob` + `tokens`.
public struct CollectionPath: Sendable, Hashable, CustomStringConvertible {
    public var parent: DocumentName
    public var collectionID: String

    public init(parent: DocumentName, collectionID: String) {
        self.parent = parent
        self.collectionID = collectionID
    }

    public var description: String { "\(parent.path)/\(collectionID)" }

    public func contains(_ document: DocumentName) -> Bool {
        document.parent == parent && document.collectionID == collectionID
    }
}
