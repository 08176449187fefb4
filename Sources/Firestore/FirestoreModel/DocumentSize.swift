/// Firestore's storage size of a document, as its documentation defines it.
public enum DocumentSize {
    public static func of(name: DocumentName, fields: [String: FirestoreValue]) -> Int {
        nameSize(name) + fields.reduce(0) { $0 + $1.key.utf8.count + 1 + value($1.value) } + 32
    }

    public static func of(_ document: FirestoreDocument) -> Int { of(name: document.name, fields: document.fields) }

    public static func nameSize(_ name: DocumentName) -> Int { name.segments.reduce(0) { $0 + $1.utf8.count + 1 } + 16 }

    public static func value(_ value: FirestoreValue) -> Int {
        switch value {
        case .null, .boolean: 1
        case .integer, .double, .timestamp: 8
        case .string(let s): s.utf8.count + 1
        case .bytes(let d): d.count
        case .reference(let r): (try? DocumentName(resourceName: r)).map(nameSize) ?? r.utf8.count + 1
        case .geoPoint: 16
        case .array(let values): values.reduce(0) { $0 + Self.value($1) }
        case .map(let fields): fields.reduce(0) { $0 + $1.key.utf8.count + 1 + Self.value($1.value) }
        }
    }
}

extension DocumentSize {
    /// Firestore's limit on a document's size, in bytes as `DocumentSize` counts them.
    public static let maximumBytes = 1_048_576

    /// At most how many bytes `write` can add to a document: what it sets, what its transforms may set.
    public static func growthBound(of write: Write) -> Int {
        var bound = 0
        if case .update(_, let fields, let mask) = write.operation {
            if let mask {
                for path in mask {
                    bound += path.segments.reduce(0) { $0 + $1.utf8.count + 1 }
                    bound += FieldPath.value(in: fields, at: path.segments[...]).map(value) ?? 0
                }
            } else {
                bound += fields.reduce(0) { $0 + $1.key.utf8.count + 1 + value($1.value) }
            }
        }
        for transform in write.transforms {
            bound += transform.field.segments.reduce(0) { $0 + $1.utf8.count + 1 } + 8
            if case .appendMissingElements(let elements) = transform.operation { bound += elements.reduce(0) { $0 + value($1) } }
        }
        return bound
    }
}
