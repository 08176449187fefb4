import EmbeddedFirestore
import FirestoreModel
import Foundation
import WireFormats

/// One user of the local Firebase Auth, as Google's Auth emulator keeps one: an email-and-password user,
/// an anonymous one (no email, no password) or one made from a custom token.
public struct AuthAccount: Sendable, Hashable {
    public var uid: String
    public var email: String?
    public var emailVerified = false
    /// scrypt of the password with its salt (`PasswordHash`); nil without a password.
    public var passwordHash: [UInt8]?
    public var salt: [UInt8]?
    public var displayName: String?
    public var photoURL: String?
    public var disabled = false
    /// Milliseconds since 1970.
    public var createdAt: Int64
    public var lastLoginAt: Int64?
    public var passwordUpdatedAt: Int64?
    /// Seconds since 1970: ID tokens issued before it are refused (a password change, a revocation).
    public var validSince: Int64
    /// The custom claims an Admin SDK set, as a JSON object.
    public var customClaims: [String: JSONValue] = [:]
    /// How the user signed in first: `password`, `anonymous` or `custom`.
    public var provider: String

    public var isAnonymous: Bool { provider == "anonymous" && email == nil && passwordHash == nil }

    /// The sign-in method an ID token names (`firebase.sign_in_provider`).
    var signInProvider: String { passwordHash != nil ? "password" : provider }

    /// `accounts:lookup`'s user, as the SDKs read it: an email user carries `passwordHash` (redacted, as
    /// Google's emulator answers) and a `password` provider; an anonymous user neither.
    var userInfo: JSONValue {
        var info: [String: JSONValue] = [
            "localId": .string(uid), "emailVerified": .bool(emailVerified), "disabled": .bool(disabled),
            "createdAt": .string(String(createdAt)), "validSince": .string(String(validSince)),
        ]
        if let email { info["email"] = .string(email) }
        if let displayName { info["displayName"] = .string(displayName) }
        if let photoURL { info["photoUrl"] = .string(photoURL) }
        if let lastLoginAt {
            info["lastLoginAt"] = .string(String(lastLoginAt))
            info["lastRefreshAt"] = .string(Self.iso(lastLoginAt))
        }
        if passwordHash != nil {
            info["passwordHash"] = "UkVEQUNURUQ="  // "REDACTED", as Google's emulator answers it
            if let passwordUpdatedAt { info["passwordUpdatedAt"] = .integer(passwordUpdatedAt) }
        }
        if !customClaims.isEmpty { info["customAttributes"] = .string(JSONValue.object(customClaims).serialized()) }
        var providers: [JSONValue] = []
        if let email, passwordHash != nil {
            var provider: [String: JSONValue] = [
                "providerId": "password", "email": .string(email), "federatedId": .string(email), "rawId": .string(email),
            ]
            if let displayName { provider["displayName"] = .string(displayName) }
            if let photoURL { provider["photoUrl"] = .string(photoURL) }
            providers.append(.object(provider))
        }
        info["providerUserInfo"] = .array(providers)
        return .object(info)
    }

    static func iso(_ milliseconds: Int64) -> String {
        Timestamp(seconds: milliseconds / 1000, nanos: Int32(milliseconds % 1000) * 1_000_000).rfc3339
    }

    /// The console's view of the user.
    var consoleJSON: JSONValue {
        var members: [String: JSONValue] = [
            "uid": .string(uid), "method": .string(signInProvider), "disabled": .bool(disabled), "emailVerified": .bool(emailVerified),
            "createdAt": .integer(createdAt),
        ]
        if let email { members["email"] = .string(email) }
        if let displayName { members["displayName"] = .string(displayName) }
        if let lastLoginAt { members["lastLoginAt"] = .integer(lastLoginAt) }
        return .object(members)
    }
}
