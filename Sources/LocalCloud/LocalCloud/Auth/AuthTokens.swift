import Foundation
import WireFormats

/// ID tokens as Google's Auth emulator issues them: unsigned JWTs (`{"alg":"none","typ":"JWT"}`, an
/// empty signature) with Firebase's claims, valid for an hour. The SDKs and the Admin SDKs take them
/// in emulator mode.
enum AuthTokens {
    static let lifetime: Int64 = 3600

    static func idToken(for account: AuthAccount, project: String, authTime: Int64? = nil, now: Int64 = Int64(Date().timeIntervalSince1970)) -> String {
        var identities: [String: JSONValue] = [:]
        if let email = account.email, account.passwordHash != nil { identities["email"] = [.string(email)] }
        var claims: [String: JSONValue] = account.customClaims
        claims.merge([
            "iss": .string("https://securetoken.google.com/\(project)"), "aud": .string(project), "sub": .string(account.uid),
            "user_id": .string(account.uid), "auth_time": .integer(authTime ?? (account.lastLoginAt.map { $0 / 1000 } ?? now)), "iat": .integer(now),
            "exp": .integer(now + lifetime), "email_verified": .bool(account.emailVerified),
            "firebase": ["identities": .object(identities), "sign_in_provider": .string(account.signInProvider)],
        ]) { _, new in new }
        if let email = account.email { claims["email"] = .string(email) }
        if let name = account.displayName { claims["name"] = .string(name) }
        if let picture = account.photoURL { claims["picture"] = .string(picture) }
        if account.isAnonymous { claims["provider_id"] = "anonymous" }
        let header: JSONValue = ["alg": "none", "typ": "JWT"]
        return Base64.encode(Array(header.serialized().utf8), urlSafe: true) + "."
            + Base64.encode(Array(JSONValue.object(claims).serialized().utf8), urlSafe: true)
            + "."
    }

    /// The claims of a JWT (any algorithm; emulator tokens are not signed), if it is one: three parts,
    /// the first two base64url JSON objects, at most 16 KiB.
    static func claims(of token: String) -> (header: JSONValue, claims: JSONValue)? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, token.utf8.count <= 16 * 1024, let header = Base64.decode(parts[0]).flatMap({ try? JSONValue(parsing: $0) }),
            header.objectValue != nil, let claims = Base64.decode(parts[1]).flatMap({ try? JSONValue(parsing: $0) }), claims.objectValue != nil
        else { return nil }
        return (header, claims)
    }

    /// Why an ID token is not one of `project`'s live ones (Identity Toolkit's error), or its user id.
    static func subject(of token: String, project: String, now: Int64 = Int64(Date().timeIntervalSince1970)) -> Result<
        (uid: String, issuedAt: Int64), AuthError
    > {
        guard let (_, claims) = claims(of: token), let uid = claims["user_id"]?.stringValue ?? claims["sub"]?.stringValue, !uid.isEmpty else {
            return .failure(.init("INVALID_ID_TOKEN"))
        }
        guard claims["aud"]?.stringValue == project, claims["iss"]?.stringValue == "https://securetoken.google.com/\(project)" else {
            return .failure(.init("INVALID_ID_TOKEN : the token is another project's"))
        }
        guard let expires = claims["exp"]?.int64Value, expires > now else { return .failure(.init("TOKEN_EXPIRED")) }
        return .success((uid, claims["iat"]?.int64Value ?? 0))
    }
}

/// An Identity Toolkit error: its message (Google's code, then optionally ` : ` and a reason), HTTP 400
/// unless said otherwise. The SDKs map the code before ` : ` to their `auth/…` errors.
struct AuthError: Error, Sendable {
    var message: String
    var status: Int
    init(_ message: String, status: Int = 400) {
        self.message = message
        self.status = status
    }
}
