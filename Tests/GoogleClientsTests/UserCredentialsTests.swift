import FirestoreModel
import Foundation
import GoogleClients
import HeraldHTTPClient
import HeraldTesting
import Hummingbird
import Synchronization
import Testing
import WireFormats

/// A developer's own login, no key file: `gcloud auth application-default login` writes an
/// `authorized_user` file, `--impersonate-service-account` an `impersonated_service_account` one. Each is
/// exchanged at a stand-in for Google's endpoints that checks the request as Google's does.
@Suite struct UserCredentialsTests {
    /// What Google's token endpoint (`grant_type=refresh_token`) and IAM Credentials'
    /// `generateAccessToken` saw, and how long their tokens last.
    final class Google: Sendable {
        let refreshes = Mutex<[[String: String]]>([])
        let mints = Mutex<[(authorization: String, body: JSONValue)]>([])
        let lifetime: Int
        init(lifetime: Int = 3600) { self.lifetime = lifetime }

        var router: Router<BasicRequestContext> {
            let router = Router()
            router.post("/token") { request, _ -> Response in
                var request = request
                guard request.headers[.contentType] == "application/x-www-form-urlencoded" else { return Self.error(.badRequest, "invalid_request") }
                let form = String(buffer: try await request.collectBody(upTo: 1 << 16))
                var fields: [String: String] = [:]
                for pair in form.split(separator: "&") {
                    let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? "" }
                    guard parts.count == 2, fields[parts[0]] == nil else { return Self.error(.badRequest, "invalid_request") }
                    fields[parts[0]] = parts[1]
                }
                let count = self.refreshes.withLock {
                    $0.append(fields)
                    return $0.count
                }
                // Google's checks: the grant, the client, and the refresh token it issued to that client.
                guard fields["grant_type"] == "refresh_token" else { return Self.error(.badRequest, "unsupported_grant_type") }
                guard fields["client_id"] == "764086051850-x.apps.googleusercontent.com", fields["client_secret"] == "d-FL95Q19q7MQmFpd7hHD0Ty" else {
                    return Self.error(.unauthorized, "invalid_client")
                }
                guard fields["refresh_token"] == "1//0g-refresh/token+with=odd&chars" else { return Self.error(.badRequest, "invalid_grant") }
                return Response(
                    status: .ok, headers: [.contentType: "application/json"],
                    body: .init(
                        byteBuffer: ByteBuffer(
                            string:
                                #"{"access_token": "ya29.user-\#(count)", "expires_in": \#(self.lifetime), "scope": "https://www.googleapis.com/auth/cloud-platform", "token_type": "Bearer"}"#
                        )))
            }
            router.post("/v1/projects/-/serviceAccounts/:account") { request, context -> Response in
                var request = request
                let authorization = request.headers[.authorization] ?? ""
                let body = (try? JSONValue(parsing: Array(buffer: try await request.collectBody(upTo: 1 << 16)))) ?? .null
                let count = self.mints.withLock {
                    $0.append((authorization, body))
                    return $0.count
                }
                guard context.parameters.get("account") == "deployer@team-chat.iam.gserviceaccount.com:generateAccessToken" else {
                    return Self.error(.notFound, "NOT_FOUND")
                }
                guard authorization.hasPrefix("Bearer ya29.user-") else { return Self.error(.unauthorized, "UNAUTHENTICATED") }
                guard body["scope"]?.arrayValue?.isEmpty == false, body["lifetime"] == "3600s" else { return Self.error(.badRequest, "INVALID_ARGUMENT") }
                let expires = Timestamp.now().adding(.seconds(Int64(self.lifetime))).rfc3339
                return Response(
                    status: .ok, headers: [.contentType: "application/json"],
                    body: .init(byteBuffer: ByteBuffer(string: #"{"accessToken": "ya29.impersonated-\#(count)", "expireTime": "\#(expires)"}"#)))
            }
            return router
        }

        static func error(_ status: HTTPResponse.Status, _ code: String) -> Response {
            Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: #"{"error": "\#(code)"}"#)))
        }
    }

    static func write(_ json: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("adc-\(UUID().uuidString).json").path
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func authorizedUser(port: Int) -> String {
        #"{"type": "authorized_user", "client_id": "764086051850-x.apps.googleusercontent.com", "client_secret": "d-FL95Q19q7MQmFpd7hHD0Ty", "refresh_token": "1//0g-refresh/token+with=odd&chars", "token_uri": "http://127.0.0.1:\#(port)/token", "quota_project_id": "team-chat"}"#
    }

    @Test func anAuthorizedUserFileGetsTokensAndRefreshesThemBeforeExpiry() async throws {
        let google = Google(lifetime: 299)
        try await withTestHTTPServer(google.router) { port in
            let path = try Self.write(Self.authorizedUser(port: port))
            defer { try? FileManager.default.removeItem(atPath: path) }
            let adc = try await ApplicationDefaultCredentials.resolve(
                environment: ["GOOGLE_APPLICATION_CREDENTIALS": path, "HOME": "/nonexistent"], httpClient: .shared)
            #expect(adc.project == "team-chat", "the quota project names the project")
            #expect(try await adc.firestore.token() == "ya29.user-1")
            // 299 s left is inside the 5-minute margin at once: the next call refreshes.
            #expect(try await adc.firestore.token() == "ya29.user-2")
            #expect(google.refreshes.withLock { $0.count } == 2)
        }
    }

    @Test func gcloudsOwnFileIsFoundWithoutASetting() async throws {
        let google = Google()
        try await withTestHTTPServer(google.router) { port in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gcloud-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            try Data(Self.authorizedUser(port: port).utf8).write(to: folder.appendingPathComponent("application_default_credentials.json"))
            let adc = try await ApplicationDefaultCredentials.resolve(environment: ["CLOUDSDK_CONFIG": folder.path], httpClient: .shared)
            #expect(try await adc.messaging.token() == "ya29.user-1")
        }
    }

    @Test func anImpersonationFileMintsTheServiceAccountsTokens() async throws {
        let google = Google(lifetime: 299)
        try await withTestHTTPServer(google.router) { port in
            let path = try Self.write(
                #"{"type": "impersonated_service_account", "service_account_impersonation_url": "http://127.0.0.1:\#(port)/v1/projects/-/serviceAccounts/deployer@team-chat.iam.gserviceaccount.com:generateAccessToken", "delegates": [], "source_credentials": \#(Self.authorizedUser(port: port))}"#
            )
            defer { try? FileManager.default.removeItem(atPath: path) }
            let adc = try await ApplicationDefaultCredentials.resolve(
                environment: ["GOOGLE_APPLICATION_CREDENTIALS": path, "HOME": "/nonexistent"], httpClient: .shared)
            #expect(adc.project == "team-chat")
            #expect(try await adc.messaging.token() == "ya29.impersonated-1")
            let mint = try #require(google.mints.withLock { $0.first })
            #expect(mint.authorization == "Bearer ya29.user-1")
            #expect(
                mint.body["scope"]
                    == ["https://www.googleapis.com/auth/cloud-platform", "https://www.googleapis.com/auth/firebase.messaging"])
            // Refreshed before expiry: a new token minted with a fresh source token.
            #expect(try await adc.messaging.token() == "ya29.impersonated-2")
        }
    }

    @Test func aBadOrMissingFileIsNamedAndNoSecretIsShown() async throws {
        let refused = try Self.write(Self.authorizedUser(port: 1).replacingOccurrences(of: "d-FL95Q19q7MQmFpd7hHD0Ty", with: "wrong-secret-value"))
        defer { try? FileManager.default.removeItem(atPath: refused) }
        let google = Google()
        try await withTestHTTPServer(google.router) { port in
            let path = try Self.write(Self.authorizedUser(port: port).replacingOccurrences(of: "d-FL95Q19q7MQmFpd7hHD0Ty", with: "wrong-secret-value"))
            defer { try? FileManager.default.removeItem(atPath: path) }
            let adc = try await ApplicationDefaultCredentials.resolve(environment: ["GOOGLE_APPLICATION_CREDENTIALS": path], httpClient: .shared)
            let error = await #expect(throws: AuthError.self) { try await adc.firestore.token() }
            let said = "\(String(describing: error))"
            #expect(said.contains("401 invalid_client") && !said.contains("wrong-secret-value") && !said.contains("1//0g"), "\(said)")
        }
        let other = try Self.write(#"{"type": "external_account"}"#)
        defer { try? FileManager.default.removeItem(atPath: other) }
        await #expect {
            _ = try await ApplicationDefaultCredentials.resolve(environment: ["GOOGLE_APPLICATION_CREDENTIALS": other], httpClient: .shared)
        } throws: {
            "\($0)".contains("type \"external_account\"")
        }
        // A refresh token in clear to another host is refused before anything is sent.
        let remote = try Self.write(Self.authorizedUser(port: 1).replacingOccurrences(of: "http://127.0.0.1:1/token", with: "http://tokens.example.com/token"))
        defer { try? FileManager.default.removeItem(atPath: remote) }
        await #expect {
            _ = try await ApplicationDefaultCredentials.resolve(environment: ["GOOGLE_APPLICATION_CREDENTIALS": remote], httpClient: .shared)
        } throws: {
            "\($0)".contains("token_uri")
        }
        // Nothing at all: the error names every way to give credentials.
        #expect(ApplicationDefaultCredentials.whatToSet.contains("gcloud auth application-default login"))
        #expect(
            ApplicationDefaultCredentials.whatToSet.contains("GOOGLE_APPLICATION_CREDENTIALS")
                && ApplicationDefaultCredentials.whatToSet.contains("metadata server"))
    }
}
