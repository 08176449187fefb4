import AsyncHTTPClient
import CryptoExtras
import EmbeddedFirestore
import FirestoreModel
import Foundation
import GoogleClients
import HeraldHTTPClient
import HeraldTesting
import JWTKit
import LocalCloud
import NIOCore
import NIOHTTP1
import Testing
import WireFormats

/// The local cloud's other Google APIs, each driven by Herald's own client for it.
@Suite struct LocalCloudAPITests {
    @Test func fcmSinkValidatesRecordsAndFailsAsFCMDoes() async throws {
        try await withLocalCloud { local in
            let fcm = FCMClient(
                project: "herald-test", endpoint: local.baseURL, credentials: EmulatorCredentials(), httpClient: .shared,
                retry: RetryPolicy(maximumAttempts: 1))
            let good: JSONValue = ["token": "tok-1", "notification": ["title": "Alice", "body": "Hey"], "data": ["conversationId": "c1"]]
            guard case .sent = await fcm.send(good) else {
                Issue.record("a valid message was refused")
                return
            }

            // Two targets, a non-string data value, an unknown field: 400 INVALID_ARGUMENT, never retried.
            for bad: JSONValue in [["token": "t", "topic": "news"], ["token": "t", "data": ["n": 1]], ["token": "t", "colour": "red"]] {
                guard case .failed(_, let retryable, _) = await fcm.send(bad) else {
                    Issue.record("accepted \(bad.serialized())")
                    continue
                }
                #expect(!retryable)
            }
            // A token marked dead: UNREGISTERED, which the client reports as a dead token.
            try await local.cloud.fcm.markDead("tok-dead")
            guard case .dead = await fcm.send(["token": "tok-dead", "data": ["a": "b"]]) else {
                Issue.record("dead token not reported")
                return
            }
            // Injected throttling: 429 with Retry-After, retryable.
            local.cloud.fcm.inject([.quotaExceeded])
            guard case .failed(_, true, let retryAfter) = await fcm.send(good) else {
                Issue.record("429 not retryable")
                return
            }
            // The sink says Retry-After: 1; the client waits at least the minute FCM asks for QUOTA_EXCEEDED.
            #expect(retryAfter == 60)
            // validate_only checks without recording.
            guard case .sent = await fcm.send(good, validateOnly: true) else {
                Issue.record("validate_only refused")
                return
            }

            let recorded = try await local.cloud.fcm.messages()
            #expect(recorded.count == 1)
            #expect(recorded.first?.token == "tok-1")
            #expect(recorded.first?.message["notification"]?["title"] == "Alice")
            let listed = try await HTTPClient.shared.get("\(local.baseURL)/herald/fcm/messages?token=tok-1")
            #expect(try JSONValue(parsing: listed.body)["messages"]?.arrayValue?.count == 1)
        }
    }

    @Test func theRealServiceAccountAuthPathRunsLocally() async throws {
        try await withLocalCloud { local in
            let keyFile = try local.cloud.writeKeyFile(baseURL: local.baseURL)
            let key = try ServiceAccountKey(contentsOf: keyFile)
            let credentials = try ServiceAccountCredentials(
                key: key, mode: .tokenExchange(scopes: [ServiceAccountCredentials.cloudPlatformScope]), httpClient: .shared)
            let db = FirestoreClient(project: "herald-test", endpoint: local.baseURL, credentials: credentials, httpClient: .shared)
            let name = try db.name("users/alice")
            _ = try await db.commit([Write(.update(name, fields: ["n": .integer(1)], mask: nil))])
            // Every issued token revoked: the next call gets 401, refreshes once, and succeeds.
            local.cloud.identity.revokeAll()
            #expect(try await db.get(name)?["n"] == .integer(1))

            // A bearer token the cloud never issued is refused with Google's 401.
            let stranger = FirestoreClient(project: "herald-test", endpoint: local.baseURL, credentials: FixedToken("ya29.forged"), httpClient: .shared)
            await #expect { try await stranger.get(name) } throws: { ($0 as? GoogleAPIError)?.status == .unauthenticated }

            // An assertion signed by another key is refused by the token endpoint.
            let other = ServiceAccountKey(
                clientEmail: key.clientEmail, privateKeyID: key.privateKeyID,
                privateKeyPEM: try await TestKeys.rsaPEM(1),
                projectID: "herald-test", tokenURI: "\(local.baseURL)/token")
            let forged = try ServiceAccountCredentials(key: other, mode: .tokenExchange(scopes: []), httpClient: .shared)
            await #expect(throws: (any Error).self) { try await forged.token() }
        }
    }

