/// Firestore's total order of values, as queries sort and compare them: null < booleans < NaN <
/// numbers (integers and doubles by magnitude) < timestamps < strings (UTF-8 bytes) < bytes <
/// references (by path segment) < geo points < arrays < maps.
public enum ValueOrder {
    /// The kind's rank in the order. Integers and doubles share one: 3 and 3.0 are equivalent.
    public static func typeRank(_ value: FirestoreValue) -> Int {
        switch value {
        case .null: 0
        case .boolean: 1
        case .integer, .double: 2
        case .timestamp: 3
        case .string: 4
        case .bytes: 5
        case .reference: 6
        case .geoPoint: 7
        case .array: 8
        case .map: 9
        }
    }

    public static func compare(_ a: FirestoreValue, _ b: FirestoreValue) -> Int {
        let (ra, rb) = (typeRank(a), typeRank(b))
        if ra != rb { return ra < rb ? -1 : 1 }
        switch (a, b) {
        case (.null, .null): return 0
        case (.boolean(let x), .boolean(let y)): return x == y ? 0 : (!x ? -1 : 1)
        case (.integer(let x), .integer(let y)): return sign(x, y)
        case (.integer(let x), .double(let y)): return -compareDouble(y, integer: x)
        case (.double(let x), .integer(let y)): return compareDouble(x, integer: y)
        case (.double(let x), .double(let y)):
            if x.isNaN || y.isNaN { return x.isNaN && y.isNaN ? 0 : (x.isNaN ? -1 : 1) }
            return x < y ? -1 : (x > y ? 1 : 0)
        case (.timestamp(let x), .timestamp(let y)): return x < y ? -1 : (x == y ? 0 : 1)
        case (.string(let x), .string(let y)): return bytes(Array(x.utf8), Array(y.utf8))
        case (.bytes(let x), .bytes(let y)): return bytes(Array(x), Array(y))
        case (.reference(let x), .reference(let y)): return referencePaths(x, y)
        case (.geoPoint(let la, let lna), .geoPoint(let lb, let lnb)):
            let c = compare(.double(la), .double(lb))
            return c != 0 ? c : compare(.double(lna), .double(lnb))
        case (.array(let x), .array(let y)):
            for (u, v) in zip(x, y) {
                let c = compare(u, v)
                if c != 0 { return c }
            }
            return sign(x.count, y.count)
        case (.map(let x), .map(let y)):
            let (kx, ky) = (x.keys.sorted(by: utf8Less), y.keys.sorted(by: utf8Less))
            for (u, v) in zip(kx, ky) {
                let c = bytes(Array(u.utf8), Array(v.utf8))
                if c != 0 { return c }
                let d = compare(x[u]!, y[v]!)
                if d != 0 { return d }
            }
            return sign(kx.count, ky.count)
        default: return 0
        }
    }

    /// Equivalent as `appendMissingElements`, `arrayContains` and `in` see it: 3 and 3.0 are the same, and NaN is NaN.
    public static func equivalent(_ a: FirestoreValue, _ b: FirestoreValue) -> Bool { compare(a, b) == 0 }

    public static func utf8Less(_ a: String, _ b: String) -> Bool { bytes(Array(a.utf8), Array(b.utf8)) < 0 }

    /// Document names sort segment by segment, so `a/b` comes before `a-x/…` whatever the bytes after.
    public static func referencePaths(_ a: String, _ b: String) -> Int {
        let (sa, sb) = (a.split(separator: "/", omittingEmptySubsequences: false), b.split(separator: "/", omittingEmptySubsequences: false))
        for (u, v) in zip(sa, sb) {
            let c = bytes(Array(u.utf8), Array(v.utf8))
            if c != 0 { return c }
        }
        return sign(sa.count, sb.count)
    }

    static func compareDouble(_ d: Double, integer i: Int64) -> Int {
        if d.isNaN { return -1 }
        if d < -9.3e18 { return -1 }
        if d > 9.3e18 { return 1 }
        let truncated = d.rounded(.down)
        if truncated < -9.223372036854775808e18 { return -1 }
        if truncated >= 9.223372036854775808e18 { return 1 }
        let whole = Int64(truncated)
        if whole != i { return whole < i ? -1 : 1 }
        return d > truncated ? 1 : 0
    }

    static func bytes(_ a: [UInt8], _ b: [UInt8]) -> Int {
        for (u, v) in zip(a, b) where u != v { return u < v ? -1 : 1 }
        return sign(a.count, b.count)
    }

    static func sign<T: Comparable>(_ a: T, _ b: T) -> Int { a < b ? -1 : (a > b ? 1 : 0) }
}

extension FieldPath {
    /// Parses Firestore's canonical text (`a.b`, ``a.`b.c` ``, with `\` escapes inside backticks).
    public init(parsing text: String) throws(FirestoreJSONError) {
        var segments: [String] = []
        var current = ""
        var quoted = false
        var inBackticks = false
        var escaping = false
        for ch in text {
            if inBackticks {
                if escaping {
                    current.append(ch)
                    escaping = false
                } else if ch == "\\" {
                    escaping = true
                } else if ch == "`" {
                    inBackticks = false
                } else {
                    current.append(ch)
                }
                continue
            }
            switch ch {
            case "`":
                guard current.isEmpty, !quoted else { throw FirestoreJSONError(path: "fieldPath", reason: "invalid field path \"\(text.prefix(200))\"") }
                inBackticks = true
                quoted = true
            case ".":
                guard !current.isEmpty || quoted else {
                    throw FirestoreJSONError(path: "fieldPath", reason: "invalid field path \"\(text.prefix(200))\": empty segment")
                }
                segments.append(current)
                current = ""
                quoted = false
            default:
                guard !quoted else { throw FirestoreJSONError(path: "fieldPath", reason: "invalid field path \"\(text.prefix(200))\"") }
                current.append(ch)
            }
        }
        guard !inBackticks, !escaping, !current.isEmpty || quoted else {
            throw FirestoreJSONError(path: "fieldPath", reason: "invalid field path \"\(text.prefix(200))\"")
        }
        segments.append(current)
        self.init(segments)
    }
}

extension FirestoreDocument {
    /// The value at a field path, looking through maps.
    public func value(at path: FieldPath) -> FirestoreValue? { FieldPath.value(in: fields, at: path.segments[...]) }
}

extension FieldPath {
    public static func value(in fields: [String: FirestoreValue], at path: ArraySlice<String>) -> FirestoreValue? {
        guard let first = path.first, let value = fields[first] else { return nil }
        if path.count == 1 { return value }
        guard case .map(let inner) = value else { return nil }
        return Self.value(in: inner, at: path.dropFirst())
    }

    /// Sets (or with nil, removes) the value at a path, creating maps on the way and replacing non-maps.
    public static func set(_ value: FirestoreValue?, in fields: inout [String: FirestoreValue], at path: ArraySlice<String>) {
        guard let first = path.first else { return }
        if path.count == 1 {
            fields[first] = value
            return
        }
        var inner = fields[first]?.mapValue ?? [:]
        if value == nil, fields[first]?.mapValue == nil { return }
        set(value, in: &inner, at: path.dropFirst())
        fields[first] = .map(inner)
    }
}
