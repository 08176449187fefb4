import AsyncHTTPClient
import ChatDemo
import ChatFunctions
import FirestoreModel
import Foundation
import Glibc
import GoogleClients
import HeraldHTTPClient
import HeraldRuntime
import HeraldTesting
import Supervision
import Testing
import WireFormats

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
        ].merging(dev.pushServiceEnvironment) { _, new in new }
    }

    /// A message written to `herald dev` reaches the function at its URL and its pushes are recorded.
    func checkMessageFlows(through dev: RunningDev) async throws {
        let db = FirestoreClient(project: "e2e", endpoint: dev.base, credentials: EmulatorCredentials(), httpClient: .shared)
        let world = DemoWorld(schema: Schema.presets["default"]!, project: "e2e")
        _ = try await db.commit([try world.message(from: "alice", in: "family", text: "Dinner at 6pm", id: "m1", at: Timestamp.now())])
        try await dev.waitUntilIdle()
        let tokens = try await dev.pushes().compactMap { $0["message"]?["token"]?.stringValue }.sorted()
        #expect(tokens == [DemoWorld.bobsIPad, DemoWorld.carolsPhone, "tok-bob-phone"], "\(dev.output.suffix(1500))")
        let deadLetters = try await dev.deadLetters()
        #expect(deadLetters.isEmpty, "\(deadLetters)")
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
        let buildah = Self.buildahPath
        if buildah != nil, ProcessInfo.processInfo.environment["HERALD_BUILD_IMAGE"] == "1" {
            let build = try await ProcessRunner.run(TestPaths.packageRoot.appendingPathComponent("Infra/build-images.sh"), ["--from-host", "onMessageCreated"])
            #expect(build.status == 0, "Infra/build-images.sh --from-host failed:\n\(build.stderr.suffix(3000))")
        }
        guard let buildah, try await Self.buildah(buildah, ["inspect", "--type", "image", Self.image]).status == 0 else {
            try skipTest(
                "no buildah or no \(Self.image) image here. "
                    + "Build it with Infra/build-images.sh --from-host onMessageCreated, or run with HERALD_BUILD_IMAGE=1 to build it first "
                    + "(a release build: too long for CI).")
        }
        let port = try freeLoopbackPort()
        let dev = try await RunningDev.start(["--seed", "demo", "--function", "onMessageCreated=http://127.0.0.1:\(port)/"])
        defer { dev.kill() }
        let started = Date()
        let container = try await Container.start(Self.image, buildah: buildah, environment: environment(dev: dev, port: port))
        var failure: (any Error)?
        do {
            let healthy = try await Self.waitUntilHealthy(port: port)
            #expect(healthy != nil, "the container did not answer /healthz")
            if let healthy { print("container cold start (buildah run → first /healthz 200): \(Int(healthy.timeIntervalSince(started) * 1000)) ms") }
            try await checkMessageFlows(through: dev)
        } catch { failure = error }
        await container.remove()
        if let failure { throw failure }
    }

    /// Every function's image, each in its own container, serve one `herald dev` as Cloud Run would serve
    /// Google: a message (onMessageCreated's pushes), a read (onReadReceipt clears the reader's count
    /// and badge), a phone that changes accounts (tokenCleanup moves the token), and the presence
    /// job (presenceSweeper answers the scheduler). Needs buildah and the images `Benchmarks/run.sh` or
    /// `Infra/build-images.sh --from-host` builds; says so and stops when they are missing.
    @Test func everyFunctionsImageServesHeraldDev() async throws {
        let names = ["onMessageCreated", "onReadReceipt", "tokenCleanup", "presenceSweeper"]
        let images = names.map { "localhost/herald-\($0.lowercased()):latest" }
        var missing: [String] = []
        if let buildah = Self.buildahPath {
            for image in images where try await Self.buildah(buildah, ["inspect", "--type", "image", image]).status != 0 { missing.append(image) }
        }
        guard let buildah = Self.buildahPath, missing.isEmpty else {
            try skipTest("no buildah, or no image \(missing.joined(separator: ", ")) here: build them with Infra/build-images.sh --from-host")
        }
        let ports = try names.map { _ in try freeLoopbackPort() }
        // The seed's user documents fire tokenCleanup before its container is up (the containers start one
        // after another): as Eventarc keeps retrying while a service deploys, herald dev retries long
        // enough here (1 + 2 + 4 + … up to 30 s: about two and a half minutes) instead of its default five attempts in 15 s.
        let dev = try await RunningDev.start(
            ["--seed", "demo", "--max-attempts", "10", "--max-backoff", "30"] + zip(names, ports).flatMap { ["--function", "\($0)=http://127.0.0.1:\($1)/"] })
        defer { dev.kill() }
        try await dev.pauseJobs()
        var containers: [Container] = []
        var failure: (any Error)?
        do {
            for (image, port) in zip(images, ports) {
                containers.append(try await Container.start(image, buildah: buildah, environment: environment(dev: dev, port: port)))
                #expect(try await Self.waitUntilHealthy(port: port) != nil, "\(image) did not answer /healthz")
            }
            try await checkMessageFlows(through: dev)
            let db = dev.app
            let world = DemoWorld(schema: Schema.presets["default"]!, project: "e2e")
            let (parent, query) = try world.messagesQuery(in: "family")
            _ = try await db.commit(world.reads(by: "bob", of: try await db.runQuery(query, parent: parent)))
            try await dev.waitUntilIdle()
            let schema = world.schema
            let family = try #require(try await db.get(try db.name("\(schema.conversationCollection)/family")))
            #expect(family[schema.unreadCountField]?.mapValue?["bob"] == .integer(0), "\(dev.output.suffix(1500))")
            #expect(try await db.storedBadge(of: "bob", schema: schema) == .integer(0))
            _ = try await db.commit([try world.signIn("carol", onDeviceWith: "tok-alice-phone")])
            try await dev.waitUntilIdle()
            let alice = try #require(try await db.get(try db.name("\(schema.userCollection)/alice")))
            #expect(TokensOf(schema: schema).of(alice).isEmpty, "the phone left Alice")
            let sweep = try await HTTPClient.shared.post("\(dev.base)/herald/scheduler/jobs/presence-sweep:run", headers: [:], body: [])
            #expect(sweep.body.contains("\"status\":200"), "\(sweep.body)")
            try await dev.waitUntilIdle()
            #expect(try await dev.deadLetters().isEmpty)
        } catch { failure = error }
        for container in containers { await container.remove() }
        if let failure { throw failure }
    }

    static var buildahPath: String? { ["/usr/bin/buildah", "/usr/local/bin/buildah"].first { FileManager.default.isExecutableFile(atPath: $0) } }

    /// A container from an image, serving under `buildah run` until removed.
    struct Container {
        let buildah: String
        let name: String
        let run: ChildProcess

        static func start(_ image: String, buildah: String, environment: [String: String]) async throws -> Container {
            let created = try await RemoteFunctionTests.buildah(buildah, ["from", image])
            let name = created.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
            guard created.status == 0, !name.isEmpty else { throw ContainerError(description: "buildah from \(image): \(created.stderr)") }
            let env = environment.sorted { $0.key < $1.key }.flatMap { ["--env", "\($0.key)=\($0.value)"] }
            _ = try await RemoteFunctionTests.buildah(buildah, ["config"] + env + [name])
            let run = try await ChildProcess.start(
                buildah,
                arguments: ["--storage-driver", "vfs", "run", "--isolation", "chroot", name, "--", "/usr/local/bin/app", "serve", "--host", "127.0.0.1"],
                output: .discarded)
            return Container(buildah: buildah, name: name, run: run)
        }

        /// Stopped and gone before it is removed (removing it under `buildah run` makes buildah panic).
        func remove() async {
            await run.stop()
            _ = try? await RemoteFunctionTests.buildah(buildah, ["rm", name])
        }
    }

    struct ContainerError: Error, CustomStringConvertible { let description: String }

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
