import FirestoreModel
import HeraldHTTPClient
import NIOCore
import NIOHTTP1
import SystemAccess
import WireFormats

/// A credentials file as Google's tools write them (`"type"` says which): a service-account key, a
/// person's own login (`gcloud auth application-default login`: `authorized_user`), or a login that
/// acts as a service account (`--impersonate-service-account`: `impersonated_service_account`).
public enum CredentialsFile: Sendable {
    case serviceAccount(ServiceAccountKey)
    case authorizedUser(AuthorizedUser)
    case impersonated(Impersonation)

    /// `authorized_user`: an OAuth client and a refresh token.
    public struct AuthorizedUser: Sendable {
        public var clientID: String
        public var clientSecret: String
        public var refreshToken: String
        public var tokenURI: String
        /// The project billed for the calls (`quota_project_id`), which also names the project when nothing else does.
        public var quotaProject: String?
    }

    /// `impersonated_service_account`: source credentials that may mint tokens for a service account.
    public struct Impersonation: Sendable {
        /// `https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/EMAIL:generateAccessToken`
        public var url: String
        public var delegates: [String]
        public var source: Source
        public var quotaProject: String?

        public enum Source: Sendable {
            case serviceAccount(ServiceAccountKey)
            case authorizedUser(AuthorizedUser)
        }

        /// The impersonated account's email, from the URL.
        public var serviceAccount: String? {
            let parts = url.split(separator: "/")
            guard let index = parts.firstIndex(of: "serviceAccounts"), index + 1 < parts.count else { return nil }
            return parts[index + 1].split(separator: ":").first.map(String.init)
        }
    }

    public static let gcloudDefaultFile = "application_default_credentials.json"

    /// Where `gcloud auth application-default login` writes the file: `$CLOUDSDK_CONFIG/…`, else `~/.config/gcloud/…`.
    public static func wellKnownPath(environment: [String: String]) -> String? {
        if let folder = environment["CLOUDSDK_CONFIG"], !folder.isEmpty { return "\(folder)/\(gcloudDefaultFile)" }
        guard let home = environment["HOME"], !home.isEmpty else { return nil }
        return "\(home)/.config/gcloud/\(gcloudDefaultFile)"
    }

    public init(contentsOf path: String) throws(AuthError) {
        let bytes: [UInt8]
        do { bytes = try LocalFile.read(path, limit: 1 << 20) } catch { throw AuthError.badKeyFile("cannot read \(error)") }
        guard let json = try? JSONValue(parsing: bytes), json.objectValue != nil else { throw AuthError.badKeyFile("\(path) is not a JSON object") }
        self = try Self.read(json, source: path, bytes: bytes)
    }

    static func read(_ json: JSONValue, source: String, bytes: [UInt8]) throws(AuthError) -> CredentialsFile {
        switch json["type"]?.stringValue {
        case "service_account": return .serviceAccount(try ServiceAccountKey(json: bytes, source: source))
        case "authorized_user": return .authorizedUser(try authorizedUser(json, source: source))
        case "impersonated_service_account":
            guard let url = json["service_account_impersonation_url"]?.stringValue, url.contains("/serviceAccounts/"), url.hasSuffix(":generateAccessToken")
            else { throw AuthError.badKeyFile("\(source) has no service_account_impersonation_url ending in :generateAccessToken") }
            guard let sourceJSON = json["source_credentials"], sourceJSON.objectValue != nil else {
                throw AuthError.badKeyFile("\(source) has no source_credentials")
            }
            let inner: Impersonation.Source
            switch sourceJSON["type"]?.stringValue {
            case "authorized_user": inner = .authorizedUser(try authorizedUser(sourceJSON, source: "\(source)'s source_credentials"))
            case "service_account":
                inner = .serviceAccount(try ServiceAccountKey(json: sourceJSON.serializedBytes(), source: "\(source)'s source_credentials"))
            default: throw AuthError.badKeyFile("\(source)'s source_credentials must be of type authorized_user or service_account")
            }
            return .impersonated(
                Impersonation(
                    url: url, delegates: json["delegates"]?.arrayValue?.compactMap(\.stringValue) ?? [], source: inner,
                    quotaProject: json["quota_project_id"]?.stringValue))
        case let other:
            throw AuthError.badKeyFile(
                "\(source) is a credentials file of type \(other.map { "\"\($0)\"" } ?? "none"): Herald reads service_account, authorized_user and impersonated_service_account"
            )
        }
    }

    static func authorizedUser(_ json: JSONValue, source: String) throws(AuthError) -> AuthorizedUser {
        func field(_ name: String) throws(AuthError) -> String {
            guard let value = json[name]?.stringValue, !value.isEmpty else { throw AuthError.badKeyFile("\(source) has no \"\(name)\"") }
            return value
        }
        return AuthorizedUser(
            clientID: try field("client_id"), clientSecret: try field("client_secret"), refreshToken: try field("refresh_token"),
            tokenURI: json["token_uri"]?.stringValue ?? "https://oauth2.googleapis.com/token", quotaProject: json["quota_project_id"]?.stringValue)
    }

    /// The project the file names, if any: a key's `project_id`, a login's quota project, or the
    /// impersonated account's own project (`NAME@PROJECT.iam.gserviceaccount.com`).
    public var project: String? {
        switch self {
        case .serviceAccount(let key): return key.projectID
        case .authorizedUser(let user): return user.quotaProject
        case .impersonated(let impersonation):
            if let quota = impersonation.quotaProject { return quota }
            guard let email = impersonation.serviceAccount, let domain = email.split(separator: "@").last,
                domain.hasSuffix(".iam.gserviceaccount.com")
            else { return nil }
            return String(domain.dropLast(".iam.gserviceaccount.com".count))
        }
    }

    /// The URLs the file sends secrets to: in clear only to this machine.
    var secretDestinations: [(url: String, what: String)] {
        switch self {
        case .serviceAccount(let key): [(key.tokenURI, "token_uri")]
        case .authorizedUser(let user): [(user.tokenURI, "token_uri")]
        case .impersonated(let impersonation):
            [(impersonation.url, "service_account_impersonation_url")]
                + {
                    switch impersonation.source {
                    case .authorizedUser(let user): [(user.tokenURI, "source token_uri")]
                    case .serviceAccount(let key): [(key.tokenURI, "source token_uri")]
                    }
                }()
        }
    }

    /// Credentials for these scopes (a login's refresh token carries its own scopes: `scopes` is ignored for it).
    public func credentials(scopes: [String], httpClient: HTTPTransport) throws(AuthError) -> any AccessTokenProvider {
        switch self {
        case .serviceAccount(let key): return try ServiceAccountCredentials(key: key, mode: .tokenExchange(scopes: scopes), httpClient: httpClient)
        case .authorizedUser(let user): return AuthorizedUserCredentials(user, httpClient: httpClient)
        case .impersonated(let impersonation):
            let source: any AccessTokenProvider =
                switch impersonation.source {
                case .authorizedUser(let user): AuthorizedUserCredentials(user, httpClient: httpClient)
                case .serviceAccount(let key):
                    try ServiceAccountCredentials(
                        key: key, mode: .tokenExchange(scopes: [ServiceAccountCredentials.cloudPlatformScope]), httpClient: httpClient)
                }
            return ImpersonatedCredentials(impersonation, source: source, scopes: scopes, httpClient: httpClient)
        }
    }
}

