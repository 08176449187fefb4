import CryptoExtras
import FirestoreModel
import WireFormats

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

    /// A service-account key file's JSON around key 0, its token endpoint at `tokenURI`.
    public static func serviceAccountKeyJSON(tokenURI: String, clientEmail: String = "herald@p.iam.gserviceaccount.com") async throws -> String {
        let pem = try await rsaPEM()
        let key: JSONValue = [
            "type": "service_account", "project_id": "p", "private_key_id": "k1", "private_key": .string(pem),
            "client_email": .string(clientEmail), "token_uri": .string(tokenURI),
        ]
        return key.serialized()
    }
}
