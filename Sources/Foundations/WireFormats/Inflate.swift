/// DEFLATE's bits, read least significant first.
struct BitReader {
    let bytes: [UInt8]
    var position: Int
    var buffer: UInt64 = 0
    var count = 0

    init(bytes: [UInt8], position: Int) {
        self.bytes = bytes
        self.position = position
    }

    mutating func read(_ bits: Int) throws(Gzip.Error) -> Int {
        while count < bits {
            guard position < bytes.count else { throw Gzip.Error("a truncated DEFLATE stream") }
            buffer |= UInt64(bytes[position]) << UInt64(count)
            position += 1
            count += 8
        }
        let value = Int(buffer & ((1 << UInt64(bits)) - 1))
        buffer >>= UInt64(bits)
        count -= bits
        return value
    }

    /// Drops the bits left of the current byte.
    mutating func align() {
        buffer >>= UInt64(count % 8)
        count -= count % 8
    }

    /// The first byte not read (after the bits consumed, aligned).
    var alignedPosition: Int { position - count / 8 }
}

/// A canonical Huffman code from code lengths, decoded bit by bit (RFC 1951 3.2.2).
struct HuffmanCode {
    var counts = [Int](repeating: 0, count: 16)
    var symbols: [Int] = []

    init(lengths: [Int]) throws(Gzip.Error) {
        for length in lengths { counts[length] += 1 }
        counts[0] = 0
        var left = 1
        for length in 1..<16 {
            left = left * 2 - counts[length]
            guard left >= 0 else { throw Gzip.Error("an over-subscribed Huffman code") }
        }
        var offsets = [Int](repeating: 0, count: 16)
        for length in 1..<15 { offsets[length + 1] = offsets[length] + counts[length] }
        symbols = [Int](repeating: 0, count: lengths.count)
        for (symbol, length) in lengths.enumerated() where length != 0 {
            symbols[offsets[length]] = symbol
            offsets[length] += 1
        }
    }

    func decode(_ reader: inout BitReader) throws(Gzip.Error) -> Int {
        var code = 0
        var first = 0
        var index = 0
        for length in 1..<16 {
            code |= try reader.read(1)
            let count = counts[length]
            if code - first < count { return symbols[index + code - first] }
            index += count
            first = (first + count) << 1
            code <<= 1
        }
        throw Gzip.Error("a code that is not in the Huffman table")
    }
}

enum Inflater {
    static let codeLengthOrder = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]

    static func inflate(_ reader: inout BitReader, limit: Int) throws(Gzip.Error) -> [UInt8] {
        var out: [UInt8] = []
        var last = false
        while !last {
            last = try reader.read(1) == 1
            switch try reader.read(2) {
            case 0:
                reader.align()
                let length = try reader.read(16)
                guard try reader.read(16) == length ^ 0xFFFF else { throw Gzip.Error("a stored block whose length check fails") }
                guard out.count + length <= limit else { throw Gzip.Error("more than \(limit) bytes once decompressed") }
                for _ in 0..<length { out.append(UInt8(try reader.read(8))) }
            case 1:
                let literals = try HuffmanCode(lengths: (0..<288).map { $0 < 144 ? 8 : $0 < 256 ? 9 : $0 < 280 ? 7 : 8 })
                let distances = try HuffmanCode(lengths: [Int](repeating: 5, count: 30))
                try block(&reader, literals, distances, into: &out, limit: limit)
            case 2:
                let literalCount = try reader.read(5) + 257
                let distanceCount = try reader.read(5) + 1
                let lengthCount = try reader.read(4) + 4
                guard literalCount <= 286, distanceCount <= 30 else { throw Gzip.Error("a dynamic block with too many codes") }
                var codeLengths = [Int](repeating: 0, count: 19)
                for index in 0..<lengthCount { codeLengths[codeLengthOrder[index]] = try reader.read(3) }
                let lengthCode = try HuffmanCode(lengths: codeLengths)
                var lengths: [Int] = []
                while lengths.count < literalCount + distanceCount {
                    let symbol = try lengthCode.decode(&reader)
                    switch symbol {
                    case 0..<16: lengths.append(symbol)
                    case 16:
                        guard let previous = lengths.last else { throw Gzip.Error("a repeat with nothing before it") }
                        lengths += [Int](repeating: previous, count: 3 + (try reader.read(2)))
                    case 17: lengths += [Int](repeating: 0, count: 3 + (try reader.read(3)))
                    default: lengths += [Int](repeating: 0, count: 11 + (try reader.read(7)))
                    }
                }
                guard lengths.count == literalCount + distanceCount else { throw Gzip.Error("code lengths that overrun their table") }
                try block(
                    &reader, try HuffmanCode(lengths: Array(lengths[..<literalCount])), try HuffmanCode(lengths: Array(lengths[literalCount...])),
                    into: &out, limit: limit)
            default:
                throw Gzip.Error("a DEFLATE block of the reserved type")
            }
        }
        reader.align()
        return out
    }

    static func block(_ reader: inout BitReader, _ literals: HuffmanCode, _ distances: HuffmanCode, into out: inout [UInt8], limit: Int) throws(Gzip.Error) {
        while true {
            let symbol = try literals.decode(&reader)
            if symbol < 256 {
                guard out.count < limit else { throw Gzip.Error("more than \(limit) bytes once decompressed") }
                out.append(UInt8(symbol))
                continue
            }
            if symbol == 256 { return }
            let index = symbol - 257
            guard index < 29 else { throw Gzip.Error("a length code out of range") }
            let length = Deflater.lengthBase[index] + (try reader.read(Deflater.lengthExtra[index]))
            let distanceSymbol = try distances.decode(&reader)
            guard distanceSymbol < 30 else { throw Gzip.Error("a distance code out of range") }
            let distance = Deflater.distanceBase[distanceSymbol] + (try reader.read(Deflater.distanceExtra[distanceSymbol]))
            guard distance <= out.count else { throw Gzip.Error("a distance before the start of the data") }
            guard out.count + length <= limit else { throw Gzip.Error("more than \(limit) bytes once decompressed") }
            let start = out.count - distance
            for offset in 0..<length { out.append(out[start + offset]) }
        }
    }
}
