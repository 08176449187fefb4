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
    public func serialized(pretty: Bool = false) -> String {
        var out = ""
        write(to: &out, pretty: pretty, indent: 0)
        return out
    }

    private func write(to out: inout String, pretty: Bool, indent: Int) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let text): out += text
        case .string(let s): JSONValue.writeString(s, to: &out)
        case .array(let values):
            if values.isEmpty {
                out += "[]"
                return
            }
            out += "["
            for (i, value) in values.enumerated() {
                if i > 0 { out += "," }
                if pretty { out += "\n" + String(repeating: "  ", count: indent + 1) }
                value.write(to: &out, pretty: pretty, indent: indent + 1)
            }
            if pretty { out += "\n" + String(repeating: "  ", count: indent) }
            out += "]"
        case .object(let members):
            if members.isEmpty {
                out += "{}"
                return
            }
            out += "{"
            for (i, member) in members.sorted(by: { $0.key < $1.key }).enumerated() {
                if i > 0 { out += "," }
                if pretty { out += "\n" + String(repeating: "  ", count: indent + 1) }
                JSONValue.writeString(member.key, to: &out)
                out += pretty ? ": " : ":"
                member.value.write(to: &out, pretty: pretty, indent: indent + 1)
            }
            if pretty { out += "\n" + String(repeating: "  ", count: indent) }
            out += "}"
        }
    }

    /// A JSON string: quotes, backslashes, control characters and U+2028/U+2029 escaped. The text
    /// between escapes is copied in runs (most strings have none), not scalar by scalar.
    public static func writeString(_ s: String, to out: inout String) {
        out += "\""
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
                if run < i { out += String(decoding: UnsafeBufferPointer(rebasing: bytes[run..<i]), as: UTF8.self) }
                out += escape
                i += width
                run = i
            }
            if run == 0 {
                out += s
            } else if run < bytes.count {
                out += String(decoding: UnsafeBufferPointer(rebasing: bytes[run...]), as: UTF8.self)
            }
        }
        out += "\""
    }
}
