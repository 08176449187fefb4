/// One Firestore value, fully typed: every kind `google.firestore.v1.Value` can hold.
public indirect enum FirestoreValue: Sendable {
    case null
    case boolean(Bool)
    case integer(Int64)
    case double(Double)
    case timestamp(Timestamp)
    case string(String)
    case bytes([UInt8])
    /// A document's full resource name, `projects/P/databases/D/documents/PATH`.
    case reference(String)
    case geoPoint(latitude: Double, longitude: Double)
    case array([FirestoreValue])
    case map([String: FirestoreValue])

    /// Firestore's name for the kind, as used in the wire format (`integerValue`, `mapValue`, …).
    public var kindName: String {
        switch self {
        case .null: "nullValue"
        case .boolean: "booleanValue"
        case .integer: "integerValue"
        case .double: "doubleValue"
        case .timestamp: "timestampValue"
        case .string: "stringValue"
        case .bytes: "bytesValue"
        case .reference: "referenceValue"
        case .geoPoint: "geoPointValue"
        case .array: "arrayValue"
        case .map: "mapValue"
        }
    }

    public var stringValue: String? { if case .string(let s) = self { s } else { nil } }
    public var integerValue: Int64? { if case .integer(let i) = self { i } else { nil } }
    public var booleanValue: Bool? { if case .boolean(let b) = self { b } else { nil } }
    public var timestampValue: Timestamp? { if case .timestamp(let t) = self { t } else { nil } }
    public var arrayValue: [FirestoreValue]? { if case .array(let a) = self { a } else { nil } }
    public var mapValue: [String: FirestoreValue]? { if case .map(let m) = self { m } else { nil } }
}

/// Equality as Firestore compares values: NaN equals NaN (it does in queries), and a double
/// never equals an integer of the same magnitude because their kinds differ.
extension FirestoreValue: Hashable {
    public static func == (a: FirestoreValue, b: FirestoreValue) -> Bool {
        switch (a, b) {
        case (.null, .null): true
        case (.boolean(let x), .boolean(let y)): x == y
        case (.integer(let x), .integer(let y)): x == y
        case (.double(let x), .double(let y)): x == y || (x.isNaN && y.isNaN)
        case (.timestamp(let x), .timestamp(let y)): x == y
        case (.string(let x), .string(let y)): x == y
        case (.bytes(let x), .bytes(let y)): x == y
        case (.reference(let x), .reference(let y)): x == y
        case (.geoPoint(let x1, let y1), .geoPoint(let x2, let y2)):
            (x1 == x2 || (x1.isNaN && x2.isNaN)) && (y1 == y2 || (y1.isNaN && y2.isNaN))
        case (.array(let x), .array(let y)): x == y
        case (.map(let x), .map(let y)): x == y
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(kindName)
        switch self {
        case .null: break
        case .boolean(let b): hasher.combine(b)
        case .integer(let i): hasher.combine(i)
        case .double(let d): hasher.combine(d.isNaN ? Double.nan.bitPattern : d.bitPattern)
        case .timestamp(let t): hasher.combine(t)
        case .string(let s), .reference(let s): hasher.combine(s)
        case .bytes(let d): hasher.combine(d)
        case .geoPoint(let lat, let lng):
            hasher.combine(lat)
            hasher.combine(lng)
        case .array(let a): hasher.combine(a)
        case .map(let m): hasher.combine(m)
        }
    }
}

/// A Firestore document: its name, its fields, and the server's create and update times.
public struct FirestoreDocument: Sendable, Hashable {
    public var name: DocumentName
    public var fields: [String: FirestoreValue]
    public var createTime: Timestamp?
    public var updateTime: Timestamp?

    public init(name: DocumentName, fields: [String: FirestoreValue], createTime: Timestamp? = nil, updateTime: Timestamp? = nil) {
        self.name = name
        self.fields = fields
        self.createTime = createTime
        self.updateTime = updateTime
    }

    public subscript(field: String) -> FirestoreValue? { fields[field] }

    /// The value at a dotted path of map keys, e.g. `["lastMessage", "timestamp"]`.
    public func value(at path: [String]) -> FirestoreValue? {
        guard let first = path.first, var value = fields[first] else { return nil }
        for key in path.dropFirst() {
            guard case .map(let inner) = value, let next = inner[key] else { return nil }
            value = next
        }
        return value
    }
}
