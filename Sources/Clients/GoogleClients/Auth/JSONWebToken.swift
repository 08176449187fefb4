import FirestoreModel
import RSASignatures
import WireFormats

/// RS256 JSON Web Tokens (RFC 7519): what Google's auth needs, signing a service account's assertion
/// and verifying identity tokens against a JWKS, without a JWT library (and the X.509 and ASN.1 code it
/// brings into every function).
enum JSONWebToken {
    /// `header.claims.signature`, RS256 with the key `keyID` names.
    static func sign(_ claims: JSONValue, keyID: String, with key: RSA.PrivateKey) throws -> String {
        let header: JSONValue = ["alg": "RS256", "typ": "JWT", "kid": .string(keyID)]
        let signingInput = base64URL(Array(header.serialized().utf8)) + "." + base64URL(Array(claims.serialized().utf8))
        return signingInput + "." + base64URL(try key.signature(for: signingInput.utf8))
    }

    /// The claims of `token` if it is an RS256 JWT signed by one of `keys` (by its `kid`, or any key when
    /// it names none); nil when it is not well formed or no key verifies it.
    static func verifiedClaims(_ token: Substring, keys: [String: RSA.PublicKey]) -> JSONValue? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, token.utf8.count <= 16 * 1024,
            let headerBytes = base64URLDecoded(parts[0]), let header = try? JSONValue(parsing: headerBytes),
            header["alg"]?.stringValue == "RS256",
            let claimsBytes = base64URLDecoded(parts[1]), let claims = try? JSONValue(parsing: claimsBytes), claims.objectValue != nil,
            let signatureBytes = base64URLDecoded(parts[2])
        else { return nil }
        let signingInput = Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        let candidates = header["kid"]?.stringValue.map { keys[$0].map { [$0] } ?? [] } ?? Array(keys.values)
        guard candidates.contains(where: { $0.isValidSignature(signatureBytes, for: signingInput) }) else { return nil }
        return claims
    }

    /// The RSA signing keys of a JWKS document (`{"keys": [{"kty": "RSA", "kid", "n", "e"}, …]}`), by key id;
    /// keys of other types or uses are left out.
    static func keys(jwks: JSONValue) -> [String: RSA.PublicKey] {
        var keys: [String: RSA.PublicKey] = [:]
        for key in jwks["keys"]?.arrayValue ?? [] {
            guard key["kty"]?.stringValue == "RSA", key["use"]?.stringValue.map({ $0 == "sig" }) ?? true,
                key["alg"]?.stringValue.map({ $0 == "RS256" }) ?? true,
                let id = key["kid"]?.stringValue, let n = key["n"]?.stringValue.flatMap({ base64URLDecoded(Substring($0)) }),
                let e = key["e"]?.stringValue.flatMap({ base64URLDecoded(Substring($0)) }),
                let publicKey = try? RSA.PublicKey(modulus: n, exponent: e)
            else { continue }
            keys[id] = publicKey
        }
        return keys
    }

    static func base64URL(_ bytes: [UInt8]) -> String { Base64.encode(bytes, urlSafe: true) }

    /// base64url without padding, as JWTs carry it (padding or the standard alphabet are refused).
    static func base64URLDecoded(_ text: Substring) -> [UInt8]? {
        guard !text.utf8.contains(where: { $0 == UInt8(ascii: "=") || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "/") }) else { return nil }
        return Base64.decode(text)
    }
}
