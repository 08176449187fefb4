import CBoringSSLP256
import WireFormats

/// ECDSA on P-256 with SHA-256 (RFC 7518's ES256): what Apple's token-based APNs authentication signs
/// its provider tokens with, from the team's `.p8` key. The arithmetic is BoringSSL's (the copy TLS
/// compiles in: constant time, nonces from the key, the digest and fresh randomness); what Herald adds
/// is the limits on what it accepts and the check of every signature before it leaves.
public enum P256 {
    public struct KeyError: Error, CustomStringConvertible, Sendable, Equatable {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// A BoringSSL key, freed with its last reference (safe to sign with from several threads at once).
    final class Key: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
        init(_ pointer: UnsafeMutableRawPointer) { self.pointer = pointer }
        deinit { herald_p256_free(pointer) }
    }

    public struct PrivateKey: Sendable {
        let key: Key
        /// The public point, uncompressed (`0x04 ‖ x ‖ y`): what a verifier is given.
        public let publicPoint: [UInt8]

        /// A key in PEM, as Apple's `AuthKey_KEYID.p8` holds it (`-----BEGIN PRIVATE KEY-----`, PKCS#8).
        /// The error says what is wrong, never a part of the key.
        public init(pem: String) throws(KeyError) {
            let begin = "-----BEGIN PRIVATE KEY-----"
            let end = "-----END PRIVATE KEY-----"
            guard let start = pem.firstByteRange(of: begin), let stop = pem[start.upperBound...].firstByteRange(of: end) else {
                throw KeyError("no PEM private key (-----BEGIN PRIVATE KEY-----) in it")
            }
            let body = String(pem[start.upperBound..<stop.lowerBound]).replacingEscapedNewlines.filter { !$0.isWhitespace }
            guard let der = Base64.decode(body) else { throw KeyError("its PEM body is not Base64") }
            try self.init(pkcs8: der)
        }

        /// PKCS#8 PrivateKeyInfo holding a P-256 key with its public point.
        public init(pkcs8 der: [UInt8]) throws(KeyError) {
            guard !der.isEmpty, let pointer = herald_p256_private_key(der, der.count) else {
                throw KeyError("not a P-256 private key in PKCS#8 (an APNs .p8 key is one)")
            }
            let key = Key(pointer)
            var point = [UInt8](repeating: 0, count: 65)
            let length = point.withUnsafeMutableBufferPointer { herald_p256_public_point(pointer, $0.baseAddress!, $0.count) }
            guard length == 65 else { throw KeyError("the key's public point could not be read") }
            self.key = key
            self.publicPoint = point
        }

        /// The ES256 signature of `message`: r ‖ s, 32 bytes each (JWS's form, not DER).
        public func signature(for message: some Sequence<UInt8>) throws(KeyError) -> [UInt8] {
            let message = Array(message)
            var signature = [UInt8](repeating: 0, count: 64)
            let ok = signature.withUnsafeMutableBufferPointer { herald_es256_sign(key.pointer, message, message.count, $0.baseAddress!) }
            guard ok == 1 else { throw KeyError("the key could not sign") }
            guard herald_es256_verify(key.pointer, message, message.count, signature) == 1 else { throw KeyError("the signature did not verify") }
            return signature
        }
    }
}

extension String {
    /// A PEM pasted into an environment variable or JSON often carries `\n` as two characters: they go.
    fileprivate var replacingEscapedNewlines: String {
        guard contains("\\") else { return self }
        var out = ""
        var escaped = false
        for character in self {
            if escaped {
                escaped = false
                if character == "n" { continue }
                out.append("\\")
            }
            if character == "\\" { escaped = true } else { out.append(character) }
        }
        return out
    }
}
