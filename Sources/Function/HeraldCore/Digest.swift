import HeraldCrypto

/// SHA-256 as lowercase hex: a fixed-length name for anything (a ledger key, a token's claim, an id
/// too long for a header).
public enum Digest {
    public static func hex(_ text: String) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(64)
        for byte in SHA256.hash(text.utf8) {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
