import AsyncHTTPClient
import FirestoreModel
import Foundation
import GoogleClients
import HeraldCore
import HeraldHTTPClient
import HeraldHTTPServer
import HeraldRuntime
import HeraldTesting
import Hummingbird
import LocalCloud
import Logging
import Testing
import WireFormats

/// HERALD_REQUIRE_OIDC_AUDIENCE: a function answers only callers with a valid identity token, verified
/// against the JWKS the local cloud publishes, as a deployed one verifies Google's.
@Suite struct IdentityVerificationTests {
    static let audience = "https://presencesweeper-abc123-ew.a.run.app/"

    /// A scheduled function's host that counts the runs it is asked for.
    struct CountingSweeper: FunctionHost {
        struct Function: HeraldFunction {
            static let name = "presenceSweeper"
            static let summary = "counts its runs"
        }
        let runs = Counter()
        func respond(toPost request: HTTPServer.Request, on server: FunctionServer<Self>) async -> EventResponse {
            runs.increment()
            return EventResponse(status: 200, body: .object([:]))
        }
    }

    func withGuardedServer(_ body: @Sendable (TestLocalCloud, TestFunctionServer, CountingSweeper) async throws -> Void) async throws {
        try await withLocalCloud { cloud in
            let verifier = IdentityTokenVerifier(audience: Self.audience, jwksURL: "\(cloud.baseURL)/herald/oidc/jwks", httpClient: .shared)
            let sweeper = CountingSweeper()
            let server = FunctionServer(host: sweeper, identity: verifier, logger: Logger(label: "t") { _ in SwiftLogNoOpLogHandler() })
            try await withFunctionServer(server) { try await body(cloud, $0, sweeper) }
        }
    }

    func post(_ server: TestFunctionServer, token: String?) async throws -> TestResponse {
        try await HTTPClient.shared.post("\(server.baseURL)/", headers: token.map { ["authorization": "Bearer \($0)"] } ?? [:], body: [])
    }

