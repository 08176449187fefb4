import AsyncHTTPClient
import ChatDemo
import ChatFunctions
import FirestoreModel
import Foundation
import Glibc
import GoogleClients
import HeraldRuntime
import HeraldTesting
import Supervision
import Testing

/// A function running outside `herald dev` (another process, or the container image), wired as
/// Infra/compose.yaml wires it: `herald dev --function NAME=URL` delivers to it with identity tokens,
/// and it reaches Firestore and FCM with tokens from the local cloud's metadata server.
@Suite(.serialized) struct RemoteFunctionTests {
    static let image = "localhost/herald-onmessagecreated:latest"

    func environment(dev: RunningDev, port: Int) -> [String: String] {
        let host = dev.base.replacingOccurrences(of: "http://", with: "")
        return [
            "GOOGLE_CLOUD_PROJECT": "e2e", "GCE_METADATA_HOST": host, "FIRESTORE_ENDPOINT": dev.base, "FCM_ENDPOINT": dev.base,
            "HERALD_REQUIRE_OIDC_AUDIENCE": "http://127.0.0.1:\(port)/", "HERALD_OIDC_JWKS_URL": "\(dev.base)/herald/oidc/jwks",
            "LOG_FORMAT": "json", "PORT": String(port),
        ]
    }

    /// A message written to `herald dev` reaches the function at its URL and its pushes are recorded.
    func checkMessageFlows(through dev: RunningDev) async throws {
        let db = FirestoreClient(project: "e2e", endpoint: dev.base, credentials: EmulatorCredentials(), httpClient: .shared)
        let world = DemoWorld(schema: Schema.presets["default"]!, project: "e2e")
        _ = try await db.commit([try world.message(from: "alice", in: "family", text: "Dinner at 6pm", id: "m1", at: Timestamp.now())])
        try await dev.waitUntilIdle()
        let tokens = try await dev.pushes().compactMap { $0["message"]?["token"]?.stringValue }.sorted()
        #expect(tokens == ["tok-bob-ipad", "tok-bob-phone", "tok-carol-phone"], "\(dev.output.suffix(1500))")
        #expect(try await dev.deadLetters().isEmpty)
    }

    @Test func aFunctionProcessElsewhereServesHeraldDev() async throws {
        let port = try freeLoopbackPort()
        let dev = try await RunningDev.start(["--seed", "demo", "--function", "onMessageCreated=http://127.0.0.1:\(port)/"])
        defer { dev.kill() }
        let function = try await ChildProcess.start(
            TestPaths.executable("onMessageCreated").path, arguments: ["serve", "--host", "127.0.0.1"],
            environment: ProcessInfo.processInfo.environment.merging(environment(dev: dev, port: port)) { _, new in new }, output: .discarded)
        defer { function.signal(SIGKILL) }
        #expect(try await Self.waitUntilHealthy(port: port) != nil)
        try await checkMessageFlows(through: dev)
        #expect(try await dev.stop() == 0)
    }

    /// onMessageCreated's image, as Infra/build-images.sh builds it (with HERALD_BUILD_IMAGE=1, this test builds it first), run
    /// with buildah (no container engine needed) against `herald dev`. Needs buildah and the image; says
    /// so loudly and stops when either is missing.
    @Test func theImageServesHeraldDev() async throws {
        let buildah = ["/usr/bin/buildah", "/usr/local/bin/buildah"].first { FileManager.default.isExecutableFile(atPath: $0) }
        if buildah != nil, ProcessInfo.processInfo.environment["HERALD_BUILD_IMAGE"] == "1" {
            let build = try await ProcessRunner.run(TestPaths.packageRoot.appendingPathComponent("Infra/build-images.sh"), ["--from-host", "onMessageCreated"])
            #expect(build.status == 0, "Infra/build-images.sh --from-host failed:\n\(build.stderr.suffix(3000))")
        }
        guard let buildah, try await Self.buildah(buildah, ["inspect", "--type", "image", Self.image]).status == 0 else {
            try skipTest(
                "no buildah or no \(Self.image) image here. "
                    + "Build it with Infra/build-images.sh --from-host onMessageCreated, or run with HERALD_BUILD_IMAGE=1 to build it first "
                    + "(a release build: too long for CI).")
            return
        }
        let port = try freeLoopbackPort()
        let dev = try await RunningDev.start(["--seed", "demo", "--function", "onMessageCreated=http://127.0.0.1:\(port)/"])
        defer { dev.kill() }
        let created = try await Self.buildah(buildah, ["from", Self.image])
        let container = created.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(created.status == 0 && !container.isEmpty, "\(created.stderr)")
        let env = environment(dev: dev, port: port).sorted { $0.key < $1.key }.flatMap { ["--env", "\($0.key)=\($0.value)"] }
        _ = try await Self.buildah(buildah, ["config"] + env + [container])
        let started = Date()
        let run = try await ChildProcess.start(
            buildah,
            arguments: ["--storage-driver", "vfs", "run", "--isolation", "chroot", container, "--", "/usr/local/bin/app", "serve", "--host", "127.0.0.1"],
            output: .discarded)
        var failure: (any Error)?
        do {
            let healthy = try await Self.waitUntilHealthy(port: port)
            #expect(healthy != nil, "the container did not answer /healthz")
            if let healthy { print("container cold start (buildah run → first /healthz 200): \(Int(healthy.timeIntervalSince(started) * 1000)) ms") }
            try await checkMessageFlows(through: dev)
        } catch { failure = error }
        // The container is stopped and gone before it is removed (removing it under `buildah run` makes buildah panic).
        await run.stop()
        _ = try await Self.buildah(buildah, ["rm", container])
        if let failure { throw failure }
    }

    static func buildah(_ path: String, _ arguments: [String]) async throws -> ProcessResult {
        try await ProcessRunner.run(URL(fileURLWithPath: path), ["--storage-driver", "vfs"] + arguments)
    }

    /// When `GET /healthz` first answered 200, or nil after 30 s.
    static func waitUntilHealthy(port: Int) async throws -> Date? {
        for _ in 0..<3000 {
            if let response = try? await HTTPClient.shared.get("http://127.0.0.1:\(port)/healthz"), response.status == 200 { return Date() }
            try await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }
}
