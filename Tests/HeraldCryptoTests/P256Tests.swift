import Crypto
import Foundation
import HeraldTesting
import P256Signatures
import Testing
import WireFormats

/// ES256 (APNs's provider tokens) on the BoringSSL the functions link, against swift-crypto's own copy
/// and Python's cryptography: keys read as those libraries write them, signatures each verifies.
@Suite struct P256Tests {
    @Test func signaturesVerifyWithSwiftCryptoAndKeysReadAsItWritesThem() throws {
        for _ in 0..<20 {
            let reference = P256.Signing.PrivateKey()
            let key = try P256Signatures.P256.PrivateKey(pem: reference.pemRepresentation)
            #expect(key.publicPoint == Array(reference.publicKey.x963Representation))
            for length in [0, 1, 55, 64, 1000] {
                let message = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ length) }
                let signature = try key.signature(for: message)
                #expect(signature.count == 64)
                let parsed = try P256.Signing.ECDSASignature(rawRepresentation: signature)
                #expect(reference.publicKey.isValidSignature(parsed, for: Data(message)))
                #expect(!reference.publicKey.isValidSignature(parsed, for: Data(message + [1])))
            }
        }
    }

    @Test func aKeyPastedWithEscapedNewlinesReadsTheSame() throws {
        let reference = P256.Signing.PrivateKey()
        let escaped = reference.pemRepresentation.replacingOccurrences(of: "\n", with: "\\n")
        #expect(try P256Signatures.P256.PrivateKey(pem: escaped).publicPoint == Array(reference.publicKey.x963Representation))
    }

    /// A `.p8` that is not a P-256 key is refused by name, and the error holds nothing of the key.
    @Test func whatIsNoP256KeyIsRefusedByName() async throws {
        let p384 = P384.Signing.PrivateKey().pemRepresentation
        let rsa = try await TestKeys.rsaPEM()
        let p256 = P256.Signing.PrivateKey().pemRepresentation
        let truncated = String(p256.prefix(p256.count / 2)) + "\n-----END PRIVATE KEY-----\n"
        let notBase64 = "-----BEGIN PRIVATE KEY-----\n!!!!\n-----END PRIVATE KEY-----\n"
        let cases: [(String, String)] = [
            (p384, "not a P-256"), (rsa, "private key"), (truncated, "not a P-256"), (notBase64, "not Base64"), ("hello", "no PEM private key"),
        ]
        for (pem, named) in cases {
            do {
                _ = try P256Signatures.P256.PrivateKey(pem: pem)
                Issue.record("taken: \(named)")
            } catch {
                #expect(error.description.contains(named), "\(error)")
                #expect(!error.description.contains("MII") && error.description.count < 120, "\(error)")
            }
        }
    }

    @Test func pythonsCryptographyTakesOurSignaturesAndWeReadItsKeys() async throws {
        let python = try await PythonReference.forTest(importing: "cryptography")
        let script = TestPaths.packageRoot.appendingPathComponent("Tests/Python/es256_reference.py")
        let made = try await ProcessRunner.run(python, [script.path], stdin: Data(#"{"keys": 5}"#.utf8))
        try #require(made.status == 0, "\(made.stderr)")
        var items: [JSONValue] = []
        for key in try JSONValue(parsing: Array(made.stdout))["keys"]?.arrayValue ?? [] {
            let ours = try P256Signatures.P256.PrivateKey(pem: key["pem"]?.stringValue ?? "")
            #expect(Base64.encode(ours.publicPoint) == key["point"]?.stringValue)
            for length in [0, 32, 500] {
                let message = (0..<length).map { _ in UInt8.random(in: 0...255) }
                var signature = try ours.signature(for: message)
                items.append([
                    "point": .string(Base64.encode(ours.publicPoint)), "message": .string(Base64.encode(message)),
                    "signature": .string(Base64.encode(signature)),
                ])
                signature[63] ^= 1
                items.append([
                    "point": .string(Base64.encode(ours.publicPoint)), "message": .string(Base64.encode(message)),
                    "signature": .string(Base64.encode(signature)),
                ])
            }
        }
        let checked = try await ProcessRunner.run(python, [script.path], stdin: Data(JSONValue.object(["verify": .array(items)]).serialized().utf8))
        try #require(checked.status == 0, "\(checked.stderr)")
        let verdicts = try JSONValue(parsing: Array(checked.stdout))["verdicts"]?.arrayValue?.compactMap(\.boolValue) ?? []
        #expect(verdicts.count == 30)
        #expect(verdicts == (0..<15).flatMap { _ in [true, false] })
    }
}
