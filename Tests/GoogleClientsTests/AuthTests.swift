import AsyncHTTPClient
import CryptoExtras
import FirestoreModel
import Foundation
import GoogleClients
import HeraldHTTPClient
import HeraldTesting
import Hummingbird
import JWTKit
import Synchronization
import Testing
import WireFormats

/// A throwaway service account: a fresh RSA key and its key file, pointing at a local token endpoint.
struct TestServiceAccount {
    let privateKey: _RSA.Signing.PrivateKey
    let email = "herald-test@herald-demo.iam.gserviceaccount.com"
    let keyID = "kid-123"

    /// The run's shared test key (see `TestKeys`).
    static func make() async throws -> TestServiceAccount { TestServiceAccount(privateKey: try await TestKeys.rsa()) }

    func key(tokenURI: String) -> ServiceAccountKey {
        ServiceAccountKey(clientEmail: email, privateKeyID: keyID, privateKeyPEM: privateKey.pemRepresentation, projectID: "herald-demo", tokenURI: tokenURI)
    }

    func verifier() async throws -> JWTKeyCollection {
        try await JWTKeyCollection().add(
            rsa: Insecure.RSA.PublicKey(pem: privateKey.publicKey.pemRepresentation), digestAlgorithm: .sha256, kid: JWKIdentifier(string: keyID))
    }
}

struct SeenAssertion: JWTPayload {
    var iss: String
    var sub: String?
    var scope: String?
    var aud: String
    var iat: Int
    var exp: Int
    func verify(using algorithm: some JWTAlgorithm) throws {}
}

/// What the stand-in token endpoint saw.
final class TokenEndpointLog: Sendable {
    let assertions = Mutex<[SeenAssertion]>([])
    let headers = Mutex<[JSONValue]>([])
    let grantTypes = Mutex<[String]>([])
    var count: Int { assertions.withLock { $0.count } }
}

