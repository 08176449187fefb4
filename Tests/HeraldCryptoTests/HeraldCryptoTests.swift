import Crypto
import CryptoExtras
import HeraldCrypto
import Testing

/// Herald's SHA-256 and RS256 against BoringSSL's (swift-crypto): the same digests, the same
/// signatures byte for byte (PKCS#1 v1.5 is deterministic), each accepting the other's.
@Suite struct HeraldCryptoTests {
    @Test func sha256MatchesBoringSSLForEveryLengthAroundTheBlockSize() {
        var generator = SystemRandomNumberGenerator()
        for length in Array(0...200) + [1000, 4095, 4096, 65_537] {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(HeraldCrypto.SHA256.hash(bytes) == Array(Crypto.SHA256.hash(data: bytes)), "length \(length)")
        }
        // Fed in pieces, the same.
        let bytes = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        var hasher = HeraldCrypto.SHA256()
        for piece in stride(from: 0, to: bytes.count, by: 37) { hasher.update(bytes[piece..<min(piece + 37, bytes.count)]) }
        #expect(hasher.finalize() == Array(Crypto.SHA256.hash(data: bytes)))
        // FIPS 180-2's first example.
        let abc = HeraldCrypto.SHA256.hash("abc".utf8).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        #expect(abc == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test(arguments: [_RSA.Signing.KeySize.bits2048, .bits3072, .bits4096])
    func signaturesAreBoringSSLsByteForByteAndVerifyBothWays(size: _RSA.Signing.KeySize) throws {
        let reference = try _RSA.Signing.PrivateKey(keySize: size)
        let fromPKCS1 = try RSA.PrivateKey(pkcs1: Array(reference.derRepresentation))
        let fromPKCS8 = try RSA.PrivateKey(pkcs8: Self.pkcs8(wrapping: Array(reference.derRepresentation)))
        let publicKey = try Self.publicKey(of: reference)
        for length in [0, 1, 55, 64, 1000] {
            let message = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ length) }
            let expected = Array(try reference.signature(for: message, padding: .insecurePKCS1v1_5).rawRepresentation)
            #expect(try fromPKCS1.signature(for: message) == expected)
            #expect(try fromPKCS8.signature(for: message) == expected)
            #expect(publicKey.isValidSignature(expected, for: message))
            #expect(
                reference.publicKey.isValidSignature(
                    _RSA.Signing.RSASignature(rawRepresentation: try fromPKCS1.signature(for: message)), for: message, padding: .insecurePKCS1v1_5))
            // Another message, or one bit of the signature changed: refused.
            #expect(!publicKey.isValidSignature(expected, for: message + [0]))
            var flipped = expected
            flipped[flipped.count / 2] ^= 0x10
            #expect(!publicKey.isValidSignature(flipped, for: message))
            #expect(!publicKey.isValidSignature(expected.dropLast(), for: message))
        }
    }

    @Test func malformedKeysAreRefusedNeverCrash() throws {
        let der = Array(try _RSA.Signing.PrivateKey(keySize: .bits2048).derRepresentation)
        // Every truncation, and bytes changed at every position of the header and elsewhere.
        for length in stride(from: 0, to: der.count, by: 7) {
            #expect(throws: RSA.KeyError.self) { try RSA.PrivateKey(pkcs1: Array(der.prefix(length))) }
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<300 {
            var damaged = der
            let position = Bool.random(using: &generator) ? Int.random(in: 0..<12, using: &generator) : Int.random(in: 0..<der.count, using: &generator)
            damaged[position] ^= UInt8.random(in: 1...255, using: &generator)
            // Either refused, or (a change inside a number the check cannot see, like d) a key whose
            // signatures are checked before they leave: never a crash, never an unchecked signature.
            if let key = try? RSA.PrivateKey(pkcs1: damaged), let signature = try? key.signature(for: [1, 2, 3]) {
                #expect(key.publicKey.isValidSignature(signature, for: [1, 2, 3]))
            }
        }
        #expect(throws: RSA.KeyError.self) { try RSA.PrivateKey(pkcs8: der) }
        #expect(throws: RSA.KeyError.self) { try RSA.PublicKey(modulus: [UInt8](repeating: 0xFF, count: 128), exponent: [1, 0, 1]) }  // 1024 bits
        #expect(throws: RSA.KeyError.self) { try RSA.PublicKey(modulus: [UInt8](repeating: 0xFF, count: 256), exponent: [2]) }
        #expect(throws: RSA.KeyError.self) { try RSA.PublicKey(modulus: [UInt8](repeating: 0xFE, count: 256), exponent: [1, 0, 1]) }
    }

    static func publicKey(of key: _RSA.Signing.PrivateKey) throws -> RSA.PublicKey {
        let parameters = try key.publicKey.getKeyPrimitives()
        return try RSA.PublicKey(modulus: Array(parameters.modulus), exponent: Array(parameters.publicExponent))
    }

    /// PrivateKeyInfo { 0, rsaEncryption NULL, OCTET STRING pkcs1 }, as Google's key files hold it.
    static func pkcs8(wrapping pkcs1: [UInt8]) -> [UInt8] {
        func element(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
            let count = content.count
            let length: [UInt8] = count < 128 ? [UInt8(count)] : count < 256 ? [0x81, UInt8(count)] : [0x82, UInt8(count >> 8), UInt8(count & 0xFF)]
            return [tag] + length + content
        }
        let algorithm = element(0x30, element(0x06, [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01]) + [0x05, 0x00])
        return element(0x30, element(0x02, [0]) + algorithm + element(0x04, pkcs1))
    }
}
