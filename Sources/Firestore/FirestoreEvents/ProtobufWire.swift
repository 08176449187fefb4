/// Why bytes are not a protobuf message.
public struct ProtobufError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }

    static let truncated = ProtobufError("truncated")
    static let malformed = ProtobufError("malformed")
    static let tooDeep = ProtobufError("nested deeper than \(ProtobufReader.maximumDepth) messages")
    static let invalidUTF8 = ProtobufError("a string is not valid UTF-8")
}

/// Protocol Buffers' binary wire format, read as SwiftProtobuf reads it (so the two can be checked
/// against each other): fields in any order and any number of times, unknown fields and groups
/// skipped, a field of a known number with an unexpected wire type treated as unknown, at most
/// 100 messages deep.
struct ProtobufReader {
    static let maximumDepth = 100

    enum WireType: UInt8 {
        case varint = 0
        case fixed64 = 1
        case lengthDelimited = 2
        case startGroup = 3
        case endGroup = 4
        case fixed32 = 5
    }

    let bytes: UnsafeRawBufferPointer
    var position: Int
    let end: Int
    /// Messages (and groups) that may still be entered below this one.
    let depthLeft: Int

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        position = 0
        end = bytes.count
        depthLeft = Self.maximumDepth - 1
    }

    init(_ bytes: UnsafeRawBufferPointer, range: Range<Int>, depthLeft: Int) {
        self.bytes = bytes
        position = range.lowerBound
        end = range.upperBound
        self.depthLeft = depthLeft
    }

    var isAtEnd: Bool { position >= end }

    mutating func varint() throws(ProtobufError) -> UInt64 {
        guard position < end else { throw .truncated }
        var byte = bytes[position]
        position &+= 1
        if byte & 0x80 == 0 { return UInt64(byte) }
        var value = UInt64(byte & 0x7f)
        var shift: UInt64 = 7
        while true {
            guard position < end, shift <= 63 else { throw .malformed }
            byte = bytes[position]
            position &+= 1
            value |= UInt64(byte & 0x7f) &<< shift
            if byte & 0x80 == 0 { return value }
            shift &+= 7
        }
    }

    /// A message's next field, nil at its end. Tags take at most five bytes here (as SwiftProtobuf
    /// reads them in a message), field numbers 1 through 2^29 - 1; an end-group tag outside a group is malformed.
    mutating func field() throws(ProtobufError) -> (number: Int, wire: WireType)? {
        guard position < end else { return nil }
        var number = 0
        var shift = 0
        let first = bytes[position]
        guard let wire = WireType(rawValue: first & 7) else { throw .malformed }
        for index in 0..<5 {
            guard position + index < end else { throw .malformed }
            let byte = bytes[position + index]
            if index == 4, byte > 15 { throw .malformed }
            number |= Int(byte & 0x7f) << shift
            shift += 7
            if byte & 0x80 == 0 {
                position += index + 1
                number >>= 3
                guard number != 0, wire != .endGroup else { throw .malformed }
                return (number, wire)
            }
        }
        throw .malformed
    }

    /// A map entry's next field, nil at its end: its tag is read as any varint (as SwiftProtobuf reads it there).
    mutating func entryField() throws(ProtobufError) -> (number: Int, wire: WireType)? {
        guard position < end else { return nil }
        let tag = try varint()
        guard tag < UInt64(UInt32.max), let wire = WireType(rawValue: UInt8(tag & 7)), tag >> 3 != 0 else { throw .malformed }
        guard wire != .endGroup else { throw .malformed }
        return (Int(tag >> 3), wire)
    }

    /// A length-delimited field's bytes, as a range of `bytes`.
    mutating func lengthDelimited() throws(ProtobufError) -> Range<Int> {
        let length = try varint()
        guard length <= UInt64(end - position) else { throw .truncated }
        let range = position..<(position + Int(length))
        position = range.upperBound
        return range
    }

    mutating func fixed64() throws(ProtobufError) -> UInt64 {
        guard end - position >= 8 else { throw .truncated }
        let value = bytes.loadUnaligned(fromByteOffset: position, as: UInt64.self)
        position += 8
        return UInt64(littleEndian: value)
    }

    mutating func string() throws(ProtobufError) -> String {
        let range = try lengthDelimited()
        let utf8 = UnsafeRawBufferPointer(rebasing: bytes[range]).assumingMemoryBound(to: UInt8.self)
        // ASCII (most names and values) is valid as it is; `String(validating:)` is generic and costs a
        // type lookup per call, so it checks only the rest.
        if !utf8.contains(where: { $0 >= 0x80 }) { return String(decoding: utf8, as: UTF8.self) }
        guard let text = String(validating: utf8, as: UTF8.self) else { throw .invalidUTF8 }
        return text
    }

    /// A reader for a nested message's bytes, one level deeper.
    func nested(_ range: Range<Int>) throws(ProtobufError) -> ProtobufReader {
        guard depthLeft > 0 else { throw .tooDeep }
        return ProtobufReader(bytes, range: range, depthLeft: depthLeft - 1)
    }

    /// How many length-delimited fields numbered `number` the rest of the message holds, up to `limit`
    /// (counted up to where it cannot be read: reading it will say why), so a map can be sized once. The
    /// limit keeps a message of many empty entries from sizing a map for entries that are one key.
    func count(of number: Int, upTo limit: Int = 256) -> Int {
        var reader = self
        var count = 0
        while count < limit, let (found, wire) = try? reader.field() {
            if found == number, wire == .lengthDelimited { count += 1 }
            guard (try? reader.skip(number: found, wire: wire)) != nil else { break }
        }
        return count
    }

    /// Passes over a field this reader does not take (its tag already read).
    mutating func skip(number: Int, wire: WireType) throws(ProtobufError) {
        switch wire {
        case .varint: _ = try varint()
        case .fixed64:
            guard end - position >= 8 else { throw .truncated }
            position += 8
        case .fixed32:
            guard end - position >= 4 else { throw .truncated }
            position += 4
        case .lengthDelimited: _ = try lengthDelimited()
        case .startGroup:
            guard depthLeft > 0 else { throw .tooDeep }
            var inner = ProtobufReader(bytes, range: position..<end, depthLeft: depthLeft - 1)
            while true {
                guard inner.position < inner.end else { throw .truncated }
                let tag = try inner.varint()
                guard tag < UInt64(UInt32.max), let innerWire = WireType(rawValue: UInt8(tag & 7)), tag >> 3 != 0 else { throw .malformed }
                if innerWire == .endGroup {
                    guard Int(tag >> 3) == number else { throw .malformed }
                    break
                }
                try inner.skip(number: Int(tag >> 3), wire: innerWire)
            }
            position = inner.position
        case .endGroup: throw .malformed
        }
    }
}

/// Protocol Buffers' binary wire format, written.
struct ProtobufWriter {
    var bytes: [UInt8] = []

    mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    mutating func tag(_ number: Int, _ wire: ProtobufReader.WireType) { varint(UInt64(number << 3) | UInt64(wire.rawValue)) }

    mutating func varint(_ number: Int, _ value: UInt64) {
        tag(number, .varint)
        varint(value)
    }

    mutating func fixed64(_ number: Int, _ value: UInt64) {
        tag(number, .fixed64)
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func bytes<Bytes: Collection<UInt8>>(_ number: Int, _ value: Bytes) {
        tag(number, .lengthDelimited)
        varint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    mutating func string(_ number: Int, _ value: String) { bytes(number, value.utf8) }

    /// A nested message, written by `body` and then put in with its length.
    mutating func message(_ number: Int, _ body: (inout ProtobufWriter) -> Void) {
        var nested = ProtobufWriter()
        body(&nested)
        bytes(number, nested.bytes)
    }
}