    /// Tokens that outlive the client's 300 s refresh margin by 8 s: the client fetches a new one every
    /// 8 s (a window a loaded test machine does not close between two calls), and the cloud refuses
    /// tokens once they expire.
    @Test func shortLivedAccessTokensExpireAndAreRefreshed() async throws {
        var options = LocalCloudOptions.testing
        options.accessTokenLifetime = 308
        try await withLocalCloud(options) { local in
            let key = try ServiceAccountKey(contentsOf: try local.cloud.writeKeyFile(baseURL: local.baseURL))
            let credentials = try ServiceAccountCredentials(
                key: key, mode: .tokenExchange(scopes: [ServiceAccountCredentials.cloudPlatformScope]), httpClient: .shared)
            let first = try await credentials.token()
            #expect(try await credentials.token() == first)
            try await Task.sleep(for: .milliseconds(8200))
            let second = try await credentials.token()
            #expect(second != first)
            let db = FirestoreClient(project: "herald-test", endpoint: local.baseURL, credentials: credentials, httpClient: .shared)
            _ = try await db.commit([Write(.update(try db.name("a/b"), fields: [:], mask: nil))])
            #expect(local.cloud.faults.requests["token"] == 2)

            let directory = NSTemporaryDirectory() + "herald-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let expiring = try await LocalIdentity(project: "p", directory: directory, accessTokenLifetime: 1)
            let token = try #require(expiring.issueAccessToken(email: "a@p.iam.gserviceaccount.com", scope: "")["access_token"]?.stringValue)
            #expect(throws: Never.self) { try expiring.authorize("Bearer \(token)") }
            try await Task.sleep(for: .milliseconds(1100))
            #expect(throws: LocalAPIError.self) { try expiring.authorize("Bearer \(token)") }
        }
    }

