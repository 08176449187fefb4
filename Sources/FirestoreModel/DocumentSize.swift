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
