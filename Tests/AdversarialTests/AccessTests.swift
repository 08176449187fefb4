import AsyncHTTPClient
import ChatDemo
import FirestoreModel
import Foundation
import GoogleClients
import HeraldRuntime
import HeraldTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Who may call a function, and who may use `herald dev` on a developer's laptop.
@Suite struct AccessTests {
    /// Any Google-signed token for the service URL passed (any service account of any project can mint
    /// one). With HERALD_ALLOWED_CALLERS only the listed accounts get through.
    @Test func onlyAllowedCallersGetThrough() async throws {
        let port = try freeLoopbackPort()
        let dev = try await RunningDev.start([
            "--seed", "demo", "--no-functions", "--function", "onMessageCreated=http://127.0.0.1:\(port)/", "--max-attempts", "100",
        ])
        defer { dev.kill() }
        let world = DevWorld(dev: dev)
        func function(allowing callers: String) async throws -> FunctionUnderTest {
            try await FunctionUnderTest.start(
                "onMessageCreated",
                environment: dev.functionEnvironment().merging([
                    "HERALD_REQUIRE_OIDC_AUDIENCE": "http://127.0.0.1:\(port)/", "HERALD_OIDC_JWKS_URL": "\(dev.base)/herald/oidc/jwks",
                    "HERALD_ALLOWED_CALLERS": callers,
                ]) { _, new in new }, port: port)
        }
        let stranger = try await function(allowing: "eventarc-trigger@someone-else.iam.gserviceaccount.com")
        _ = try await world.message("m-callers")
        // herald dev signs as its own account, which this function does not allow.
        #expect(await dev.waitForOutput(containing: "→ onMessageCreated: 401"), "\(dev.output.suffix(1500))")
        #expect(stranger.output.contains("is not one of HERALD_ALLOWED_CALLERS"))
        #expect(try await world.pushedTokens().isEmpty)
        stranger.stop()
        // Allowed (case aside), the next attempt gets through.
        let allowed = try await function(allowing: "someone@else.example, HERALD-FUNCTIONS@e2e.iam.gserviceaccount.com")
        defer { allowed.stop() }
        try await dev.waitUntilIdle(timeout: .seconds(60))
        #expect(try await world.pushedTokens() == [DemoWorld.bobsIPad, DemoWorld.carolsPhone, "tok-bob-phone"], "\(allowed.output.suffix(1500))")
        // The metrics are behind the same check as events.
        let scraped = try await MetricsTests.scrape(allowed)
        #expect(scraped.status == 401, "\(scraped.text)")
    }

