/// A JSON value that keeps numbers as their literal text, so 64-bit integers survive exactly.
///
/// Foundation's parsers turn every number into a Double or an NSNumber; Firestore's wire format has
/// int64 fields, so Herald reads and writes JSON with this type instead.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    /// The number's literal text, already checked to be a valid JSON number.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public static func integer<I: BinaryInteger>(_ value: I) -> JSONValue { .number(String(value)) }

    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    public var objectValue: [String: JSONValue]? {
        if case .object(let o) = self { return o }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// The value as a 64-bit integer: a JSON integer, or a string holding one (proto3 JSON's int64 form).
    public var int64Value: Int64? {
        switch self {
        case .number(let text), .string(let text): return Int64(text)
        default: return nil
        }
    }

    public var isNull: Bool { self == .null }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .number(String(value)) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    public init(nilLiteral: ()) { self = .null }
}

// MARK: - Serialization

extension JSONValue {
    /// Compact JSON text. Object keys are sorted, so equal values always serialize to the same bytes.
    public func serialized(pretty: Bool = false) -> String { String(decoding: serializedBytes(pretty: pretty), as: UTF8.self) }

    /// `serialized(pretty:)` as UTF-8 bytes (built as bytes: appending to a String costs far more).
    public func serializedBytes(pretty: Bool = false) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(to: &out, pretty: pretty, indent: 0)
        return out
    }

    /// A pretty form's line break, and the indent of `depth` levels.
    private static func newline(_ depth: Int, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\n"))
        out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 2 * depth))
    }

    private func write(to out: inout [UInt8], pretty: Bool, indent: Int) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let text): out.append(contentsOf: text.utf8)
        case .string(let s): JSONValue.writeString(s, to: &out)
        case .array(let values):
            out.append(UInt8(ascii: "["))
            for (i, value) in values.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                if pretty { Self.newline(indent + 1, to: &out) }
                value.write(to: &out, pretty: pretty, indent: indent + 1)
            }
            if pretty && !values.isEmpty { Self.newline(indent, to: &out) }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            Self.writeObject(members.sorted(by: { $0.key < $1.key }), to: &out, pretty: pretty, indent: indent)
        }
    }

    /// An object of `members` (distinct keys) as `serialized()` writes one, without making a dictionary
    /// of them first: keys sorted the same way.
    public static func serializedObject(_ members: [(key: String, value: JSONValue)]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        writeObject(members.sorted(by: { $0.key < $1.key }), to: &out, pretty: false, indent: 0)
        return String(decoding: out, as: UTF8.self)
    }

    private static func writeObject(_ sorted: [(key: String, value: JSONValue)], to out: inout [UInt8], pretty: Bool, indent: Int) {
        out.append(UInt8(ascii: "{"))
        for (i, member) in sorted.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            if pretty { newline(indent + 1, to: &out) }
            writeString(member.key, to: &out)
            out.append(UInt8(ascii: ":"))
            if pretty { out.append(UInt8(ascii: " ")) }
            member.value.write(to: &out, pretty: pretty, indent: indent + 1)
        }
        if pretty && !sorted.isEmpty { newline(indent, to: &out) }
        out.append(UInt8(ascii: "}"))
    }

    /// A JSON string (see the byte form).
    public static func writeString(_ s: String, to out: inout String) {
        var bytes: [UInt8] = []
        writeString(s, to: &bytes)
        out += String(decoding: bytes, as: UTF8.self)
    }

    /// A JSON string: quotes, backslashes, control characters and U+2028/U+2029 escaped. The text
    /// between escapes is copied in runs (most strings have none), not scalar by scalar.
    public static func writeString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var text = s
        text.withUTF8 { bytes in
            var run = 0
            var i = 0
            while i < bytes.count {
                let byte = bytes[i]
                let escape: String
                var width = 1
                switch byte {
                case 0x22: escape = "\\\""
                case 0x5C: escape = "\\\\"
                case 0x0A: escape = "\\n"
                case 0x0D: escape = "\\r"
                case 0x09: escape = "\\t"
                case 0..<0x20: escape = "\\u00" + (byte < 0x10 ? "0" : "1") + String(byte & 0x0F, radix: 16)
                case 0xE2 where i + 2 < bytes.count && bytes[i + 1] == 0x80 && (bytes[i + 2] == 0xA8 || bytes[i + 2] == 0xA9):
                    escape = bytes[i + 2] == 0xA8 ? "\\u2028" : "\\u2029"
                    width = 3
                default:
                    i += 1
                    continue
                }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<i]))
                out.append(contentsOf: escape.utf8)
                i += width
                run = i
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run...]))
        }
        out.append(UInt8(ascii: "\""))
    }
}
