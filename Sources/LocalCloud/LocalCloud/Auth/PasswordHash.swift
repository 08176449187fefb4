import Crypto
import CryptoExtras
import Foundation

/// Passwords as the local Auth keeps them: scrypt of the password with 16 random bytes of salt, never
/// the password itself (in the database, an export, a log or an answer). Compared in constant time.
enum PasswordHash {
    /// scrypt's cost: 2¹² rounds of 8 blocks, about 4 MiB and milliseconds each, for a tool on one
    /// machine (Firebase's own use more).
    static let rounds = 1 << 12
    static let blockSize = 8

    static func make(_ password: String) throws -> (hash: [UInt8], salt: [UInt8]) {
        var generator = SystemRandomNumberGenerator()
        let salt = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return (try derive(password, salt: salt), salt)
    }

    static func derive(_ password: String, salt: [UInt8]) throws -> [UInt8] {
        let key = try KDF.Scrypt.deriveKey(
            from: Array(password.utf8), salt: salt, outputByteCount: 32, rounds: rounds, blockSize: blockSize, parallelism: 1)
        return key.withUnsafeBytes { Array($0) }
    }

    static func matches(_ password: String, hash: [UInt8], salt: [UInt8]) -> Bool {
        guard let derived = try? derive(password, salt: salt), derived.count == hash.count else { return false }
        var difference: UInt8 = 0
        for (a, b) in zip(derived, hash) { difference |= a ^ b }
        return difference == 0
    }
}