    @Test func goodTokensPassAndEveryBadOneGets401WithAReason() async throws {
        try await withGuardedServer { cloud, server, sweeper in
            let good = try await cloud.cloud.identity.identityToken(audience: Self.audience)
            #expect(try await post(server, token: good).status == 200)
            #expect(sweeper.runs.value == 1)

            let expired = try await cloud.cloud.identity.identityToken(audience: Self.audience, lifetime: -3600)
            // Times a token's maker chose: issued or valid only in an hour, or valid for ten years (each was accepted).
            let issuedLater = try await cloud.cloud.identity.identityToken(audience: Self.audience, issuedIn: 3600)
            let notYetValid = try await cloud.cloud.identity.identityToken(audience: Self.audience, notBefore: 3600)
            let forever = try await cloud.cloud.identity.identityToken(audience: Self.audience, lifetime: 10 * 365 * 86_400)
            let wrongAudience = try await cloud.cloud.identity.identityToken(audience: "https://another-service.a.run.app/")
            var parts = good.split(separator: ".").map(String.init)
            // Claim another audience without re-signing: the signature no longer matches.
            parts[1] = Data(#"{"iss":"https://accounts.google.com","aud":"x","exp":9999999999}"#.utf8).base64EncodedString()
                .replacingOccurrences(of: "=", with: "").replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            let tampered = parts.joined(separator: ".")
            // The good token's claims under headers that ask for no signature, or for HMAC with a key the caller chose.
            func reheaded(_ header: String, signature: String) -> String {
                [
                    Data(header.utf8).base64EncodedString().replacingOccurrences(of: "=", with: ""), good.split(separator: ".").map(String.init)[1],
                    signature,
                ].joined(separator: ".")
            }
            let unsigned = reheaded(#"{"alg":"none","typ":"JWT"}"#, signature: "")
            let hmac = reheaded(#"{"alg":"HS256","typ":"JWT"}"#, signature: good.split(separator: ".").map(String.init)[2])
            for (token, reason) in [
                (nil, "no Authorization header"), (expired, "expired"), (wrongAudience, "not \(Self.audience)"),
                (issuedLater, "issued in the future"), (notYetValid, "not valid before"), (forever, "at most 24 are accepted"),
                (tampered, "signature"), ("not-a-jwt", "signature"), (unsigned, "signature"), (hmac, "signature"),
                ("a.b.c.d", "signature"), (String(repeating: "A", count: 40_000), "signature"),
            ] as [(String?, String)] {
                let response = try await post(server, token: token)
                #expect(response.status == 401, "\(reason)")
                #expect(response.body.contains(reason), "\(response.body)")
                if let token { #expect(!response.body.contains(token), "the token never comes back") }
            }
            #expect(sweeper.runs.value == 1, "no refused call ran the function")
        }
    }

    /// A caller without a valid token is refused on the request's head: its body (up to 10 MiB) was read
    /// and buffered first. Here the body never comes in full, and the 401 comes anyway, at once.
    @Test func aCallerIsRefusedBeforeItsBodyIsRead() async throws {
        try await withGuardedServer { _, server, sweeper in
            let port = server.port
            let (text, closed) = try await offThePool {
                let connection = try RawHTTPConnection(port: port)
                try connection.send("POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer not-a-token\r\nContent-Length: 8000000\r\n\r\n")
                try connection.send(String(repeating: "b", count: 4096))
                return connection.read(timeout: 5)
            }
            #expect(text.hasPrefix("HTTP/1.1 401"), "\(text.prefix(300))")
            #expect(closed, "the connection is closed: the rest of the body is never read")
            #expect(sweeper.runs.value == 0)
        }
    }

    /// Many callers at once fetch the keys once; keys an hour old are fetched again, and while the
    /// JWKS cannot be had the keys held still verify (for up to a day).
    @Test func oneFetchInFlightAndOldKeysKeptWhileTheJWKSIsDown() async throws {
        let fetches = Counter()
        let down = Flag()
        try await withLocalCloud { cloud in
            let jwks = try cloud.cloud.identity.jwks().serialized()
            let router = Router()
            router.get("/jwks") { _, _ -> Response in
                fetches.increment()
                try await Task.sleep(for: .milliseconds(200))
                if down.isSet { return Response(status: .serviceUnavailable) }
                return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: jwks)))
            }
            try await withTestHTTPServer(router) { port in
                let verifier = IdentityTokenVerifier(audience: Self.audience, jwksURL: "http://127.0.0.1:\(port)/jwks", httpClient: .shared)
                let token = try await cloud.cloud.identity.identityToken(audience: Self.audience, lifetime: 86_400)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<20 { group.addTask { _ = try await verifier.verify(authorization: "Bearer \(token)") } }
                    try await group.waitForAll()
                }
                #expect(fetches.value == 1, "one fetch for twenty callers")
                down.set()
                let later = Timestamp.now().adding(.seconds(2 * 3600))
                let claims = try await verifier.verify(authorization: "Bearer \(token)", now: later)
                #expect(claims.email == cloud.cloud.identity.clientEmail, "the keys held still verify")
                #expect(fetches.value == 2, "an hour on, the keys were fetched again (and that failed)")
                await #expect { _ = try await verifier.verify(authorization: "Bearer \(token)", now: Timestamp.now().adding(.seconds(2 * 86_400))) } throws: {
                    if case .unavailable = $0 as? IdentityError { true } else { false }
                }
            }
        }
    }

    /// HERALD_ALLOWED_CALLERS: a valid token of another account, or without a verified email, is refused.
    @Test func onlyListedCallersWithVerifiedEmailsPass() async throws {
        try await withLocalCloud { cloud in
            let verifier = IdentityTokenVerifier(
                audience: Self.audience, jwksURL: "\(cloud.baseURL)/herald/oidc/jwks",
                allowedCallers: ["trigger@p.iam.gserviceaccount.com"], httpClient: .shared)
            let allowed = try await cloud.cloud.identity.identityToken(audience: Self.audience, email: "trigger@p.iam.gserviceaccount.com")
            #expect(try await verifier.verify(authorization: "Bearer \(allowed)").email == "trigger@p.iam.gserviceaccount.com")
            let stranger = try await cloud.cloud.identity.identityToken(audience: Self.audience, email: "attacker@evil.iam.gserviceaccount.com")
            await #expect { _ = try await verifier.verify(authorization: "Bearer \(stranger)") } throws: {
                "\($0)".contains("not one of HERALD_ALLOWED_CALLERS")
            }
        }
    }

    @Test func keysThatCannotBeFetchedAnswer503SoTheCallerRetries() async throws {
        try await withLocalCloud { cloud in
            let verifier = IdentityTokenVerifier(audience: Self.audience, jwksURL: "\(cloud.baseURL)/herald/no-such-jwks", httpClient: .shared)
            let server = FunctionServer(host: CountingSweeper(), identity: verifier, logger: Logger(label: "t") { _ in SwiftLogNoOpLogHandler() })
            try await withFunctionServer(server) { server in
                let response = try await post(server, token: "a.b.c")
                #expect(response.status == 503 && response.body.contains("JWKS"), "\(response.body)")
            }
        }
    }
}
