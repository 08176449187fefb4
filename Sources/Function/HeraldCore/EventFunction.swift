import FirestoreEvents
import FirestoreModel

/// A Herald function: which changes it answers, and a pure plan from (change, documents read) to effects.
/// Functions do no I/O; the runtime reads, and an executor carries the plan out.
public protocol EventFunction: HeraldFunction {
    /// The document pattern and event kinds this function is deployed behind.
    var trigger: Trigger { get }

    /// What to do about the change: reads what it needs through `reading` (each step of reads stops the
    /// plan with `NotReadYet` until the runtime has read it; the plan is then made again) and returns
    /// the writes and pushes. Pure: the same change and documents always give the same plan.
    func plan(for change: DocumentChange, reading: Reads) throws(NotReadYet) -> Plan
}

/// Where a function is triggered: a document pattern such as `conversations/{conversationId}/messages/{messageId}`
/// and the event kinds it handles.
public struct Trigger: Sendable, Hashable {
    public var pattern: String { compiled.text }
    public var kinds: Set<DocumentChange.Kind>
    let compiled: DocumentPattern

    public init(pattern: String, kinds: Set<DocumentChange.Kind>) {
        compiled = DocumentPattern(pattern)
        self.kinds = kinds
    }

    /// The pattern's wildcards bound to the path's segments, or nil if the path does not match.
    public func match(_ document: DocumentName) -> [String: String]? { compiled.match(document) }

    /// Why this trigger does not handle the change, or nil if it does.
    public func refusal(of change: DocumentChange) -> String? {
        guard match(change.document) != nil else {
            return "document \(change.document.path) does not match the trigger pattern \(pattern)"
        }
        guard kinds.contains(change.kind) || kinds.contains(change.effectiveKind) else {
            return
                "\(change.effectiveKind.rawValue) events need nothing from this function (it handles \(kinds.map(\.rawValue).sorted().joined(separator: ", ")))"
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

    public init(
        found: [DocumentName: FirestoreDocument] = [:], missing: Set<DocumentName> = [],
        collections: [CollectionPath: [FirestoreDocument]] = [:], lookups: [ValueLookup: [FirestoreDocument]] = [:]
    ) {
        self.found = found
        self.missing = missing
        self.collections = collections
        self.lookups = lookups
    }

    public subscript(name: DocumentName) -> FirestoreDocument? { found[name] }

    /// All names asked for, in a stable order.
    public var names: [DocumentName] { (Array(found.keys) + missing).sorted() }
}

/// The documents of a top-level collection (or, with `allDescendants`, of every collection of that id:
/// a collection group) that hold a value in a field: equal to it, containing it (an array), or present
/// at all (a map key such as `notificationTokens.TOKEN`).
public struct ValueLookup: Sendable, Hashable, CustomStringConvertible {
    public enum Match: String, Sendable, Hashable { case equals, arrayContains, present }
    public static let maximumFound = 50

    public var collectionID: String
    public var allDescendants: Bool
    public var field: FieldPath
    public var match: Match
    public var value: FirestoreValue

    public init(collectionID: String, allDescendants: Bool = false, field: FieldPath, _ match: Match, _ value: FirestoreValue = .null) {
        self.collectionID = collectionID
        self.allDescendants = allDescendants
        self.field = field
        self.match = match
        self.value = value
    }

    public var description: String { "\(allDescendants ? "every " : "")\(collectionID) where \(field) \(match.rawValue)" }

    public func matches(_ document: FirestoreDocument) -> Bool {
        guard allDescendants || document.name.segments.count == 2, document.name.collectionID == collectionID,
            let held = document.value(at: field)
        else { return false }
        switch match {
        case .equals: return held == value
        case .arrayContains: return held.arrayValue?.contains(value) ?? false
        case .present: return held != .null
        }
    }

    /// The same lookup as a Firestore query (at most `maximumFound` documents).
    public var query: StructuredQuery {
        let filter: StructuredQuery.Filter =
            switch match {
            case .equals: .field(field, .equal, value)
            case .arrayContains: .field(field, .arrayContains, value)
            case .present: .unary(field, .isNotNull)
            }
        return StructuredQuery(collectionID: collectionID, allDescendants: allDescendants, filter: filter, limit: Self.maximumFound)
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
