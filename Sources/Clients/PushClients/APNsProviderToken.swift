import P256Signatures
import Synchronization
import WireFormats

/// The provider token APNs takes instead of a certificate: an ES256 JWT (`{alg: ES256, kid}`,
/// `{iss: team, iat}`) signed with the team's `.p8` key. Apple takes one for an hour at most and
/// refuses a new one more often than every 20 minutes (`TooManyProviderTokenUpdates`), so one token is
/// kept and made again once it is `renewAfter` old (50 minutes), or when APNs says it expired and it
/// is at least 20 minutes old. Times are Unix seconds from `now`, injected for tests.
public final class APNsProviderToken: Sendable {
    public static let renewAfter: Int64 = 50 * 60
    public static let shortestLife: Int64 = 20 * 60

    let key: P256.PrivateKey
    public let keyID: String
    public let teamID: String
    let now: @Sendable () -> Int64
    let current = Mutex<(token: String, issuedAt: Int64)?>(nil)

    public init(key: P256.PrivateKey, keyID: String, teamID: String, now: @escaping @Sendable () -> Int64) {
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
        self.now = now
    }

    /// The token to send now.
    public func token() throws(P256.KeyError) -> String {
        let time = now()
        if let kept = current.withLock({ $0 }), time - kept.issuedAt < Self.renewAfter, time >= kept.issuedAt { return kept.token }
        return try make(at: time)
    }

    /// APNs refused `token` as expired or invalid: a new one, if the refused one is old enough to be
    /// replaced; nil when it is not (the key, key id or team id is wrong, or the clock is: a new token
    /// would be refused as too many updates).
    public func renew(after refused: String) throws(P256.KeyError) -> String? {
        let time = now()
        guard let kept = current.withLock({ $0 }) else { return try make(at: time) }
        guard kept.token == refused else { return kept.token }  // another request renewed it already
        guard time - kept.issuedAt >= Self.shortestLife else { return nil }
        return try make(at: time)
    }

    /// When the kept token was made, if one is.
    public var issuedAt: Int64? { current.withLock { $0?.issuedAt } }

    func make(at time: Int64) throws(P256.KeyError) -> String {
        let header: JSONValue = ["alg": "ES256", "kid": .string(keyID)]
        let claims: JSONValue = ["iss": .string(teamID), "iat": .integer(time)]
        let input = Base64.encode(Array(header.serialized().utf8), urlSafe: true) + "." + Base64.encode(Array(claims.serialized().utf8), urlSafe: true)
        let token = input + "." + Base64.encode(try key.signature(for: input.utf8), urlSafe: true)
        current.withLock { $0 = (token, time) }
        return token
    }
}
