/// Why a byte sequence is not the JSON Herald accepts.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public var reason: String
    /// Byte offset where parsing stopped.
    public var offset: Int
    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

extension JSONValue {
    /// Nesting deeper than this is refused rather than risking the stack. Firestore allows 20 levels.
    public static let maximumDepth = 128

    /// Parses RFC 8259 JSON. Rejects invalid UTF-8, lone surrogates, trailing bytes and deep nesting.
    /// - refusingRepeated: the keys an object may not name twice (RFC 8259 leaves it open; by default the
    ///   last value wins): for a file a person writes, where a repeated key is a mistake.
    public init<Bytes: Collection<UInt8>>(parsing bytes: Bytes, refusingRepeated: ((String) -> Bool)? = nil) throws(JSONParseError) {
        let buffer = Array(bytes)
        var parser = JSONParser(bytes: buffer, refusesRepeated: refusingRepeated)
        self = try parser.parseDocument()
    }

    public init(parsing text: String) throws(JSONParseError) {
        try self.init(parsing: Array(text.utf8))
    }
}

private struct JSONParser {
    let bytes: [UInt8]
    let refusesRepeated: ((String) -> Bool)?
    var index = 0

    init(bytes: [UInt8], refusesRepeated: ((String) -> Bool)?) {
        self.bytes = bytes
        self.refusesRepeated = refusesRepeated
    }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        // A UTF-8 byte order mark is tolerated at the very start, as most parsers do.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        skipWhitespace()
        let value = try parseValue(depth: 0)
        skipWhitespace()
        guard index == bytes.count else { throw fail("unexpected bytes after the value") }
        return value
    }

    func fail(_ reason: String) -> JSONParseError { JSONParseError(reason: reason, offset: index) }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= JSONValue.maximumDepth else { throw fail("nested deeper than \(JSONValue.maximumDepth) levels") }
        guard index < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth)
        case UInt8(ascii: "["): return try parseArray(depth: depth)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw fail("unexpected character")
        }
    }

    mutating func expectLiteral(_ literal: String) throws(JSONParseError) {
        let count = literal.utf8.count
        guard index + count <= bytes.count, bytes[index..<index + count].elementsEqual(literal.utf8) else {
            throw fail("invalid literal")
        }
        index += count
    }

    mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONValue {
        index += 1
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
            let start = index
            let key = try parseString()
            if let refusesRepeated, members[key] != nil, refusesRepeated(key) {
                index = start
                throw fail("key \"\(key.prefix(100))\" appears twice in one object")
            }
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            index += 1
            skipWhitespace()
            members[key] = try parseValue(depth: depth + 1)
            skipWhitespace()
            guard index < bytes.count else { throw fail("unterminated object") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            throw fail("expected ',' or '}'")
        }
    }

    mutating func parseArray(depth: Int) throws(JSONParseError) -> JSONValue {
        index += 1
        var values: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(values)
        }
        while true {
            skipWhitespace()
            values.append(try parseValue(depth: depth + 1))
            skipWhitespace()
            guard index < bytes.count else { throw fail("unterminated array") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(values)
            }
            throw fail("expected ',' or ']'")
        }
    }

    mutating func parseNumber() throws(JSONParseError) -> String {
        let start = index
        func digits(_ p: inout JSONParser) -> Int {
            let s = p.index
            while p.index < p.bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(p.bytes[p.index]) { p.index += 1 }
            return p.index - s
        }
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count else { throw fail("incomplete number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else if digits(&self) == 0 {
            throw fail("invalid number")
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits(&self) > 0 else { throw fail("invalid fraction") }
        }
        if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits(&self) > 0 else { throw fail("invalid exponent") }
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    mutating func parseString() throws(JSONParseError) -> String {
        index += 1
        // Most strings have no escape: find the closing quote and validate the run once.
        let start = index
        let end: Int? = bytes.withUnsafeBufferPointer { buffer in
            var i = start
            while i < buffer.count {
                let byte = buffer[i]
                if byte == UInt8(ascii: "\"") { return i }
                if byte == UInt8(ascii: "\\") || byte < 0x20 { return nil }
                i += 1
            }
            return nil
        }
        if let end {
            guard let text = String(validating: bytes[start..<end], as: UTF8.self) else {
                throw JSONParseError(reason: "invalid UTF-8 in string", offset: start)
            }
            index = end + 1
            return text
        }
        var scalars = String.UnicodeScalarView()
        var runStart = index
        func flushRun(_ p: JSONParser, upTo end: Int, into scalars: inout String.UnicodeScalarView) throws(JSONParseError) {
            guard runStart < end else { return }
            guard let run = String(validating: p.bytes[runStart..<end], as: UTF8.self) else {
                throw JSONParseError(reason: "invalid UTF-8 in string", offset: runStart)
            }
            scalars.append(contentsOf: run.unicodeScalars)
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                try flushRun(self, upTo: index, into: &scalars)
                index += 1
                return String(scalars)
            }
            if byte < 0x20 { throw fail("control character in string") }
            if byte == UInt8(ascii: "\\") {
                try flushRun(self, upTo: index, into: &scalars)
                index += 1
                scalars.append(try parseEscape())
                runStart = index
                continue
            }
            index += 1
        }
        throw fail("unterminated string")
    }

    mutating func parseEscape() throws(JSONParseError) -> Unicode.Scalar {
        guard index < bytes.count else { throw fail("unterminated escape") }
        let byte = bytes[index]
        index += 1
        switch byte {
        case UInt8(ascii: "\""): return "\""
        case UInt8(ascii: "\\"): return "\\"
        case UInt8(ascii: "/"): return "/"
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "u"):
            let first = try parseHex4()
            if (0xD800..<0xDC00).contains(first) {
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                    throw fail("unpaired surrogate")
                }
                index += 2
                let second = try parseHex4()
                guard (0xDC00..<0xE000).contains(second) else { throw fail("unpaired surrogate") }
                return Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))!
            }
            guard let scalar = Unicode.Scalar(first) else { throw fail("unpaired surrogate") }
            return scalar
        default: throw fail("invalid escape")
        }
    }

    mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw fail("incomplete \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw fail("invalid \\u escape")
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }
}
