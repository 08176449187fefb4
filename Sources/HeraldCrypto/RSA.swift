/// RSASSA-PKCS1-v1_5 with SHA-256 (RFC 8017, JWT's RS256): what Google's service-account auth and
/// identity tokens use. Keys from 2048 to 8192 bits.
public enum RSA {
    public struct KeyError: Error, CustomStringConvertible, Sendable, Equatable {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    static let bitRange = 2048...8192

    public struct PublicKey: Sendable {
        let modulus: Montgomery
        let exponent: UInt64
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
            self.modulus = Montgomery(modulus: Limbs.from(bigEndian: n))
            self.exponent = e.reduce(0) { $0 << 8 | UInt64($1) }
            self.size = n.count
        }

        /// Whether `signature` is this key's RS256 signature of `message`.
        public func isValidSignature(_ signature: some Collection<UInt8>, for message: some Sequence<UInt8>) -> Bool {
            guard signature.count == size else { return false }
            let value = Limbs.from(bigEndian: signature, count: modulus.limbs)
            guard Limbs.less(value, modulus.modulus) else { return false }
            let recovered = Limbs.bigEndian(modulus.publicPower(value, exponent), bytes: size)
            guard let expected = RSA.encoded(digest: SHA256.hash(message), size: size) else { return false }
            return recovered == expected
        }
    }

    public struct PrivateKey: Sendable {
        public let publicKey: PublicKey
        let p: Montgomery
        let q: Montgomery
        let dP: [UInt64]
        let dQ: [UInt64]
        let qInverse: [UInt64]

        /// PKCS#8 PrivateKeyInfo holding an rsaEncryption key.
        public init(pkcs8 der: [UInt8]) throws(KeyError) {
            do {
                var info = try DER.Reader.sequence(of: der)
                _ = try info.integer()
                var algorithm = try info.sequence()
                guard try algorithm.objectIdentifier() == DER.rsaEncryption else { throw KeyError("not an RSA key") }
                try self.init(pkcs1: try info.octetString())
            } catch let error as KeyError {
                throw error
            } catch {
                throw KeyError("a malformed PKCS#8 key")
            }
        }

        /// PKCS#1 RSAPrivateKey (two primes).
        public init(pkcs1 der: [UInt8]) throws(KeyError) {
            let fields: [[UInt8]]
            do {
                var key = try DER.Reader.sequence(of: der)
                guard try key.integer() == [0] else { throw KeyError("an RSA key of more than two primes") }
                fields = try (0..<8).map { _ in try key.integer() }
            } catch let error as KeyError {
                throw error
            } catch {
                throw KeyError("a malformed RSA key")
            }
            let (n, e, p, q, dP, dQ, qInverse) = (fields[0], fields[1], fields[3], fields[4], fields[5], fields[6], fields[7])
            publicKey = try PublicKey(modulus: n, exponent: e)
            let primeLimbs = max(Limbs.trimmed(Limbs.from(bigEndian: p)).count, Limbs.trimmed(Limbs.from(bigEndian: q)).count)
            let pLimbs = Limbs.from(bigEndian: p, count: primeLimbs)
            let qLimbs = Limbs.from(bigEndian: q, count: primeLimbs)
            guard pLimbs.count == primeLimbs, qLimbs.count == primeLimbs, pLimbs[0] & 1 == 1, qLimbs[0] & 1 == 1,
                pLimbs.last != 0, qLimbs.last != 0,
                Limbs.trimmed(Limbs.multiply(pLimbs, qLimbs)) == Limbs.trimmed(publicKey.modulus.modulus)
            else { throw KeyError("an RSA key whose primes do not make its modulus") }
            let pCount = pLimbs.count
            guard let dPLimbs = Self.below(dP, pLimbs, count: pCount), let dQLimbs = Self.below(dQ, qLimbs, count: pCount),
                let qInverseLimbs = Self.below(qInverse, pLimbs, count: pCount)
            else { throw KeyError("an RSA key whose CRT values are out of range") }
            self.p = Montgomery(modulus: pLimbs)
            self.q = Montgomery(modulus: qLimbs)
            self.dP = dPLimbs
            self.dQ = dQLimbs
            self.qInverse = qInverseLimbs
        }

        private static func below(_ bytes: [UInt8], _ bound: [UInt64], count: Int) -> [UInt64]? {
            let limbs = Limbs.from(bigEndian: bytes.drop { $0 == 0 }, count: count)
            return limbs.count == count && Limbs.less(limbs, bound) ? limbs : nil
        }

        /// The RS256 signature of `message` (deterministic: the same bytes as any other correct
        /// implementation). It is checked with the public key before it is returned, so a fault in the
        /// computation can never give out a value that reveals the key.
        public func signature(for message: some Sequence<UInt8>) throws(KeyError) -> [UInt8] {
            let size = publicKey.size
            guard let encoded = RSA.encoded(digest: SHA256.hash(message), size: size) else { throw KeyError("the key is too small for SHA-256") }
            let value = Limbs.from(bigEndian: encoded, count: publicKey.modulus.limbs)
            // Chinese remaindering (RFC 8017 §5.1.2): m1 = c^dP mod p, m2 = c^dQ mod q, h = qInv·(m1 − m2) mod p, s = m2 + q·h.
            let m1 = p.power(p.reduce(value), dP)
            let m2 = q.power(q.reduce(value), dQ)
            let (below, borrow) = Limbs.subtract(m1, p.reduce(m2))
            // Add p back where it went below zero (masked; the carry out of the top is the borrow's undoing).
            let mask = 0 &- borrow
            let difference = Limbs.add(below, p.modulus.map { $0 & mask })
            let h = p.multiply(p.multiply(difference, qInverse), p.rSquared)
            let signature = Limbs.bigEndian(Limbs.add(Limbs.multiply(h, q.modulus), m2), bytes: size)
            guard publicKey.isValidSignature(signature, for: message) else { throw KeyError("the signature did not verify") }
            return signature
        }
    }

    /// EMSA-PKCS1-v1_5 of a SHA-256 digest: 00 01 FF… 00, the DigestInfo's DER prefix, the digest.
    static func encoded(digest: [UInt8], size: Int) -> [UInt8]? {
        let digestInfo: [UInt8] = [0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20]
        let padding = size - 3 - digestInfo.count - digest.count
        guard padding >= 8 else { return nil }
        return [0x00, 0x01] + [UInt8](repeating: 0xFF, count: padding) + [0x00] + digestInfo + digest
    }
}
