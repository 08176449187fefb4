import Crypto
import CryptoExtras
import EmbeddedFirestore
import FirestoreModel
import Foundation
import JWTKit
import Synchronization
import WireFormats

/// Google's identity side, locally: a service account whose key file `herald dev` writes for the
/// functions, an OAuth token endpoint that verifies their JWT-bearer assertions, the metadata
/// server's token and identity endpoints, and OIDC identity tokens with a published JWKS.
public final class LocalIdentity: Sendable {
    public let project: String
    public let clientEmail: String
    public let keyID: String
    let privateKeyPEM: String
    let keys: JWTKeyCollection
    let publicKey: JWTKit.Insecure.RSA.PublicKey
    let issued = Mutex<[String: (expires: Date, email: String, scope: String)]>([:])
    /// The identity token each audience's pushes carry, and when it expires.
    let pushTokens = Mutex<[String: (token: String, expires: Date)]>([:])
    let accessTokenLifetime: TimeInterval
    public static let issuer = "https://accounts.google.com"
    static let jwtBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"

    /// Loads the key kept in `directory/local-key.pem`, or keeps `newKeyPEM` (or a key it makes) there.
    public init(project: String, directory: String, accessTokenLifetime: TimeInterval = 3600, newKeyPEM: String? = nil) async throws {
        let keyPath = (directory as NSString).appendingPathComponent("local-key.pem")
        let pem: String
        if let existing = try? String(contentsOfFile: keyPath, encoding: .utf8) {
            pem = existing
        } else {
            pem = try newKeyPEM ?? _RSA.Signing.PrivateKey(keySize: .bits2048).pemRepresentation
            try PrivateFiles.write(pem, to: keyPath)
        }
        let privateKey = try JWTKit.Insecure.RSA.PrivateKey(pem: pem)
        self.project = project
        self.accessTokenLifetime = accessTokenLifetime
        self.clientEmail = "herald-functions@\(project).iam.gserviceaccount.com"
        self.privateKeyPEM = pem
        self.publicKey = privateKey.publicKey
        self.keyID = String(SHA256.hash(data: Data(privateKey.publicKey.pemRepresentation.utf8)).map { String(format: "%02x", $0) }.joined().prefix(40))
        self.keys = JWTKeyCollection()
        await keys.add(rsa: privateKey, digestAlgorithm: .sha256, kid: JWKIdentifier(string: keyID))
    }

    /// A Google service-account key file for this account, with `token_uri` at the local cloud.
    public func keyFile(tokenURI: String) -> JSONValue {
        [
            "type": "service_account", "project_id": .string(project), "private_key_id": .string(keyID),
            "private_key": .string(privateKeyPEM), "client_email": .string(clientEmail), "client_id": "100000000000000000001",
            "token_uri": .string(tokenURI),
        ]
    }

    // MARK: OAuth token endpoint

    /// Answers `POST /token` with a form body; errors as Google's OAuth endpoint gives them.
    public func exchange(formBody: String, tokenURI: String) async -> (status: Int, body: JSONValue) {
        let form = Self.parseForm(formBody)
        guard form["grant_type"] == Self.jwtBearer else {
            return (400, ["error": "unsupported_grant_type", "error_description": .string("Invalid grant_type: only \(Self.jwtBearer) is supported")])
        }
        guard let assertion = form["assertion"] else {
            return (400, ["error": "invalid_request", "error_description": "Missing required parameter: assertion"])
        }
        let claims: AssertionClaims
        do { claims = try await keys.verify(assertion, as: AssertionClaims.self) } catch {
            return (400, ["error": "invalid_grant", "error_description": .string("Invalid JWT Signature. \(error)")])
        }
        guard claims.iss == clientEmail else { return (400, ["error": "invalid_grant", "error_description": "Invalid issuer: unknown service account"]) }
        guard claims.aud == tokenURI || claims.aud == "https://oauth2.googleapis.com/token" else {
            return (
                400,
                [
                    "error": "invalid_grant",
                    "error_description": .string("Invalid JWT: the audience must be this token endpoint (\(tokenURI)), not \(claims.aud)"),
                ]
            )
        }
        let now = Date().timeIntervalSince1970
        guard claims.exp > now, claims.iat <= now + 300, claims.exp - claims.iat <= 3600 else {
            return (
                400,
                [
                    "error": "invalid_grant",
                    "error_description":
                        "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values",
                ]
            )
        }
        return (200, issueAccessToken(email: claims.iss, scope: claims.scope ?? ""))
    }

    public func issueAccessToken(email: String, scope: String) -> JSONValue {
        let token = "ya29.local-" + Self.randomText()
        let now = Date()
        issued.withLock { issued in
            issued = issued.filter { $0.value.expires > now }
            issued[token] = (now.addingTimeInterval(accessTokenLifetime), email, scope)
        }
        return ["access_token": .string(token), "expires_in": .integer(Int(accessTokenLifetime) - 1), "token_type": "Bearer"]
    }

    /// Whether a request's `Authorization` header may call the local APIs. Like Google's emulators,
    /// no header, `Bearer owner` and the Firebase SDKs' mock user tokens (unsigned JWTs, `alg: none`,
    /// which an app sends to stand for a signed-in user) are let in; any other bearer token must be one
    /// this cloud issued and not expired. A mock token grants nothing that no header does not: there
    /// are no security rules here.
    public func authorize(_ header: String?) throws(LocalAPIError) {
        guard let header, !header.isEmpty else { return }
        guard header.lowercased().hasPrefix("bearer ") else {
            throw .unauthenticated("Request had invalid authentication credentials: expected a Bearer token.")
        }
        let token = String(header.dropFirst(7))
        if token == "owner" || Self.isMockUserToken(token) { return }
        let grant = issued.withLock { $0[token] }
        guard let grant, grant.expires > Date() else {
            throw .unauthenticated(
                "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.")
        }
    }

