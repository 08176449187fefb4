import WireFormats

/// A path to a field inside a document, one segment per map key.
public struct FieldPath: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var segments: [String]

    public init(_ segments: [String]) { self.segments = segments }
    public init(_ segments: String...) { self.segments = segments }

    /// Firestore's canonical text: simple segments as they are, others in backticks with `` ` `` and `\` escaped,
    /// so `unreadCount` + `user.1` is ``unreadCount.`user.1` ``.
    public var description: String { segments.map(Self.quoted).joined(separator: ".") }

    public static func quoted(_ segment: String) -> String {
        let utf8 = segment.utf8
        let isSimple =
            !utf8.isEmpty
            && utf8.enumerated().allSatisfy { i, c in
                (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c == 95 || (i > 0 && c >= 48 && c <= 57)
            }
        if isSimple { return segment }
        var escaped = "`"
        for ch in segment {
            if ch == "`" || ch == "\\" { escaped.append("\\") }
            escaped.append(ch)
        }
        return escaped + "`"
    }

    public static func < (a: FieldPath, b: FieldPath) -> Bool { a.segments.lexicographicallyPrecedes(b.segments) }
}

/// A condition the stored document must meet for a write to apply.
public enum Precondition: Sendable, Hashable {
    case exists(Bool)
    case updateTime(Timestamp)
}

/// A server-side change to one field, applied after the write's update.
public struct FieldTransform: Sendable, Hashable {
    public enum Operation: Sendable, Hashable {
        case increment(FirestoreValue)
        case maximum(FirestoreValue)
        case minimum(FirestoreValue)
        case setToRequestTime
        case appendMissingElements([FirestoreValue])
        case removeAllFromArray([FirestoreValue])
    }

    public var field: FieldPath
    public var operation: Operation

    public init(_ field: FieldPath, _ operation: Operation) {
        self.field = field
        self.operation = operation
    }
}

/// One write in a Firestore commit: `google.firestore.v1.Write`.
public struct Write: Sendable, Hashable {
    public enum Operation: Sendable, Hashable {
        /// Set fields. With a mask, only the masked fields change (a masked field absent from
        /// `fields` is deleted); without one, the document is replaced.
        case update(DocumentName, fields: [String: FirestoreValue], mask: [FieldPath]?)
        case delete(DocumentName)
        /// Only transforms, no field update.
        case transform(DocumentName)
    }

    public var operation: Operation
    public var transforms: [FieldTransform]
    public var precondition: Precondition?
    /// For an update made on a version it read (a "newest wins" field such as a conversation's last
    /// message): the field that says which of two such updates is the newer. Two commits' updates made
    /// on the same version may then be joined, the newer one's fields kept (`joined(with:)`); without
    /// it they cannot, since the second was decided on what the first changes. Not sent to Firestore.
    public var latestBy: FieldPath?

    public init(_ operation: Operation, transforms: [FieldTransform] = [], precondition: Precondition? = nil, latestBy: FieldPath? = nil) {
        self.operation = operation
        self.transforms = transforms
        self.precondition = precondition
        self.latestBy = latestBy
    }

    public var document: DocumentName {
        switch operation {
        case .update(let name, _, _), .delete(let name), .transform(let name): name
        }
    }

    /// The REST JSON form, as `projects.databases.documents.commit` takes it.
    public var json: JSONValue {
        var members: [String: JSONValue] = [:]
        switch operation {
        case .update(let name, let fields, let mask):
            members["update"] = ["name": .string(name.resourceName), "fields": FirestoreJSON.json(fields)]
            if let mask { members["updateMask"] = ["fieldPaths": .array(mask.map { .string($0.description) })] }
            if !transforms.isEmpty { members["updateTransforms"] = .array(transforms.map(\.json)) }
        case .delete(let name):
            members["delete"] = .string(name.resourceName)
        case .transform(let name):
            members["transform"] = ["document": .string(name.resourceName), "fieldTransforms": .array(transforms.map(\.json))]
        }
        switch precondition {
        case .exists(let exists): members["currentDocument"] = ["exists": .bool(exists)]
        case .updateTime(let t): members["currentDocument"] = ["updateTime": .string(t.rfc3339)]
        case nil: break
        }
        return .object(members)
    }
}

extension FieldTransform {
    public var json: JSONValue {
        var members: [String: JSONValue] = ["fieldPath": .string(field.description)]
        switch operation {
        case .increment(let v): members["increment"] = FirestoreJSON.json(v)
        case .maximum(let v): members["maximum"] = FirestoreJSON.json(v)
        case .minimum(let v): members["minimum"] = FirestoreJSON.json(v)
        case .setToRequestTime: members["setToServerValue"] = "REQUEST_TIME"
        case .appendMissingElements(let values): members["appendMissingElements"] = ["values": .array(values.map(FirestoreJSON.json))]
        case .removeAllFromArray(let values): members["removeAllFromArray"] = ["values": .array(values.map(FirestoreJSON.json))]
        }
        return .object(members)
    }
}
