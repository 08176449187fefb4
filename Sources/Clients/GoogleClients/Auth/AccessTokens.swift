import FirestoreModel
import HeraldHTTPClient
import NIOCore
import NIOHTTP1
import RSASignatures
import WireFormats

/// An OAuth access token and when it stops working.
public struct AccessToken: Sendable, Equatable {
    public var value: String
    public var expiresAt: Timestamp
    public init(value: String, expiresAt: Timestamp) {
        self.value = value
        self.expiresAt = expiresAt
    }
}

/// Where a client gets the bearer token for its requests.
public protocol AccessTokenProvider: Sendable {
    /// A token valid for at least a few more minutes (cached; refreshed early).
    func token() async throws -> String
    /// Forget `token` after an API answered 401 with it, so the next call fetches a new one.
    func invalidate(_ token: String) async
}

/// The Firestore emulator's convention: every request as `Bearer owner`.
public struct EmulatorCredentials: AccessTokenProvider {
    public init() {}
    public func token() async throws -> String { "owner" }
    public func invalidate(_ token: String) async {}
}

/// Caches one token and refreshes it at least `refreshMargin` before it expires, with a single
/// refresh in flight however many callers wait for it.
public actor TokenCache {
    public typealias Fetch = @Sendable () async throws -> AccessToken
    let fetch: Fetch
    let refreshMargin: Duration
    let now: @Sendable () -> Timestamp
    var current: AccessToken?
    var inFlight: Task<AccessToken, any Error>?
    /// How many times the token was fetched (for tests and metrics).
    public private(set) var fetches = 0

    public init(refreshMargin: Duration = .seconds(300), now: @escaping @Sendable () -> Timestamp = Timestamp.now, fetch: @escaping Fetch) {
        self.fetch = fetch
        self.refreshMargin = refreshMargin
        self.now = now
    }

    public func token() async throws -> String {
        if let current, current.expiresAt.duration(since: now()) > refreshMargin { return current.value }
        if let inFlight { return try await inFlight.value.value }
        fetches += 1
        let task = Task { try await fetch() }
        inFlight = task
        defer { inFlight = nil }
        let token = try await task.value
        current = token
        return token.value
    }

    public func invalidate(_ token: String) {
        if current?.value == token { current = nil }
    }
}

/// A service account's own credentials: an RS256 JWT signed with its key, exchanged at `token_uri`
/// (`urn:ietf:params:oauth:grant-type:jwt-bearer`), or used directly as Google's self-signed JWT.
public struct ServiceAccountCredentials: AccessTokenProvider {
    public enum Mode: Sendable {
        case tokenExchange(scopes: [String])
        /// No exchange: the JWT itself is the bearer token, with `aud` = the API's base URL.
        case selfSignedJWT(audience: String)
    }

    public static let cloudPlatformScope = "https://www.googleapis.com/auth/cloud-platform"
    public static let messagingScope = "https://www.googleapis.com/auth/firebase.messaging"

    let key: ServiceAccountKey
    let cache: TokenCache

    public init(key: ServiceAccountKey, mode: Mode, httpClient: HTTPTransport, lifetime: Duration = .seconds(3600)) throws(AuthError) {
        let signingKey = try key.signingKey()
        let lifetime = min(lifetime, .seconds(3600))
        self.key = key
        self.cache = TokenCache { [key] in
            let issued = Timestamp(seconds: Timestamp.now().seconds)
            let expires = issued.adding(lifetime)
            switch mode {
            case .tokenExchange(let scopes):
                let claims = AssertionClaims(iss: key.clientEmail, sub: nil, scope: scopes.joined(separator: " "), aud: key.tokenURI, iat: issued, exp: expires)
                let assertion = try JSONWebToken.sign(claims.json, keyID: key.privateKeyID, with: signingKey)
                return try await Self.exchange(assertion: assertion, tokenURI: key.tokenURI, httpClient: httpClient)
            case .selfSignedJWT(let audience):
                let claims = AssertionClaims(iss: key.clientEmail, sub: key.clientEmail, scope: nil, aud: audience, iat: issued, exp: expires)
                return AccessToken(value: try JSONWebToken.sign(claims.json, keyID: key.privateKeyID, with: signingKey), expiresAt: expires)
            }
        }
    }

    public func token() async throws -> String { try await cache.token() }
    public func invalidate(_ token: String) async { await cache.invalidate(token) }

