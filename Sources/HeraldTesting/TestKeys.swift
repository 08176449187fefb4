import CryptoExtras

/// RSA keys for tests, each made once per run and off the cooperative pool: a 2048-bit key takes
/// seconds in a debug build, and dozens of tests making their own at once starved every other test.
public enum TestKeys {
    private static let keys = (0..<2).map { _ in
        Task { try await offThePool { try _RSA.Signing.PrivateKey(keySize: .bits2048).pemRepresentation } }
    }

    /// Key `index` (0 or 1; tests that need a second, different key ask for 1) as PEM.
    public static func rsaPEM(_ index: Int = 0) async throws -> String { try await keys[index].value }

    public static func rsa(_ index: Int = 0) async throws -> _RSA.Signing.PrivateKey {
        try _RSA.Signing.PrivateKey(pemRepresentation: try await rsaPEM(index))
    }
}
