import CBoringSSLRSA

/// RSASSA-PKCS1-v1_5 with SHA-256 (RFC 8017, JWT's RS256): what Google's service-account auth and
/// identity tokens use. Keys from 2048 to 8192 bits. The arithmetic is BoringSSL's (the copy TLS
/// compiles in: private operations in constant time, with blinding); what Herald adds is the limits
/// on what it accepts.
public enum RSA {
    public struct KeyError: Error, CustomStringConvertible, Sendable, Equatable {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    static let bitRange = 2048...8192

    /// A BoringSSL key, freed with its last reference. BoringSSL's keys are safe to use from several
    /// threads at once for signing and verifying.
    final class Key: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
        init(_ pointer: UnsafeMutableRawPointer) { self.pointer = pointer }
        deinit { herald_rsa_free(pointer) }
    }

    public struct PublicKey: Sendable {
        let key: Key
        /// The modulus's size in bytes: a signature's length.
        public let size: Int

        /// From the big-endian bytes of n and e (a JWK's `n` and `e`).
        public init(modulus n: some Collection<UInt8>, exponent e: some Collection<UInt8>) throws(KeyError) {
            let n = Array(n.drop { $0 == 0 })
            let e = Array(e.drop { $0 == 0 })
            let bits = n.isEmpty ? 0 : n.count * 8 - n[0].leadingZeroBitCount
            guard RSA.bitRange.contains(bits) else { throw KeyError("an RSA modulus of \(bits) bits (\(RSA.bitRange) are accepted)") }
            guard n.last! & 1 == 1 else { throw KeyError("an even RSA modulus") }
            guard (1...8).contains(e.count), e.last! & 1 == 1, e != [1] else {
                throw KeyError("an RSA public exponent that is not an odd number from 3 to 2⁶⁴")
            }
            guard let pointer = herald_rsa_public_key(n, n.count, e, e.count) else { throw KeyError("BoringSSL refused the RSA key") }
            self.init(key: Key(pointer), size: n.count)
        }

        init(key: Key, size: Int) {
            self.key = key
            self.size = size
        }

        /// Whether `signature` is this key's RS256 signature of `message`.
        public func isValidSignature(_ signature: some Collection<UInt8>, for message: some Sequence<UInt8>) -> Bool {
            guard signature.count == size else { return false }
            let signature = Array(signature)
            let message = Array(message)
            return herald_rs256_verify(key.pointer, signature, signature.count, message, message.count) == 1
        }
    }

    public struct PrivateKey: Sendable {
        public let publicKey: PublicKey

        /// PKCS#8 PrivateKeyInfo holding an rsaEncryption key.
        public init(pkcs8 der: [UInt8]) throws(KeyError) {
            // Versions as Python's cryptography takes them: BoringSSL's parser is not relied on for it.
            guard let info = Self.versionAndRest(der), info.version == 0 || info.version == 1,
                let algorithm = Self.element(der, at: info.rest), let key = Self.element(der, at: algorithm.end), der[algorithm.end] == 0x04,
                Self.versionAndRest(Array(der[key.content..<key.end]))?.version == 0
            else { throw KeyError("a malformed PKCS#8 RSA key") }
            try self.init(der: der, pkcs8: true)
        }

        /// PKCS#1 RSAPrivateKey (two primes: version 0).
        public init(pkcs1 der: [UInt8]) throws(KeyError) {
            guard Self.versionAndRest(der)?.version == 0 else { throw KeyError("a malformed RSA key") }
            try self.init(der: der, pkcs8: false)
        }

        /// A DER element at `index`: where its content starts and where it ends.
        static func element(_ der: [UInt8], at index: Int) -> (content: Int, end: Int)? {
            guard index + 1 < der.count else { return nil }
            let first = der[index + 1]
            var length = Int(first)
            var content = index + 2
            if first >= 0x80 {
                let count = Int(first & 0x7F)
                guard (1...3).contains(count), content + count <= der.count else { return nil }
                length = der[content..<content + count].reduce(0) { $0 << 8 | Int($1) }
                content += count
            }
            guard content + length <= der.count else { return nil }
            return (content, content + length)
        }

        /// The one-byte INTEGER version that opens a SEQUENCE, and where the next element starts.
        static func versionAndRest(_ der: [UInt8]) -> (version: UInt8, rest: Int)? {
            guard der.first == 0x30, let outer = element(der, at: 0), outer.content + 3 <= der.count, der[outer.content] == 0x02,
                der[outer.content + 1] == 0x01
            else { return nil }
            return (der[outer.content + 2], outer.content + 3)
        }

        private init(der: [UInt8], pkcs8: Bool) throws(KeyError) {
            guard !der.isEmpty, let pointer = herald_rsa_private_key(der, der.count, pkcs8 ? 1 : 0) else {
                throw KeyError(pkcs8 ? "a malformed PKCS#8 RSA key" : "a malformed RSA key")
            }
            let key = Key(pointer)
            let bits = Int(herald_rsa_bits(pointer))
            guard RSA.bitRange.contains(bits) else { throw KeyError("an RSA modulus of \(bits) bits (\(RSA.bitRange) are accepted)") }
            publicKey = PublicKey(key: key, size: (bits + 7) / 8)
        }

        /// The RS256 signature of `message` (deterministic: the same bytes as any other correct
        /// implementation). It is checked with the public key before it is returned, so a damaged key
        /// or a fault in the computation never gives out a wrong signature.
        public func signature(for message: some Sequence<UInt8>) throws(KeyError) -> [UInt8] {
            let message = Array(message)
            var signature = [UInt8](repeating: 0, count: publicKey.size)
            let length = signature.withUnsafeMutableBufferPointer { out in
                herald_rs256_sign(publicKey.key.pointer, message, message.count, out.baseAddress!, out.count)
            }
            guard length == publicKey.size else { throw KeyError("the key could not sign") }
            guard publicKey.isValidSignature(signature, for: message) else { throw KeyError("the signature did not verify") }
            return signature
        }
    }
}