    /// The Firebase SDKs' mock user tokens (`mockUserToken`: an unsigned JWT, `alg: none`) are let in as
    /// Google's emulators let them in; a token with a signature this cloud did not issue is not, nor is a
    /// mock token's look-alike with `alg` set.
    @Test func mockUserTokensAreLetInAndOthersAreNot() async throws {
        let directory = NSTemporaryDirectory() + "herald-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let identity = try await LocalIdentity(project: "p", directory: directory)
        func jwt(_ header: String, _ claims: String, signature: String = "") -> String {
            Base64.encode(Array(header.utf8), urlSafe: true) + "." + Base64.encode(Array(claims.utf8), urlSafe: true) + "." + signature
        }
        // What the web SDK writes for {mockUserToken: {user_id: "alice"}}.
        let mock = jwt(
            #"{"alg":"none","type":"JWT"}"#, #"{"iss":"https://securetoken.google.com/p","aud":"p","sub":"alice","user_id":"alice","iat":0,"exp":3600}"#)
        #expect(throws: Never.self) { try identity.authorize("Bearer \(mock)") }
        for refused in [
            jwt(#"{"alg":"RS256","typ":"JWT"}"#, #"{"sub":"alice"}"#, signature: "c2ln"), jwt(#"{"alg":"none"}"#, #"{"sub":"alice"}"#, signature: "x"),
            jwt(#"{"alg":"none"}"#, "[]"), "ya29.made-up",
        ] {
            #expect(throws: LocalAPIError.self, "\(refused)") { try identity.authorize("Bearer \(refused)") }
        }
    }

    @Test func metadataServerGivesTokensProjectAndVerifiableIdentityTokens() async throws {
        try await withLocalCloud { local in
            let metadata = MetadataServerCredentials(host: local.host, httpClient: .shared)
            #expect(try await metadata.projectID() == "herald-test")
            let db = FirestoreClient(project: "herald-test", endpoint: local.baseURL, credentials: metadata, httpClient: .shared)
            _ = try await db.commit([Write(.update(try db.name("a/b"), fields: [:], mask: nil))])

            var request = HTTPClientRequest(url: "\(local.baseURL)/computeMetadata/v1/instance/service-accounts/default/identity?audience=https://fn.example")
            request.headers.add(name: "Metadata-Flavor", value: "Google")
            let token = String(buffer: try await HTTPClient.shared.execute(request, timeout: .seconds(5)).body.collect(upTo: 1 << 16))
            let jwks = try await HTTPClient.shared.get("\(local.baseURL)/herald/oidc/jwks")
            let keys = try await JWTKeyCollection().add(jwks: try JSONDecoder().decode(JWKS.self, from: Data(jwks.body.utf8)))
            let claims = try await keys.verify(token, as: IdentityTokenClaims.self)
            #expect(claims.aud.value == ["https://fn.example"])
            #expect(claims.iss.value == "https://accounts.google.com")
            // Without the Metadata-Flavor header the metadata server refuses, as Google's does.
            let refused = try await HTTPClient.shared.get("\(local.baseURL)/computeMetadata/v1/project/project-id")
            #expect(refused.status == 403)
        }
    }

    @Test func aTransactionWhoseReadChangedIsAbortedAndRunTransactionRetries() async throws {
        try await withLocalCloud { local in
            let db = local.firestore()
            let counter = try db.name("counters/c")
            _ = try await db.commit([Write(.update(counter, fields: ["n": .integer(0)], mask: nil))])
            let transaction = try await db.beginTransaction()
            _ = try await db.batchGet([counter], transaction: transaction)
            _ = try await db.commit([Write(.update(counter, fields: ["n": .integer(10)], mask: nil))])
            await #expect {
                _ = try await db.commit([Write(.update(counter, fields: ["n": .integer(1)], mask: nil))], transaction: transaction)
            } throws: { ($0 as? GoogleAPIError)?.status == .aborted }
            #expect(try await db.get(counter)?["n"] == .integer(10))

            // Concurrent read-modify-write transactions: every increment lands exactly once.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<6 {
                    group.addTask {
                        _ = try await db.runTransaction(maximumAttempts: 50) { tx in
                            let current = try await tx.get([counter])[counter]??["n"]?.integerValue ?? 0
                            return ([Write(.update(counter, fields: ["n": .integer(current + 1)], mask: nil))], ())
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await db.get(counter)?["n"] == .integer(16))
        }
    }

    @Test func restResourcesAnswerInGooglesWireFormat() async throws {
        try await withLocalCloud { local in
            let base = "\(local.baseURL)/v1/projects/p/databases/(default)/documents"
            let http = HTTPClient.shared
            // Create with a chosen id; a second create of it is 409 ALREADY_EXISTS in Google's error body.
            let created = try await http.send("POST", "\(base)/rooms?documentId=r1", #"{"fields": {"name": {"stringValue": "A"}}}"#)
            #expect(created.status == 200)
            #expect(try JSONValue(parsing: created.body)["name"] == "projects/p/databases/(default)/documents/rooms/r1")
            let again = try await http.send("POST", "\(base)/rooms?documentId=r1", "{}")
            #expect(again.status == 409)
            #expect(try JSONValue(parsing: again.body)["error"]?["status"] == "ALREADY_EXISTS")
            // PATCH with an update mask keeps other fields; currentDocument.exists=false refuses an existing document.
            let patched = try await http.send("PATCH", "\(base)/rooms/r1?updateMask.fieldPaths=topic", #"{"fields": {"topic": {"stringValue": "T"}}}"#)
            #expect(try JSONValue(parsing: patched.body)["fields"]?["name"]?["stringValue"] == "A")
            #expect(try await http.send("PATCH", "\(base)/rooms/r1?currentDocument.exists=false", "{}").status == 409)
            // Auto ids, listing with page tokens.
            for _ in 0..<3 { #expect(try await http.send("POST", "\(base)/rooms", "{}").status == 200) }
            var names: [String] = []
            var token = ""
            repeat {
                let page = try JSONValue(parsing: try await http.send("GET", "\(base)/rooms?pageSize=3&pageToken=\(token)", nil).body)
                names += (page["documents"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue }
                token = page["nextPageToken"]?.stringValue?.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            } while !token.isEmpty
            #expect(names.count == 4 && Set(names).count == 4)
            // batchGet streams a JSON array that ends exactly with `]` (Google's Python client needs that).
            let batch = try await http.send(
                "POST", "\(base):batchGet",
                #"{"documents": ["projects/p/databases/(default)/documents/rooms/r1", "projects/p/databases/(default)/documents/rooms/none"]}"#)
            #expect(batch.body.hasPrefix("[") && batch.body.hasSuffix("]"))
            let items = try JSONValue(parsing: batch.body).arrayValue ?? []
            #expect(items.first?["found"] != nil && items.last?["missing"] == "projects/p/databases/(default)/documents/rooms/none")
            // DELETE, then GET is 404 NOT_FOUND.
            #expect(try await http.send("DELETE", "\(base)/rooms/r1", nil).status == 200)
            let gone = try await http.send("GET", "\(base)/rooms/r1", nil)
            let goneBody = try JSONValue(parsing: gone.body)
            #expect(gone.status == 404 && goneBody["error"]?["status"] == "NOT_FOUND")
            // Malformed input is a 400 with a reason, never a crash.
            let garbage = try await http.send("POST", "\(base):commit", #"{"writes": [{"update": {"name": "nope"}}]}"#)
            #expect(garbage.status == 400 && garbage.body.contains("INVALID_ARGUMENT"))
        }
    }
}

/// A credential that always presents the same token.
struct FixedToken: AccessTokenProvider {
    let value: String
    init(_ value: String) { self.value = value }
    func token() async throws -> String { value }
    func invalidate(_ token: String) async {}
}

struct IdentityTokenClaims: JWTPayload {
    var iss: IssuerClaim
    var aud: AudienceClaim
    var exp: ExpirationClaim
    func verify(using algorithm: some JWTAlgorithm) throws { try exp.verifyNotExpired() }
}

extension HTTPClient {
    func send(_ method: String, _ url: String, _ body: String?) async throws -> TestResponse {
        var request = HTTPClientRequest(url: url)
        request.method = .init(rawValue: method)
        if let body {
            // As Google's clients send it (the local cloud refuses a body of any other type).
            request.headers.add(name: "content-type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await execute(request, timeout: .seconds(10))
        return TestResponse(status: Int(response.status.code), headers: [:], body: String(buffer: try await response.body.collect(upTo: 1 << 20)))
    }
}