    /// Whether `header` is an administrator's: `Bearer owner` (what Google's emulators take from
    /// firebase-tools and the Admin SDKs) or one of this cloud's unexpired access tokens.
    public func isAdministrator(_ header: String?) -> Bool {
        guard let header, header.lowercased().hasPrefix("bearer ") else { return false }
        let token = String(header.dropFirst(7))
        if token == "owner" { return true }
        return issued.withLock { $0[token].map { $0.expires > Date() } ?? false }
    }

    /// The signed-in user a request's ID token names (an emulator token, or a mock user token):
    /// `ann@example.com (uid …)`, or `uid …`; nil for an administrator, a service account or no token.
    public func caller(_ header: String?) -> String? {
        guard let header, header.lowercased().hasPrefix("bearer ") else { return nil }
        let token = String(header.dropFirst(7))
        guard Self.isMockUserToken(token), let claims = Base64.decode(token.split(separator: ".")[1]).flatMap({ try? JSONValue(parsing: $0) }),
            let uid = (claims["user_id"] ?? claims["sub"] ?? claims["uid"])?.stringValue, !uid.isEmpty
        else { return nil }
        let shown = String(uid.prefix(128))
        return claims["email"]?.stringValue.map { "\($0.prefix(254)) (uid \(shown))" } ?? "uid \(shown)"
    }

    /// `{"alg":"none",…}.{claims}.` as `connectFirestoreEmulator(…, {mockUserToken})` and the other SDKs' emulator
    /// settings write it: two base64url JSON objects and an empty signature.
    static func isMockUserToken(_ token: String) -> Bool {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[2].isEmpty, token.utf8.count <= 16 * 1024,
            let header = Base64.decode(parts[0]).flatMap({ try? JSONValue(parsing: $0) }), header["alg"]?.stringValue == "none",
            let claims = Base64.decode(parts[1]).flatMap({ try? JSONValue(parsing: $0) }), claims.objectValue != nil
        else { return false }
        return true
    }

    /// Forgets every issued token, as if they expired: the next call with one gets 401.
    public func revokeAll() { issued.withLock { $0.removeAll() } }

    // MARK: OIDC

    /// A Google-style identity token for `audience`, as the metadata server and Cloud Scheduler mint them.
    /// - issuedIn, notBefore: seconds from now to the token's `iat` (0 unless a test says otherwise) and
    ///   `nbf` (none unless given); it expires `lifetime` seconds after it was issued.
    public func identityToken(
        audience: String, email: String? = nil, lifetime: TimeInterval = 3600, issuedIn: TimeInterval = 0, notBefore: TimeInterval? = nil
    ) async throws -> String {
        let issued = Int(Date().timeIntervalSince1970 + issuedIn)
        let claims = IdentityClaims(
            iss: Self.issuer, aud: audience, sub: "100000000000000000001", email: email ?? clientEmail,
            email_verified: true, iat: issued, exp: issued + Int(lifetime), nbf: notBefore.map { Int(Date().timeIntervalSince1970 + $0) })
        return try await keys.sign(claims, kid: JWKIdentifier(string: keyID))
    }

    /// The identity token a push to `audience` carries (a trigger's delivery, a scheduled job): minted once
    /// and reused until ten minutes before it expires, as Pub/Sub and Cloud Scheduler do, so a function
    /// verifies one signature per hour, not one per event.
    public func pushToken(audience: String) async throws -> String {
        if let held = pushTokens.withLock({ $0[audience] }), held.expires.timeIntervalSinceNow > 600 { return held.token }
        let lifetime: TimeInterval = 3600
        let token = try await identityToken(audience: audience, lifetime: lifetime)
        pushTokens.withLock { $0[audience] = (token, Date().addingTimeInterval(lifetime)) }
        return token
    }

    /// The JWKS document that verifies this cloud's identity tokens.
    public func jwks() throws -> JSONValue {
        let (modulus, exponent) = try publicKey.getKeyPrimitives()
        return [
            "keys": [
                [
                    "kty": "RSA", "alg": "RS256", "use": "sig", "kid": .string(keyID),
                    "n": .string(Self.base64URL(modulus)), "e": .string(Self.base64URL(exponent)),
                ]
            ]
        ]
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// 32 random bytes as hex: unguessable, and safe in a URL (tokens, codes, ids).
    static func randomText() -> String {
        (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    static func parseForm(_ body: String) -> [String: String] {
        var result: [String: String] = [:]
        for pair in body.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0)
            }
            if parts.count == 2 { result[parts[0]] = parts[1] }
        }
        return result
    }
}

struct AssertionClaims: JWTPayload {
    var iss: String
    var aud: String
    var scope: String?
    var iat: Double
    var exp: Double

    func verify(using algorithm: some JWTAlgorithm) throws {}
}

struct IdentityClaims: JWTPayload {
    var iss: String
    var aud: String
    var sub: String
    var email: String
    // swift-format-ignore: AlwaysUseLowerCamelCase
    var email_verified: Bool  // the claim's name, as Google spells it
    var iat: Int
    var exp: Int
    var nbf: Int?

    func verify(using algorithm: some JWTAlgorithm) throws {}
}
