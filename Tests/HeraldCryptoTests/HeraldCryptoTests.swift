import Crypto
import CryptoExtras
import FirestoreModel
import Foundation
import HeraldCrypto
import HeraldTesting
import RSASignatures
import Testing
import WireFormats

/// Herald's SHA-256 and RS256 against swift-crypto's (its own copy of BoringSSL): the same digests, the same
/// signatures byte for byte (PKCS#1 v1.5 is deterministic), each accepting the other's. Key generation
/// and debug-build signing take seconds of CPU: they run on threads of their own (`offThePool`), not on
/// Swift's cooperative pool, where they held up every other test's tasks (a child process's stop,
/// timed by another test, took 52 s in one CI run). The work there returns what it found wrong; the
/// expectations are checked here, in the test's own task.
@Suite struct HeraldCryptoTests {
    @Test func sha256MatchesBoringSSLForEveryLengthAroundTheBlockSize() async throws {
        #expect(try await offThePool { Self.digestMismatches() } == [])
        // FIPS 180-2's first example.
        let abc = HeraldCrypto.SHA256.hash("abc".utf8).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        #expect(abc == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test(arguments: [_RSA.Signing.KeySize.bits2048, .bits3072, .bits4096])
    func signaturesAreBoringSSLsByteForByteAndVerifyBothWays(size: _RSA.Signing.KeySize) async throws {
        #expect(try await offThePool { try Self.signatureMismatches(size: size) } == [])
    }

    @Test func malformedKeysAreRefusedNeverCrash() async throws {
        #expect(try await offThePool { try Self.malformedKeyProblems() } == [])
    }

    /// Lengths whose digest differs from BoringSSL's, and "pieces" when feeding in pieces differs.
    static func digestMismatches() -> [String] {
        var generator = SystemRandomNumberGenerator()
        var wrong: [String] = []
        for length in Array(0...200) + [1000, 4095, 4096, 65_537] {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if HeraldCrypto.SHA256.hash(bytes) != Array(Crypto.SHA256.hash(data: bytes)) { wrong.append("length \(length)") }
        }
        let bytes = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        var hasher = HeraldCrypto.SHA256()
        for piece in stride(from: 0, to: bytes.count, by: 37) { hasher.update(bytes[piece..<min(piece + 37, bytes.count)]) }
        if hasher.finalize() != Array(Crypto.SHA256.hash(data: bytes)) { wrong.append("pieces") }
        return wrong
    }

    static func signatureMismatches(size: _RSA.Signing.KeySize) throws -> [String] {
        let reference = try _RSA.Signing.PrivateKey(keySize: size)
        let fromPKCS1 = try RSA.PrivateKey(pkcs1: Array(reference.derRepresentation))
        let fromPKCS8 = try RSA.PrivateKey(pkcs8: pkcs8(wrapping: Array(reference.derRepresentation)))
        let publicKey = try publicKey(of: reference)
        var wrong: [String] = []
        for length in [0, 55, 1000] {
            let message = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ length) }
            let expected = Array(try reference.signature(for: message, padding: .insecurePKCS1v1_5).rawRepresentation)
            if try fromPKCS1.signature(for: message) != expected { wrong.append("\(length): PKCS#1 key signs otherwise") }
            if try fromPKCS8.signature(for: message) != expected { wrong.append("\(length): PKCS#8 key signs otherwise") }
            if !publicKey.isValidSignature(expected, for: message) { wrong.append("\(length): BoringSSL's signature refused") }
            let ours = _RSA.Signing.RSASignature(rawRepresentation: try fromPKCS1.signature(for: message))
            if !reference.publicKey.isValidSignature(ours, for: message, padding: .insecurePKCS1v1_5) { wrong.append("\(length): BoringSSL refuses ours") }
            // Another message, one bit of the signature changed, or a byte short: refused.
            if publicKey.isValidSignature(expected, for: message + [0]) { wrong.append("\(length): another message accepted") }
            var flipped = expected
            flipped[flipped.count / 2] ^= 0x10
            if publicKey.isValidSignature(flipped, for: message) { wrong.append("\(length): a changed signature accepted") }
            if publicKey.isValidSignature(expected.dropLast(), for: message) { wrong.append("\(length): a short signature accepted") }
        }
        return wrong
    }

    static func malformedKeyProblems() throws -> [String] {
        let der = Array(try _RSA.Signing.PrivateKey(keySize: .bits2048).derRepresentation)
        var wrong: [String] = []
        // Every truncation is refused.
        for length in stride(from: 0, to: der.count, by: 7) where (try? RSA.PrivateKey(pkcs1: Array(der.prefix(length)))) != nil {
            wrong.append("truncated to \(length) accepted")
        }
        // Bytes changed in the header and elsewhere: either refused, or (a change inside a number the
        // checks cannot see, like d) a key whose signatures are checked before they leave. Never a crash.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<120 {
            var damaged = der
            let position = Bool.random(using: &generator) ? Int.random(in: 0..<12, using: &generator) : Int.random(in: 0..<der.count, using: &generator)
            damaged[position] ^= UInt8.random(in: 1...255, using: &generator)
            if let key = try? RSA.PrivateKey(pkcs1: damaged), let signature = try? key.signature(for: [1, 2, 3]),
                !key.publicKey.isValidSignature(signature, for: [1, 2, 3])
            {
                wrong.append("byte \(position) changed: an unchecked signature left")
            }
        }
        if (try? RSA.PrivateKey(pkcs8: der)) != nil { wrong.append("PKCS#1 taken for PKCS#8") }
        if (try? RSA.PublicKey(modulus: [UInt8](repeating: 0xFF, count: 128), exponent: [1, 0, 1])) != nil { wrong.append("1024 bits accepted") }
        if (try? RSA.PublicKey(modulus: [UInt8](repeating: 0xFF, count: 256), exponent: [2])) != nil { wrong.append("an even exponent accepted") }
        if (try? RSA.PublicKey(modulus: [UInt8](repeating: 0xFE, count: 256), exponent: [1, 0, 1])) != nil { wrong.append("an even modulus accepted") }
        return wrong
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