    static func exchange(assertion: String, tokenURI: String, httpClient: HTTPTransport) async throws -> AccessToken {
        var request = HTTPRequest(url: tokenURI)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        request.body = (ByteBuffer(string: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"))
        return try await TokenResponse.fetch(request, from: "token endpoint \(tokenURI)", httpClient: httpClient)
    }
}

/// The JWT claims Google's token endpoint and APIs expect.
struct AssertionClaims {
    var iss: String
    var sub: String?
    var scope: String?
    var aud: String
    var iat: Int
    var exp: Int

    init(iss: String, sub: String?, scope: String?, aud: String, iat: Timestamp, exp: Timestamp) {
        self.iss = iss
        self.sub = sub
        self.scope = scope
        self.aud = aud
        self.iat = Int(iat.seconds)
        self.exp = Int(exp.seconds)
    }

    var json: JSONValue {
        var members: [String: JSONValue] = ["iss": .string(iss), "aud": .string(aud), "iat": .integer(Int64(iat)), "exp": .integer(Int64(exp))]
        if let sub { members["sub"] = .string(sub) }
        if let scope { members["scope"] = .string(scope) }
        return .object(members)
    }
}

/// The metadata server's token, which is what Cloud Run gives a function.
public struct MetadataServerCredentials: AccessTokenProvider {
    public static let defaultHost = ApplicationDefaultCredentials.googleMetadataHost
    let host: String
    let cache: TokenCache
    let httpClient: HTTPTransport

    public init(host: String = defaultHost, httpClient: HTTPTransport) {
        self.host = host
        self.httpClient = httpClient
        self.cache = TokenCache {
            var request = HTTPRequest(url: "http://\(host)/computeMetadata/v1/instance/service-accounts/default/token")
            request.headers.add(name: "Metadata-Flavor", value: "Google")
            return try await TokenResponse.fetch(request, from: "metadata server \(host)", httpClient: httpClient)
        }
    }

    public func token() async throws -> String { try await cache.token() }
    public func invalidate(_ token: String) async { await cache.invalidate(token) }

    /// Whether a metadata server answers here (`Metadata-Flavor: Google` on its root) within `timeout`.
    public func isReachable(within timeout: Duration) async -> Bool {
        var request = HTTPRequest(url: "http://\(host)/")
        request.headers.add(name: "Metadata-Flavor", value: "Google")
        guard let response = try? await httpClient.execute(request, timeout: timeout, maximumBodySize: 1 << 16) else { return false }
        return response.headers.first(name: "metadata-flavor") == "Google"
    }

    /// The project this instance runs in.
    public func projectID() async throws -> String {
        var request = HTTPRequest(url: "http://\(host)/computeMetadata/v1/project/project-id")
        request.headers.add(name: "Metadata-Flavor", value: "Google")
        let response: HTTPResponse
        let body: ByteBuffer
        do {
            response = try await httpClient.execute(request, timeout: .seconds(5), maximumBodySize: 4096)
            body = response.body
        } catch {
            throw AuthError.unavailable("metadata server \(host): \(error)")
        }
        guard response.status == .ok else { throw AuthError.refused("metadata server \(host) answered \(response.status.code)") }
        return String(buffer: body).trimmingWhitespace
    }
}

enum TokenResponse {
    /// Sends a token request and reads `{"access_token", "expires_in"}`. Errors carry Google's error
    /// code (e.g. `invalid_grant`) but never the token or the assertion.
    /// A token request's time limit: what waits for it is an event whose trigger is waiting too.
    static let timeout: Duration = .seconds(5)

    static func fetch(_ request: HTTPRequest, from source: String, httpClient: HTTPTransport) async throws -> AccessToken {
        // A connection lost while the answer's body arrives is as transient as one lost before it.
        let response: HTTPResponse
        let body: ByteBuffer
        do {
            response = try await httpClient.execute(request, timeout: timeout, maximumBodySize: 1 << 20)
            body = response.body
        } catch {
            throw AuthError.unavailable("\(source): \(error)")
        }
        let json = try? JSONValue(parsing: Array(buffer: body))
        guard response.status == .ok else {
            let code = json?["error"]?.stringValue ?? json?["error"]?["status"]?.stringValue ?? ""
            let detail = "\(source) answered \(response.status.code)\(code.isEmpty ? "" : " \(code)")"
            // Throttled or failing for now is worth another try; anything else is a refusal.
            throw response.status.code >= 500 || response.status.code == 429 ? AuthError.unavailable(detail) : AuthError.refused(detail)
        }
        guard let value = json?["access_token"]?.stringValue, !value.isEmpty else {
            throw AuthError.refused("\(source) answered without an access_token")
        }
        let lifetime = json?["expires_in"]?.int64Value ?? 3600
        return AccessToken(value: value, expiresAt: Timestamp.now().adding(.seconds(min(max(lifetime, 0), 86_400))))
    }
}
