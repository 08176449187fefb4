/// gzip (RFC 1952) over DEFLATE (RFC 1951), for HTTP bodies: `compress` writes LZ77 matches in
/// DEFLATE's fixed Huffman codes (JSON of many similar notifications shrinks to a fifth or less);
/// `decompress` reads any DEFLATE stream (stored, fixed and dynamic blocks), bounded in what it
/// writes out. Herald's own because the functions link no zlib (docs/architecture.md).
public enum Gzip {
    public struct Error: Swift.Error, CustomStringConvertible, Sendable, Equatable {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// The gzip file of `bytes`: a header without name or time, DEFLATE blocks, CRC-32 and length.
    public static func compress(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF]
        var writer = BitWriter()
        Deflater.deflate(bytes, into: &writer)
        out += writer.finished
        out += littleEndian(CRC32.checksum(bytes))
        out += littleEndian(UInt32(truncatingIfNeeded: bytes.count))
        return out
    }

    /// The content of a gzip file (its first member), at most `limit` bytes: more is refused, so a small
    /// hostile body cannot expand to fill memory.
    public static func decompress(_ bytes: [UInt8], limit: Int) throws(Error) -> [UInt8] {
        guard bytes.count >= 10, bytes[0] == 0x1F, bytes[1] == 0x8B, bytes[2] == 8 else { throw Error("not a gzip body") }
        let flags = bytes[3]
        guard flags & 0xE0 == 0 else { throw Error("a gzip header with reserved flags set") }
        var position = 10
        if flags & 4 != 0 {  // FEXTRA
            guard position + 2 <= bytes.count else { throw Error("a truncated gzip header") }
            position += 2 + Int(bytes[position]) | Int(bytes[position + 1]) << 8
        }
        for flag: UInt8 in [8, 16] where flags & flag != 0 {  // FNAME, FCOMMENT: zero-terminated
            while position < bytes.count, bytes[position] != 0 { position += 1 }
            position += 1
        }
        if flags & 2 != 0 { position += 2 }  // FHCRC
        guard position < bytes.count else { throw Error("a truncated gzip header") }
        var reader = BitReader(bytes: bytes, position: position)
        let content = try Inflater.inflate(&reader, limit: limit)
        let end = reader.alignedPosition
        guard end + 8 <= bytes.count else { throw Error("a gzip body without its trailer") }
        guard Array(bytes[end..<end + 4]) == littleEndian(CRC32.checksum(content)) else { throw Error("a gzip body whose CRC-32 does not match") }
        guard Array(bytes[end + 4..<end + 8]) == littleEndian(UInt32(truncatingIfNeeded: content.count)) else {
            throw Error("a gzip body whose length does not match")
        }
        return content
    }

    static func littleEndian(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
}

/// CRC-32 as gzip and PNG use it (polynomial 0xEDB88320, reflected).
enum CRC32 {
    static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}

/// DEFLATE's bits, least significant first.
struct BitWriter {
    var bytes: [UInt8] = []
    var buffer: UInt64 = 0
    var count = 0

    mutating func write(_ value: UInt32, bits: Int) {
        buffer |= UInt64(value) << UInt64(count)
        count += bits
        while count >= 8 {
            bytes.append(UInt8(truncatingIfNeeded: buffer))
            buffer >>= 8
            count -= 8
        }
    }

    /// A Huffman code, written most significant bit first.
    mutating func write(code: UInt32, length: Int) {
        var reversed: UInt32 = 0
        for bit in 0..<length { reversed |= (code >> UInt32(bit) & 1) << UInt32(length - 1 - bit) }
        write(reversed, bits: length)
    }

    var finished: [UInt8] { count > 0 ? bytes + [UInt8(truncatingIfNeeded: buffer)] : bytes }
}

/// LZ77 over a 32 KiB window, found through hash chains, in one fixed-Huffman block.
enum Deflater {
    static let lengthBase: [Int] = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]
    static let lengthExtra: [Int] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
    static let distanceBase: [Int] = [
        1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
    ]
    static let distanceExtra: [Int] = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]
    static let window = 32_768
    static let maximumChain = 64

    static func deflate(_ input: [UInt8], into writer: inout BitWriter) {
        writer.write(1, bits: 1)  // the last block
        writer.write(1, bits: 2)  // fixed Huffman codes
        var head = [Int](repeating: -1, count: 1 << 15)
        var previous = [Int](repeating: -1, count: window)
        func hash(_ i: Int) -> Int { (Int(input[i]) << 10 ^ Int(input[i + 1]) << 5 ^ Int(input[i + 2])) & 0x7FFF }
        func insert(_ i: Int) {
            guard i + 2 < input.count else { return }
            let h = hash(i)
            previous[i % window] = head[h]
            head[h] = i
        }
        var i = 0
        while i < input.count {
            var bestLength = 0
            var bestDistance = 0
            if i + 2 < input.count {
                var candidate = head[hash(i)]
                var chain = 0
                let longest = min(258, input.count - i)
                while candidate >= 0, i - candidate <= window, chain < maximumChain {
                    var length = 0
                    while length < longest, input[candidate + length] == input[i + length] { length += 1 }
                    if length > bestLength {
                        bestLength = length
                        bestDistance = i - candidate
                        if length == longest { break }
                    }
                    let next = previous[candidate % window]
                    guard next < candidate else { break }
                    candidate = next
                    chain += 1
                }
            }
            if bestLength >= 3 {
                writeLength(bestLength, into: &writer)
                writeDistance(bestDistance, into: &writer)
                for j in i..<i + bestLength { insert(j) }
                i += bestLength
            } else {
                writeLiteral(Int(input[i]), into: &writer)
                insert(i)
                i += 1
            }
        }
        writeLiteral(256, into: &writer)  // end of block
    }

    /// A literal or length symbol in the fixed code (RFC 1951 3.2.6).
    static func writeLiteral(_ symbol: Int, into writer: inout BitWriter) {
        switch symbol {
        case 0...143: writer.write(code: UInt32(0x30 + symbol), length: 8)
        case 144...255: writer.write(code: UInt32(0x190 + symbol - 144), length: 9)
        case 256...279: writer.write(code: UInt32(symbol - 256), length: 7)
        default: writer.write(code: UInt32(0xC0 + symbol - 280), length: 8)
        }
    }

    static func writeLength(_ length: Int, into writer: inout BitWriter) {
        let index = lengthBase.lastIndex { $0 <= length }!
        writeLiteral(257 + index, into: &writer)
        if lengthExtra[index] > 0 { writer.write(UInt32(length - lengthBase[index]), bits: lengthExtra[index]) }
    }

    static func writeDistance(_ distance: Int, into writer: inout BitWriter) {
        let index = distanceBase.lastIndex { $0 <= distance }!
        writer.write(code: UInt32(index), length: 5)
        if distanceExtra[index] > 0 { writer.write(UInt32(distance - distanceBase[index]), bits: distanceExtra[index]) }
    }
}
