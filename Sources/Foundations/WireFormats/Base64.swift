/// Base64 (RFC 4648): the standard alphabet or the URL-safe one, with or without padding.
public enum Base64 {
    private static let standard = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlSafe = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Standard base64 with padding, or (`urlSafe`) base64url without it, as JWTs write it.
    public static func encode(_ bytes: some Collection<UInt8>, urlSafe: Bool = false) -> String {
        let alphabet = urlSafe ? Self.urlSafe : Self.standard
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var iterator = bytes.makeIterator()
        while let first = iterator.next() {
            let second = iterator.next()
            let third = iterator.next()
            let group = UInt32(first) << 16 | UInt32(second ?? 0) << 8 | UInt32(third ?? 0)
            out.append(alphabet[Int(group >> 18)])
            out.append(alphabet[Int(group >> 12 & 0x3F)])
            if second != nil { out.append(alphabet[Int(group >> 6 & 0x3F)]) } else if !urlSafe { out.append(UInt8(ascii: "=")) }
            if third != nil { out.append(alphabet[Int(group & 0x3F)]) } else if !urlSafe { out.append(UInt8(ascii: "=")) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of standard or URL-safe base64, padded or not; nil for anything else (whitespace
    /// included, padding where it cannot be). Bits left over in the last character are ignored, as
    /// most decoders (protobuf's among them) ignore them.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var utf8 = Array(text.utf8)
        var padding = 0
        while utf8.last == UInt8(ascii: "=") {
            utf8.removeLast()
            padding += 1
        }
        guard padding <= 2, padding == 0 || (utf8.count + padding) % 4 == 0, utf8.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count * 3 / 4)
        var group: UInt32 = 0
        var count = 0
        for character in utf8 {
            guard let value = sextet(character) else { return nil }
            group = group << 6 | UInt32(value)
            count += 1
            if count == 4 {
                out.append(UInt8(truncatingIfNeeded: group >> 16))
                out.append(UInt8(truncatingIfNeeded: group >> 8))
                out.append(UInt8(truncatingIfNeeded: group))
                group = 0
                count = 0
            }
        }
        switch count {
        case 2:
            out.append(UInt8(truncatingIfNeeded: group >> 4))
        case 3:
            out.append(UInt8(truncatingIfNeeded: group >> 10))
            out.append(UInt8(truncatingIfNeeded: group >> 2))
        default: break
        }
        return out
    }

    private static func sextet(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): character - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"), UInt8(ascii: "-"): 62
        case UInt8(ascii: "/"), UInt8(ascii: "_"): 63
        default: nil
        }
    }
}