/// A person's own login: the refresh token exchanged at `token_uri` (`grant_type=refresh_token`).
public struct AuthorizedUserCredentials: AccessTokenProvider {
    let cache: TokenCache

    public init(_ user: CredentialsFile.AuthorizedUser, httpClient: HTTPTransport) {
        cache = TokenCache {
            var request = HTTPRequest(url: user.tokenURI)
            request.method = .POST
            request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
            let form = [
                ("grant_type", "refresh_token"), ("client_id", user.clientID), ("client_secret", user.clientSecret), ("refresh_token", user.refreshToken),
            ]
            // Form values: unreserved characters as they are, everything else %XX (a refresh token holds `/`).
            let unreserved = { (byte: UInt8) in
                (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte) || [45, 46, 95, 126].contains(byte)
            }
            request.body = ByteBuffer(string: form.map { "\($0)=\(PercentEncoding.encode($1, allowed: unreserved))" }.joined(separator: "&"))
            return try await TokenResponse.fetch(request, from: "token endpoint \(user.tokenURI)", httpClient: httpClient)
        }
    }

    public func token() async throws -> String { try await cache.token() }
    public func invalidate(_ token: String) async { await cache.invalidate(token) }
}

/// A service account's token minted with other credentials (IAM Credentials' `generateAccessToken`).
public struct ImpersonatedCredentials: AccessTokenProvider {
    let cache: TokenCache

    public init(_ impersonation: CredentialsFile.Impersonation, source: any AccessTokenProvider, scopes: [String], httpClient: HTTPTransport) {
        cache = TokenCache {
            let sourceToken = try await source.token()
            var request = HTTPRequest(url: impersonation.url)
            request.method = .POST
            request.headers.add(name: "authorization", value: "Bearer \(sourceToken)")
            request.headers.add(name: "content-type", value: "application/json")
            var body: [String: JSONValue] = ["scope": .array(scopes.map(JSONValue.string)), "lifetime": "3600s"]
            if !impersonation.delegates.isEmpty { body["delegates"] = .array(impersonation.delegates.map(JSONValue.string)) }
            request.body = ByteBuffer(bytes: JSONValue.object(body).serializedBytes())
            let what = "IAM credentials for \(impersonation.serviceAccount ?? "the service account")"
            let response: HTTPResponse
            do { response = try await httpClient.execute(request, timeout: TokenResponse.timeout, maximumBodySize: 1 << 20) } catch {
                throw AuthError.unavailable("\(what): \(error)")
            }
            let json = try? JSONValue(parsing: Array(buffer: response.body))
            guard response.status == .ok else {
                if response.status.code == 401 { await source.invalidate(sourceToken) }
                let detail = "\(what) answered \(response.status.code) \(json?["error"]?["status"]?.stringValue ?? "")"
                throw response.status.code >= 500 || response.status.code == 429 ? AuthError.unavailable(detail) : AuthError.refused(detail)
            }
            guard let token = json?["accessToken"]?.stringValue, !token.isEmpty, let expires = json?["expireTime"]?.stringValue,
                let expiresAt = Timestamp(rfc3339: expires)
            else { throw AuthError.refused("\(what) answered without an accessToken and expireTime") }
            return AccessToken(value: token, expiresAt: expiresAt)
        }
    }

    public func token() async throws -> String { try await cache.token() }
    public func invalidate(_ token: String) async { await cache.invalidate(token) }
}