    /// `serve` on every interface with no identity check would run for anyone who reaches it.
    @Test func serveRefusesToStartOpenToTheNetwork() async throws {
        let documents = TestPaths.fixture("default/documents.json").path
        let refused = try await ProcessRunner.run(
            TestPaths.executable("onMessageCreated"), ["serve", "--host", "0.0.0.0", "--port", "0", "--documents", documents],
            environment: FunctionUnderTest.cleanEnvironment())
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("HERALD_REQUIRE_OIDC_AUDIENCE") && refused.stderr.contains("HERALD_ALLOW_UNAUTHENTICATED"), "\(refused.stderr)")
        // Said explicitly (Cloud Run IAM checks the callers), it starts.
        let open = try await FunctionUnderTest.start(
            "onMessageCreated", environment: ["HERALD_ALLOW_UNAUTHENTICATED": "1"],
            arguments: ["--host", "0.0.0.0", "--documents", documents])
        #expect(open.isRunning)
        open.stop()
        // The keys of identity tokens come over https only, but from a local cloud.
        let plain = try await ProcessRunner.run(
            TestPaths.executable("onMessageCreated"), ["serve", "--documents", documents],
            environment:
                FunctionUnderTest.cleanEnvironment().merging([
                    "HERALD_REQUIRE_OIDC_AUDIENCE": "https://x.run.app", "HERALD_OIDC_JWKS_URL": "http://keys.example/jwks",
                ]) { _, new in new })
        #expect(plain.status != 0 && plain.stderr.contains("HERALD_OIDC_JWKS_URL must be https"), "\(plain.stderr)")
        // An audience alone let in any Google-signed token for it, from any project: refused beyond loopback
        // unless any caller is meant (HERALD_ALLOWED_CALLERS=*).
        let audienceOnly = ["HERALD_REQUIRE_OIDC_AUDIENCE": "https://x.run.app"]
        let anyCaller = try await ProcessRunner.run(
            TestPaths.executable("onMessageCreated"), ["serve", "--host", "0.0.0.0", "--port", "0", "--documents", documents],
            environment: FunctionUnderTest.cleanEnvironment().merging(audienceOnly) { _, new in new })
        #expect(anyCaller.status != 0 && anyCaller.stderr.contains("set HERALD_ALLOWED_CALLERS"), "\(anyCaller.stderr)")
        let meant = try await FunctionUnderTest.start(
            "onMessageCreated", environment: audienceOnly.merging(["HERALD_ALLOWED_CALLERS": "*"]) { _, new in new },
            arguments: ["--host", "0.0.0.0", "--documents", documents])
        #expect(meant.isRunning)
        meant.stop()
    }

    /// Plain http to any host carried access tokens and signed assertions in clear: FIRESTORE_ENDPOINT,
    /// FCM_ENDPOINT and a key file's token_uri were taken as given. Now each is refused at start with one
    /// line naming it, unless it is this machine, the metadata server or the emulator.
    @Test func plainHTTPToAnotherHostIsRefusedAtStart() async throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("herald-key-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let key = try await TestKeys.serviceAccountKeyJSON(tokenURI: "http://oauth2.example.com/token")
        try Data(key.utf8).write(to: scratch)
        for (setting, environment) in [
            ("FIRESTORE_ENDPOINT", ["FIRESTORE_ENDPOINT": "http://firestore.example.com", "GCE_METADATA_HOST": "127.0.0.1:1"]),
            ("FCM_ENDPOINT", ["FCM_ENDPOINT": "http://fcm.example.com", "GCE_METADATA_HOST": "127.0.0.1:1"]),
            ("token_uri", ["GOOGLE_APPLICATION_CREDENTIALS": scratch.path]),
        ] {
            let refused = try await ProcessRunner.run(
                TestPaths.executable("onMessageCreated"), ["serve", "--host", "127.0.0.1", "--port", "0"],
                environment: FunctionUnderTest.cleanEnvironment().merging(["GOOGLE_CLOUD_PROJECT": "p"].merging(environment) { _, new in new }) { _, new in new
                })
            #expect(refused.status != 0, "\(setting): \(refused.stderr)")
            let line = refused.stderr.split(separator: "\n").first { $0.contains(setting) }
            #expect(line?.contains("must be https") == true && line?.contains("example.com") == true, "\(setting): \(refused.stderr)")
        }
        // The metadata server's host and loopback may be plain http (herald dev, a compose network).
        let policy = CleartextPolicy(environment: ["GCE_METADATA_HOST": "herald-dev:8787", "FIRESTORE_EMULATOR_HOST": "[::1]:8080"])
        for allowed in ["http://127.0.0.1:9/x", "http://localhost/x", "http://herald-dev:8787/v1", "https://fcm.googleapis.com", "http://169.254.169.254/"] {
            #expect(policy.problem(allowed, setting: "X") == nil, "\(allowed)")
        }
        for refused in ["http://10.0.0.2/", "http://firestore.googleapis.com/", "ftp://x/", "http://herald-dev.evil/"] {
            #expect(policy.problem(refused, setting: "X") != nil, "\(refused)")
        }
    }

    /// Any web page the developer opens could POST to `herald dev` (text/plain needs no preflight) and,
    /// through DNS rebinding, read it. A browser names the page on every POST (Fetch: `Origin` for any
    /// method but GET and HEAD; "null" when it will not say), so a page elsewhere is refused by its
    /// origin; the web SDK's own text/plain calls to Firestore come from pages on this machine, or from
    /// React Native, which sends no origin. Its keys were written readable by others for a moment.
    @Test func heraldDevRefusesWebPagesAndKeepsItsKeysPrivate() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("herald-private-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        let dev = try await RunningDev.start(["--data", data.path], ephemeral: false)
        defer { dev.kill() }
        let documents = "\(dev.base)/v1/projects/e2e/databases/(default)/documents/notes?documentId=n1"
        let body = Array(#"{"fields": {"x": {"integerValue": "1"}}}"#.utf8)
        for origin in ["https://attacker.example", "null", "http://192.168.1.20:8080"] {
            let plain = try await HTTPClient.shared.post(documents, headers: ["content-type": "text/plain", "origin": origin], body: body)
            #expect(plain.status == 403, "\(origin): \(plain.body)")
        }
        let trigger = try await HTTPClient.shared.post("\(dev.base)/herald/triggers", headers: ["content-type": "text/plain"], body: Array("{}".utf8))
        #expect(trigger.status == 415, "\(trigger.body)")
        let rebound = try await HTTPClient.shared.post(documents, headers: ["content-type": "application/json", "host": "attacker.example"], body: body)
        #expect(rebound.status == 403, "\(rebound.body)")
        let crossSite = try await HTTPClient.shared.post(
            documents, headers: ["content-type": "application/json", "origin": "https://attacker.example"], body: body)
        #expect(crossSite.status == 403, "\(crossSite.body)")
        #expect(try await dev.app.get(try DocumentName(project: "e2e", path: "notes/n1")) == nil)
        let own = try await HTTPClient.shared.post(documents, headers: ["content-type": "application/json", "origin": dev.base], body: body)
        #expect(own.status == 200, "\(own.body)")

        func mode(_ path: String) -> mode_t? {
            var info = stat()
            return stat(path, &info) == 0 ? info.st_mode & 0o777 : nil
        }
        #expect(mode(data.path) == 0o700)
        for file in ["local-key.pem", "service-account.json"] { #expect(mode(data.appendingPathComponent(file).path) == 0o600, "\(file)") }
        #expect(try await dev.stop() == 0)
    }
}
