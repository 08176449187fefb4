import AsyncHTTPClient
import Foundation
import JWTKit
import NIOCore

/// Checks the OIDC identity token a caller sends (`Authorization: Bearer …`), as Cloud Run does for
/// Eventarc and Cloud Scheduler: signed RS256 by a key in the issuer's JWKS, from an accepted issuer,
/// for this audience, not expired. Keys are cached for an hour and fetched again when a token names
/// a key the cache lacks (Google rotates its keys), at most once a minute.
public actor IdentityTokenVerifier {
    public static let googleJWKS = "https://www.googleapis.com/oauth2/v3/certs"
    public static let googleIssuers: Set<String> = ["https://accounts.google.com", "accounts.google.com"]

    public struct Claims: JWTPayload, Equatable {
        public var iss: String
        public var aud: AudienceClaim
        public var exp: ExpirationClaim
        public var email: String?
        public func verify(using algorithm: some JWTAlgorithm) throws {}
    }

    public let audience: String
    public let issuers: Set<String>
    public let jwksURL: String
    let httpClient: HTTPClient
    let keyLifetime: TimeInterval = 3600
    let refetchInterval: TimeInterval = 60
    var keys: JWTKeyCollection?
    var fetchedAt = Date.distantPast

    public init(audience: String, jwksURL: String = googleJWKS, issuers: Set<String> = googleIssuers, httpClient: HTTPClient) {
        self.audience = audience
        self.jwksURL = jwksURL
        self.issuers = issuers
        self.httpClient = httpClient
    }

    /// The verified claims, or why the caller is refused. Never echoes the token.
    public func verify(authorization: String?, now: Date = Date()) async throws(IdentityError) -> Claims {
        guard let header = authorization?.trimmingCharacters(in: .whitespaces), !header.isEmpty else {
            throw .refused("no Authorization header: an OIDC identity token is required")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { throw .refused("the Authorization header is not a Bearer token") }
        let token = String(parts[1]).trimmingCharacters(in: .whitespaces)
        var claims: Claims
        do {
            claims = try await currentKeys(now: now).verify(token, as: Claims.self)
        } catch let error as IdentityError {
            throw error
        } catch {
            // An unknown key may be a rotated one: fetch the keys again (rate-limited) and try once more.
            guard now.timeIntervalSince(fetchedAt) > refetchInterval else { throw .refused("the identity token's signature does not verify") }
            keys = nil
            do { claims = try await currentKeys(now: now).verify(token, as: Claims.self) } catch let error as IdentityError {
                throw error
            } catch {
                throw .refused("the identity token's signature does not verify")
            }
        }
        guard issuers.contains(claims.iss) else { throw .refused("the identity token's issuer \(claims.iss) is not accepted") }
        // `https://service.run.app` and `https://service.run.app/` name the same service.
        func trimmed(_ text: String) -> String { text.hasSuffix("/") ? String(text.dropLast()) : text }
        guard claims.aud.value.contains(where: { trimmed($0) == trimmed(audience) }) else {
            throw .refused("the identity token is for audience \(claims.aud.value.joined(separator: ", ")), not \(audience)")
        }
        // Google allows a few minutes of clock skew; five is what its own libraries accept.
        guard claims.exp.value.addingTimeInterval(300) > now else { throw .refused("the identity token expired at \(claims.exp.value)") }
        return claims
    }

    func currentKeys(now: Date) async throws(IdentityError) -> JWTKeyCollection {
        if let keys, now.timeIntervalSince(fetchedAt) < keyLifetime { return keys }
        let fresh = JWTKeyCollection()
        do {
            let response = try await httpClient.execute(HTTPClientRequest(url: jwksURL), timeout: .seconds(10))
            let body = try await response.body.collect(upTo: 1 << 20)
            guard response.status == .ok else { throw IdentityError.unavailable("the JWKS at \(jwksURL) answered \(response.status.code)") }
            try await fresh.add(jwksJSON: String(buffer: body))
        } catch let error as IdentityError {
            throw error
        } catch {
            throw .unavailable("cannot fetch the JWKS at \(jwksURL): \(error)")
        }
        keys = fresh
        fetchedAt = now
        return fresh
    }
}

public enum IdentityError: Error, Sendable, CustomStringConvertible, Equatable {
    /// The caller is not who it must be: answer 401.
    case refused(String)
    /// The keys could not be fetched: answer 503 so the caller retries.
    case unavailable(String)

    public var description: String {
        switch self { case .refused(let reason), .unavailable(let reason): reason }
    }
}
