/// Just enough DER (X.690) to read RSA private keys: SEQUENCE, INTEGER, OCTET STRING, OBJECT
/// IDENTIFIER, with definite lengths. Anything else, or a length past the end, is an error.
enum DER {
    struct Malformed: Error {}

    /// 1.2.840.113549.1.1.1, as its DER content bytes.
    static let rsaEncryption: [UInt8] = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01]

    struct Reader {
        private let bytes: [UInt8]
        private var position = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        /// The SEQUENCE that `der` is, whole (nothing after it).
        static func sequence(of der: [UInt8]) throws(Malformed) -> Reader {
            var outer = Reader(der)
            let sequence = try outer.sequence()
            guard outer.position == der.count else { throw Malformed() }
            return sequence
        }

        mutating func sequence() throws(Malformed) -> Reader { Reader(try element(tag: 0x30)) }
        mutating func octetString() throws(Malformed) -> [UInt8] { try element(tag: 0x04) }
        mutating func objectIdentifier() throws(Malformed) -> [UInt8] { try element(tag: 0x06) }

        /// A non-negative INTEGER's big-endian magnitude (its sign byte dropped).
        mutating func integer() throws(Malformed) -> [UInt8] {
            let content = try element(tag: 0x02)
            guard let first = content.first, first & 0x80 == 0 else { throw Malformed() }
            return content.count > 1 && first == 0 ? Array(content.dropFirst()) : content
        }

        private mutating func element(tag: UInt8) throws(Malformed) -> [UInt8] {
            guard position + 2 <= bytes.count, bytes[position] == tag else { throw Malformed() }
            var length = Int(bytes[position + 1])
            position += 2
            if length & 0x80 != 0 {
                let count = length & 0x7F
                guard (1...4).contains(count), position + count <= bytes.count else { throw Malformed() }
                length = bytes[position..<(position + count)].reduce(0) { $0 << 8 | Int($1) }
                position += count
            }
            guard length <= bytes.count - position else { throw Malformed() }
            defer { position += length }
            return Array(bytes[position..<(position + length)])
        }
    }
}