func tokenEndpoint(_ account: TestServiceAccount, log: TokenEndpointLog, expiresIn: Int = 3600, refuse: Bool = false, delay: Duration = .zero) async throws
    -> Router<BasicRequestContext>
{
    let keys = try await account.verifier()
    let router = Router()
    router.post("/token") { request, _ -> Response in
        var request = request
        let form = String(buffer: try await request.collectBody(upTo: 1 << 20))
        var fields: [String: String] = [:]
        for pair in form.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
            if parts.count == 2 { fields[parts[0]] = parts[1] }
        }
        try await Task.sleep(for: delay)
        if refuse {
            return Response(
                status: .badRequest, body: .init(byteBuffer: ByteBuffer(string: #"{"error": "invalid_grant", "error_description": "Invalid JWT Signature."}"#)))
        }
        guard let assertion = fields["assertion"] else { return Response(status: .badRequest) }
        let claims = try await keys.verify(assertion, as: SeenAssertion.self)
        let header = try JWTHeaderJSON.of(assertion)
        log.assertions.withLock { $0.append(claims) }
        log.headers.withLock { $0.append(header) }
        log.grantTypes.withLock { $0.append(fields["grant_type"] ?? "") }
        let token = "ya29.token-\(log.count)"
        return Response(
            status: .ok, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(string: #"{"access_token": "\#(token)", "expires_in": \#(expiresIn), "token_type": "Bearer"}"#)))
    }
    return router
}

/// The JOSE header of a compact JWT, as JSON.
enum JWTHeaderJSON {
    static func of(_ jwt: String) throws -> JSONValue {
        var part = String(jwt.split(separator: ".").first ?? "").replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while part.count % 4 != 0 { part += "=" }
        return try JSONValue(parsing: Array(Data(base64Encoded: part) ?? Data()))
    }
}

@Suite struct AuthTests {
    let http = HTTPTransport.shared

    @Test func theAssertionIsExactlyWhatGoogleRequires() async throws {
        let account = try await TestServiceAccount.make()
        let log = TokenEndpointLog()
        try await withTestHTTPServer(try await tokenEndpoint(account, log: log)) { port in
            let credentials = try ServiceAccountCredentials(
                key: account.key(tokenURI: "http://127.0.0.1:\(port)/token"),
                mode: .tokenExchange(scopes: [ServiceAccountCredentials.cloudPlatformScope, ServiceAccountCredentials.messagingScope]),
                httpClient: http)
            let before = Int(Date().timeIntervalSince1970)
            #expect(try await credentials.token() == "ya29.token-1")
            let claims = try #require(log.assertions.withLock { $0.first })
            let header = try #require(log.headers.withLock { $0.first })
            #expect(header == ["alg": "RS256", "kid": "kid-123", "typ": "JWT"])
            #expect(claims.iss == account.email)
            #expect(claims.aud == "http://127.0.0.1:\(port)/token")
            #expect(claims.scope == "https://www.googleapis.com/auth/cloud-platform https://www.googleapis.com/auth/firebase.messaging")
            #expect(claims.iat >= before - 1 && claims.iat <= before + 5)
            #expect(claims.exp - claims.iat == 3600)
            #expect(log.grantTypes.withLock { $0 } == ["urn:ietf:params:oauth:grant-type:jwt-bearer"])
        }
    }

    @Test func selfSignedJWTModeNeedsNoExchange() async throws {
        let account = try await TestServiceAccount.make()
        let credentials = try ServiceAccountCredentials(
            key: account.key(tokenURI: "http://127.0.0.1:1/never"),
            mode: .selfSignedJWT(audience: "https://firestore.googleapis.com/"), httpClient: http)
        let token = try await credentials.token()
        let claims = try await account.verifier().verify(token, as: SeenAssertion.self)
        #expect(claims.aud == "https://firestore.googleapis.com/")
        #expect(claims.iss == account.email && claims.sub == account.email)
        #expect(claims.scope == nil)
    }

    @Test func tokensAreCachedAndConcurrentCallersShareOneRefresh() async throws {
        let account = try await TestServiceAccount.make()
        let log = TokenEndpointLog()
        try await withTestHTTPServer(try await tokenEndpoint(account, log: log, delay: .milliseconds(200))) { port in
            let credentials = try ServiceAccountCredentials(
                key: account.key(tokenURI: "http://127.0.0.1:\(port)/token"),
                mode: .tokenExchange(scopes: ["s"]), httpClient: http)
            let tokens = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<50 { group.addTask { try await credentials.token() } }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(tokens == ["ya29.token-1"])
            #expect(try await credentials.token() == "ya29.token-1")
            #expect(log.count == 1)
        }
    }

    @Test func aTokenCloseToExpiryIsRefreshedEarly() async throws {
        let account = try await TestServiceAccount.make()
        let log = TokenEndpointLog()
        // 200 s left is inside the 5-minute margin: every call must refresh.
        try await withTestHTTPServer(try await tokenEndpoint(account, log: log, expiresIn: 200)) { port in
            let credentials = try ServiceAccountCredentials(
                key: account.key(tokenURI: "http://127.0.0.1:\(port)/token"),
                mode: .tokenExchange(scopes: ["s"]), httpClient: http)
            #expect(try await credentials.token() == "ya29.token-1")
            #expect(try await credentials.token() == "ya29.token-2")
        }
        let cache = TokenCache(refreshMargin: .seconds(300)) { AccessToken(value: "t", expiresAt: Timestamp.now().adding(.seconds(3600))) }
        _ = try await cache.token()
        _ = try await cache.token()
        #expect(await cache.fetches == 1)
    }

    @Test func anAPIAnswering401GetsOneRefreshAndARetry() async throws {
        let account = try await TestServiceAccount.make()
        let log = TokenEndpointLog()
        let seen = Mutex<[String]>([])
        let api = Router()
        api.post("/v1/projects/herald-demo/messages:send") { request, _ -> Response in
            let auth = request.headers[.authorization] ?? ""
            seen.withLock { $0.append(auth) }
            if auth == "Bearer ya29.token-1" { return Response(status: .unauthorized) }
            return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: #"{"name": "projects/herald-demo/messages/1"}"#)))
        }
        try await withTestHTTPServer(api) { apiPort in
            try await withTestHTTPServer(try await tokenEndpoint(account, log: log)) { tokenPort in
                let credentials = try ServiceAccountCredentials(
                    key: account.key(tokenURI: "http://127.0.0.1:\(tokenPort)/token"),
                    mode: .tokenExchange(scopes: ["s"]), httpClient: http)
                let fcm = FCMClient(project: "herald-demo", endpoint: "http://127.0.0.1:\(apiPort)", credentials: credentials, httpClient: http)
                #expect(await fcm.send(["token": "t"]) == .sent(name: "projects/herald-demo/messages/1"))
                #expect(seen.withLock { $0 } == ["Bearer ya29.token-1", "Bearer ya29.token-2"])
            }
        }
    }

    /// A token endpoint that is throttling or failing for now is no refusal: the push is retried later.
    @Test(arguments: [429, 503])
    func aThrottledTokenEndpointFailsTheSendTransiently(status: Int) async throws {
        let busy = Router()
        busy.post("/token") { _, _ in Response(status: .init(code: status)) }
        try await withTestHTTPServer(busy) { port in
            let credentials = try ServiceAccountCredentials(
                key: try await TestServiceAccount.make().key(tokenURI: "http://127.0.0.1:\(port)/token"),
                mode: .tokenExchange(scopes: ["s"]), httpClient: http)
            let fcm = FCMClient(project: "herald-demo", endpoint: "http://127.0.0.1:\(port)", credentials: credentials, httpClient: http)
            guard case .failed(_, let retryable, _) = await fcm.send(["token": "t"]) else {
                Issue.record("the send cannot succeed")
                return
            }
            #expect(retryable)
        }
    }

    /// A token endpoint failing for a moment fails no call: nothing was sent without a token, so the
    /// client retries even a commit, and a push, within the call.
    @Test func aTokenEndpointFailingForAMomentIsRetriedWithinTheCall() async throws {
        let calls = Counter()
        let flaky = Router()
        flaky.post("/token") { _, _ in
            // Every other exchange fails; the local cloud takes the emulators' `owner` token.
            calls.take() % 2 == 0
                ? Response(status: .serviceUnavailable)
                : Response(
                    status: .ok, headers: [.contentType: "application/json"],
                    body: .init(byteBuffer: ByteBuffer(string: #"{"access_token": "owner", "expires_in": 3599, "token_type": "Bearer"}"#)))
        }
        let account = try await TestServiceAccount.make()
        try await withTestHTTPServer(flaky) { port in
            try await withLocalCloud { local in
                func credentials() throws -> ServiceAccountCredentials {
                    try ServiceAccountCredentials(
                        key: account.key(tokenURI: "http://127.0.0.1:\(port)/token"), mode: .tokenExchange(scopes: ["s"]), httpClient: http)
                }
                // A budget a loaded test machine cannot run out of: what is tested is that the retry happens.
                let patient = RetryPolicy(totalBudget: .seconds(30))
                let db = FirestoreClient(
                    project: "herald-test", endpoint: local.baseURL, credentials: try credentials(), httpClient: http,
                    writeRetry: patient, requestTimeout: .seconds(30))
                _ = try await db.commit([Write(.update(try db.name("a/b"), fields: ["n": .integer(1)], mask: nil))])
                #expect(calls.value == 2)
                let fcm = FCMClient(
                    project: "herald-test", endpoint: local.baseURL, credentials: try credentials(), httpClient: http,
                    retry: patient, requestTimeout: .seconds(30))
                let result = await fcm.send(["token": "device-1", "notification": ["title": "hi"]])
                guard case .sent = result else {
                    Issue.record("\(result)")
                    return
                }
                #expect(calls.value == 4)
            }
        }
    }

    @Test func errorsNeverContainTheKeyOrATokenOrTheAssertion() async throws {
        let account = try await TestServiceAccount.make()
        let log = TokenEndpointLog()
        try await withTestHTTPServer(try await tokenEndpoint(account, log: log, refuse: true)) { port in
            let credentials = try ServiceAccountCredentials(
                key: account.key(tokenURI: "http://127.0.0.1:\(port)/token"),
                mode: .tokenExchange(scopes: ["s"]), httpClient: http)
            do {
                _ = try await credentials.token()
                Issue.record("a refused exchange must throw")
            } catch {
                let text = "\(error)" + String(describing: error)
                #expect(text.contains("invalid_grant"))
                #expect(!text.contains("PRIVATE KEY"))
                #expect(!text.contains("eyJ"))  // no JWT
            }
        }
        let pemBody = String(account.privateKey.pemRepresentation.split(separator: "\n")[1])
        let badFiles: [(String, String)] = [
            ("not json", "not a JSON object"),
            (#"{"type": "authorized_user"}"#, "not a service-account key"),
            (#"{"type": "service_account", "client_email": "a@b", "private_key_id": "k"}"#, "no \"private_key\""),
            (#"{"type": "service_account", "client_email": "a@b", "private_key_id": "k", "private_key": "\#(pemBody)"}"#, "not a PEM private key"),
        ]
        for (content, fragment) in badFiles {
            #expect {
                _ = try ServiceAccountKey(json: Array(content.utf8), source: "key.json")
            } throws: { error in
                "\(error)".contains(fragment) && !"\(error)".contains(pemBody)
            }
        }
        let garbled = ServiceAccountKey(
            clientEmail: "a@b", privateKeyID: "k",
            privateKeyPEM: "-----BEGIN PRIVATE KEY-----\n\(pemBody)\n-----END PRIVATE KEY-----", projectID: nil)
        #expect { _ = try ServiceAccountCredentials(key: garbled, mode: .tokenExchange(scopes: []), httpClient: http) } throws: { error in
            "\(error)".contains("could not be read") && !"\(error)".contains(pemBody)
        }
        #expect(!"\(account.key(tokenURI: "x"))".contains("PRIVATE"))
    }

    @Test func theMetadataServerGivesTokenAndProject() async throws {
        let router = Router()
        router.get("/computeMetadata/v1/instance/service-accounts/default/token") { request, _ -> Response in
            guard request.headers[.init("Metadata-Flavor")!] == "Google" else { return Response(status: .forbidden) }
            return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: #"{"access_token": "meta-token", "expires_in": 3599}"#)))
        }
        router.get("/computeMetadata/v1/project/project-id") { _, _ in "herald-prod" }
        try await withTestHTTPServer(router) { port in
            let adc = try await ApplicationDefaultCredentials.resolve(environment: ["GCE_METADATA_HOST": "127.0.0.1:\(port)"], httpClient: http)
            #expect(adc.project == "herald-prod")
            #expect(try await adc.firestore.token() == "meta-token")
            #expect(adc.firestoreEndpoint == FirestoreClient.productionEndpoint)
            let emulator = try await ApplicationDefaultCredentials.resolve(
                environment: ["GCE_METADATA_HOST": "127.0.0.1:\(port)", "FIRESTORE_EMULATOR_HOST": "127.0.0.1:8787", "GOOGLE_CLOUD_PROJECT": "demo"],
                httpClient: http)
            #expect(try await emulator.firestore.token() == "owner")
            #expect(emulator.firestoreEndpoint == "http://127.0.0.1:8787")
            #expect(emulator.project == "demo")
            await #expect {
                _ = try await ApplicationDefaultCredentials.resolve(environment: ["FIRESTORE_EMULATOR_HOST": "127.0.0.1:8787"], httpClient: http)
            } throws: {
                // It names the missing setting, and is not taken for a bad key file (there is none).
                "\($0)".contains("GOOGLE_CLOUD_PROJECT is not") && !"\($0)".contains("key file")
            }
        }
    }
}