/// RSASignatures (BoringSSL) against Python's `cryptography` as the oracle: keys of 2048,
/// 2049, 3072 and 4096 bits with exponents 3 and 65537, read from PKCS#8 and PKCS#1; signatures equal
/// byte for byte; the same verdict on hostile signatures (changed, cut, padded, the modulus, zero) and
/// on damaged keys.
@Suite struct CryptographyReferenceTests {
    @Test func signaturesAndVerdictsAreThoseOfPythonsCryptography() async throws {
        let python = try await PythonReference.forTest(importing: "cryptography")
        let script = TestPaths.packageRoot.appendingPathComponent("Tests/Python/rsa_reference.py")
        let seed = UInt32.random(in: 0...UInt32.max)
        let result = try await ProcessRunner.run(python, [script.path, String(seed), "2"])
        try #require(result.status == 0, "\(result.stderr)")
        let reference = try JSONValue(parsing: Array(result.stdout))
        let problems = try await offThePool { Self.mismatches(reference["keys"]?.arrayValue ?? []) }
        let keys = reference["keys"]?.arrayValue?.count ?? 0
        print("RS256 against Python's cryptography (seed \(seed)): \(keys) keys, \(problems.count) mismatches")
        #expect(keys == 8)
        #expect(problems.isEmpty, "seed \(seed): \(problems.prefix(10).joined(separator: "\n"))")
    }

    static func bytes(_ value: JSONValue?) -> [UInt8] { value?.stringValue.flatMap { Base64.decode($0) } ?? [] }

    static func mismatches(_ keys: [JSONValue]) -> [String] {
        var wrong: [String] = []
        for (index, key) in keys.enumerated() {
            let name = "key \(index) (\(key["bits"]?.int64Value ?? 0) bits)"
            guard let fromPKCS8 = try? RSA.PrivateKey(pkcs8: bytes(key["pkcs8"])), let fromPKCS1 = try? RSA.PrivateKey(pkcs1: bytes(key["pkcs1"])),
                let publicKey = try? RSA.PublicKey(modulus: bytes(key["n"]), exponent: bytes(key["e"]))
            else {
                wrong.append("\(name): refused")
                continue
            }
            for (number, entry) in (key["messages"]?.arrayValue ?? []).enumerated() {
                let message = bytes(entry["message"])
                let expected = bytes(entry["signature"])
                if (try? fromPKCS8.signature(for: message)) != expected { wrong.append("\(name) message \(number): PKCS#8 key signs otherwise") }
                if (try? fromPKCS1.signature(for: message)) != expected { wrong.append("\(name) message \(number): PKCS#1 key signs otherwise") }
                if !publicKey.isValidSignature(expected, for: message) { wrong.append("\(name) message \(number): its signature refused") }
                for (kind, hostile) in (entry["hostile"]?.arrayValue ?? []).enumerated() {
                    let verdict = publicKey.isValidSignature(bytes(hostile["signature"]), for: message)
                    if verdict != (hostile["accepted"]?.boolValue ?? true) { wrong.append("\(name) message \(number): hostile signature \(kind) \(verdict)") }
                }
            }
            // Two structures OpenSSL reads and cryptography refuses, found by this test: a PKCS#8 version
            // of 0x86 and parameters other than NULL.
            for (position, value) in [(6, UInt8(0x86)), (20, UInt8(0x51))] {
                var changed = bytes(key["pkcs8"])
                changed[position] = value
                if (try? RSA.PrivateKey(pkcs8: changed)) != nil { wrong.append("\(name): byte \(position) as \(value) loads") }
            }
            for (number, damaged) in (key["damaged"]?.arrayValue ?? []).enumerated() {
                let loads = (try? RSA.PrivateKey(pkcs8: bytes(damaged["der"]))) != nil
                if loads != (damaged["loads"]?.boolValue ?? false) { wrong.append("\(name) damaged key \(number): loads \(loads)") }
            }
        }
        return wrong
    }
}
