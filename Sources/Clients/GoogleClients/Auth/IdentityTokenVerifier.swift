import FirestoreModel
import HeraldHTTPClient
import NIOCore
import NIOHTTP1
import RSASignatures
import WireFormats

/// Checks the OIDC identity token a caller sends (`Authorization: Bearer …`), as Cloud Run does for
/// Eventarc and Cloud Scheduler: signed RS256 by a key in the issuer's JWKS, from an accepted issuer,
/// for this audience, not expired, and, with an allow-list, from one of the listed service accounts
/// (with a verified email): any service account of any project can mint a token for a URL it knows.
///
/// Keys are kept an hour, then fetched again with one fetch in flight however many callers wait; a
/// token naming a key the cache lacks (Google rotates its keys) fetches them again at most once a
/// minute. A failed fetch keeps the keys held (for up to a day), so a JWKS outage refuses no caller
/// whose key is known.
public actor IdentityTokenVerifier {
    public static let googleJWKS = "https://www.googleapis.com/oauth2/v3/certs"
    public static let googleIssuers: Set<String> = ["https://accounts.google.com", "accounts.google.com"]

    public struct Claims: Sendable, Equatable {
        public var iss: String
        /// One audience or several (a JWT's `aud` is either).
        public var aud: [String]
        public var exp: Timestamp
        /// When it was issued and from when it is valid, if it says (Google's say when issued).
        public var iat: Timestamp?
        public var nbf: Timestamp?
        public var email: String?
        public var emailVerified: Bool?

        init?(_ json: JSONValue) {
            // Clamped to what a timestamp holds: a hostile time is a time, however far.
            func time(_ name: String) -> Timestamp? {
                guard case .number(let text)? = json[name], let seconds = Double(text), seconds.isFinite else { return nil }
                return Timestamp(microsecondsSince1970: Int64(min(max(seconds, -6e10), 2.5e11) * 1e6))
            }
            guard let iss = json["iss"]?.stringValue, let exp = time("exp") else { return nil }
            let audience = json["aud"]?.stringValue.map { [$0] } ?? json["aud"]?.arrayValue?.compactMap(\.stringValue)
            guard let audience, !audience.isEmpty else { return nil }
            self.iss = iss
            self.aud = audience
            self.exp = exp
            iat = time("iat")
            nbf = time("nbf")
            email = json["email"]?.stringValue
            // Google writes a boolean; some issuers a string.
            emailVerified = json["email_verified"]?.boolValue ?? json["email_verified"]?.stringValue.map { $0 == "true" }
        }
    }

    /// RSA keys by key id, as the issuer's JWKS lists them.
    typealias KeySet = [String: RSA.PublicKey]

    public let audience: String
    public let issuers: Set<String>
    public let jwksURL: String
    /// Service-account emails allowed to call; nil: any caller with a valid token for the audience.
    public let allowedCallers: Set<String>?
    let httpClient: HTTPTransport
    let keyLifetime: Duration = .seconds(3600)
    let staleKeyLimit: Duration = .seconds(86_400)
    let refetchInterval: Duration = .seconds(60)
    var keys: KeySet?
    var fetchedAt = Timestamp.distantPast
    var lastAttempt = Timestamp.distantPast
    var refresh: Task<KeySet, any Error>?
    /// Tokens whose signature verified under the keys held, with their claims: a trigger sends the same
    /// token with every event for up to an hour, and an RSA verification is most of the CPU a small event
    /// costs. Only the signature is remembered; every other check runs on each request.
    var verifiedSignatures: [String: JSONValue] = [:]
    static let maximumVerifiedSignatures = 64
    static let clockSkewSeconds: Int64 = 300
    static let maximumLifetimeSeconds: Int64 = 86_400
    /// How many times the keys were fetched (for tests).
    public private(set) var fetches = 0

    public init(
        audience: String, jwksURL: String = googleJWKS, issuers: Set<String> = googleIssuers, allowedCallers: Set<String>? = nil,
        httpClient: HTTPTransport
    ) {
        self.audience = audience
        self.jwksURL = jwksURL
        self.issuers = issuers
        self.allowedCallers = allowedCallers
        self.httpClient = httpClient
    }

    /// The verified claims, or why the caller is refused. Never echoes the token.
    public func verify(authorization: String?, now: Timestamp = .now()) async throws(IdentityError) -> Claims {
        guard let header = authorization?.trimmingWhitespace, !header.isEmpty else {
            throw .refused("no Authorization header: an OIDC identity token is required")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { throw .refused("the Authorization header is not a Bearer token") }
        let token = parts[1].trimmingWhitespace
        // The keys first, whatever the cache holds: a token is accepted only while the keys that verified
        // it are current (a refresh empties the cache).
        let keys = try await currentKeys(now: now)
        var verified = verifiedSignatures[token]
        if verified == nil { verified = JSONWebToken.verifiedClaims(Substring(token), keys: keys) }
        if verified == nil {
            // An unknown key may be a rotated one: fetch the keys again (rate-limited) and try once more.
            guard now.duration(since: lastAttempt) > refetchInterval else { throw .refused("the identity token's signature does not verify") }
            verified = JSONWebToken.verifiedClaims(Substring(token), keys: try await refreshedKeys(now: now))
        }
        guard let verified else { throw .refused("the identity token's signature does not verify") }
        if verifiedSignatures[token] == nil {
            if verifiedSignatures.count >= Self.maximumVerifiedSignatures { verifiedSignatures.removeAll(keepingCapacity: true) }
            verifiedSignatures[token] = verified
        }
        guard let claims = Claims(verified) else { throw .refused("the identity token lacks iss, aud or exp") }
        guard issuers.contains(claims.iss) else { throw .refused("the identity token's issuer \(claims.iss) is not accepted") }
        // `https://service.run.app` and `https://service.run.app/` name the same service.
        func trimmed(_ text: String) -> String { text.hasSuffix("/") ? String(text.dropLast()) : text }
        guard claims.aud.contains(where: { trimmed($0) == trimmed(audience) }) else {
            throw .refused("the identity token is for audience \(claims.aud.joined(separator: ", ")), not \(audience)")
        }
        // Google allows a few minutes of clock skew; five is what its own libraries accept, both ways.
        guard claims.exp.adding(.seconds(Self.clockSkewSeconds)) > now else { throw .refused("the identity token expired at \(claims.exp)") }
        if let iat = claims.iat, iat > now.adding(.seconds(Self.clockSkewSeconds)) {
            throw .refused("the identity token was issued in the future (iat \(iat))")
        }
        if let nbf = claims.nbf, nbf > now.adding(.seconds(Self.clockSkewSeconds)) { throw .refused("the identity token is not valid before \(nbf)") }
        // Google's identity tokens last an hour: one valid for longer than a day was not made by Google's token services.
        let lifetime = claims.exp.duration(since: claims.iat ?? now)
        guard lifetime <= .seconds(Self.maximumLifetimeSeconds) else {
            throw .refused(
                "the identity token is valid for \(lifetime.components.seconds / 3600) hours; at most \(Self.maximumLifetimeSeconds / 3600) are accepted")
        }
        if let allowedCallers {
            guard let email = claims.email, allowedCallers.contains(email.lowercased()) else {
                throw .refused("the caller \(claims.email ?? "(no email)") is not one of HERALD_ALLOWED_CALLERS")
            }
            guard claims.emailVerified == true else { throw .refused("the caller's email \(email) is not verified") }
        }
        return claims
    }

    /// The keys held, fetched again when older than an hour; stale keys serve while a fetch fails.
    func currentKeys(now: Timestamp) async throws(IdentityError) -> KeySet {
        if let keys, now.duration(since: fetchedAt) < keyLifetime { return keys }
        do { return try await refreshedKeys(now: now) } catch {
            if let keys, now.duration(since: fetchedAt) < staleKeyLimit { return keys }
            throw error
        }
    }

    /// Fetches the keys, joining a fetch already in flight.
    func refreshedKeys(now: Timestamp) async throws(IdentityError) -> KeySet {
        let task: Task<KeySet, any Error>
        if let refresh {
            task = refresh
        } else {
            lastAttempt = now
            fetches += 1
            let (url, httpClient) = (jwksURL, self.httpClient)
            task = Task { try await Self.fetch(url, httpClient: httpClient) }
            refresh = task
        }
        do {
            let fresh = try await task.value
            if refresh == task {
                refresh = nil
                keys = fresh
                fetchedAt = now
                verifiedSignatures.removeAll()
            }
            return fresh
        } catch {
            if refresh == task { refresh = nil }
            throw (error as? IdentityError) ?? .unavailable("cannot fetch the JWKS at \(jwksURL): \(error)")
        }
    }

    static func fetch(_ url: String, httpClient: HTTPTransport) async throws -> KeySet {
        let fresh: KeySet
        do {
            let response = try await httpClient.execute(HTTPRequest(url: url), timeout: .seconds(5), maximumBodySize: 1 << 20)
            let body = response.body
            guard response.status == .ok else { throw IdentityError.unavailable("the JWKS at \(url) answered \(response.status.code)") }
            fresh = JSONWebToken.keys(jwks: try JSONValue(parsing: Array(buffer: body)))
        } catch let error as IdentityError {
            throw error
        } catch {
            throw IdentityError.unavailable("cannot fetch the JWKS at \(url): \(error)")
        }
        guard !fresh.isEmpty else { throw IdentityError.unavailable("the JWKS at \(url) holds no RSA signing key") }
        return fresh
    }
}

public enum IdentityError: Error, Sendable, CustomStringConvertible, Equatable {
    /// The caller is not who it must be: answer 401.
    case refused(String)
    /// The keys could not be fetched: answer 503 so the caller retries.
    case unavailable(String)

    public var description: String {
        switch self {
        case .refused(let reason), .unavailable(let reason): reason
        }
    }
}
