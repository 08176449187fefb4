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
import WireFormats

/// What deploys is what is tested: onMessageCreated's release build (the build the images carry,
/// Infra/link/swift-build-release, cached in .build-release), put in an image's root file system by
/// Infra/image/rootfs.sh, and run from that root (chroot, as the image's user 10001) against `herald dev`
/// reached over TLS with a certificate authority of the test's own, added to the image's bundle. An
/// event is applied and pushed: the image's certificates, BoringSSL's RSA (identity tokens are verified with
/// it) and time zones are what it ran on. Without its certificates, the image refuses the connection.
@Suite(.serialized) struct ImageRootTests {
    static let scratch = TestPaths.packageRoot.appendingPathComponent(".build-release")

    /// The release build of one function (incremental: seconds when nothing changed; the first one
    /// compiles every dependency in release mode).
    static func releaseBuild(_ product: String) async throws -> URL {
        let build = try await ProcessRunner.run(
            TestPaths.packageRoot.appendingPathComponent("Infra/link/swift-build-release"), [product, "--scratch-path", scratch.path])
        #expect(build.status == 0, "the release build failed: \(build.stderr.suffix(3000))")
        return scratch.appendingPathComponent("release/\(product)")
    }

    /// The image's root file system, as Infra/Containerfile assembles it.
    static func root(of binary: URL, authority: TestCertificateAuthority?) async throws -> URL {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("herald-image-\(UUID().uuidString)")
        let made = try await ProcessRunner.run(
            URL(fileURLWithPath: "/bin/bash"), [TestPaths.packageRoot.appendingPathComponent("Infra/image/rootfs.sh").path, binary.path, root.path, "app"])
        #expect(made.status == 0, "rootfs.sh: \(made.stderr)")
        let bundle = root.appendingPathComponent("etc/ssl/certs/ca-certificates.crt")
        if let authority {
            let handle = try FileHandle(forWritingTo: bundle)
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(("\n" + authority.certificatePEM).utf8))
            try handle.close()
        } else {
            try FileManager.default.removeItem(at: bundle)
        }
        return root
    }

    /// Runs the image's executable from its own root as the image's user, with the image's environment.
    static func runFromRoot(_ root: URL, environment: [String: String]) async throws -> ChildProcess {
        try await ChildProcess.start(
            "/usr/sbin/chroot", arguments: ["--userspec=10001:10001", root.path, "/usr/local/bin/app", "serve"],
            environment: ["PATH": "/usr/local/bin", "PORT": "8080", "LOG_FORMAT": "json"].merging(environment) { _, new in new },
            output: .file(root.path + ".log"))
    }

    static func skipUnlessRoot() throws {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/sbin/chroot") else {
            try skipTest("chroot needs root: run the suite as root (CI does), or build and run the image with Infra/build-images.sh and podman")
        }
    }

    func environment(dev: RunningDev, proxy: Int, port: Int) -> [String: String] {
        let host = dev.base.replacingOccurrences(of: "http://", with: "")
        return [
            "GOOGLE_CLOUD_PROJECT": "e2e", "GCE_METADATA_HOST": host,
            "FIRESTORE_ENDPOINT": "https://127.0.0.1:\(proxy)", "FCM_ENDPOINT": "https://127.0.0.1:\(proxy)",
            "HERALD_REQUIRE_OIDC_AUDIENCE": "http://127.0.0.1:\(port)/", "HERALD_OIDC_JWKS_URL": "\(dev.base)/herald/oidc/jwks",
            "HERALD_ALLOWED_CALLERS": "herald-functions@e2e.iam.gserviceaccount.com", "PORT": String(port),
        ]
    }

    @Test func theReleaseImageRunsFromItsOwnRootAgainstHeraldDevOverTLS() async throws {
        try Self.skipUnlessRoot()
        let binary = try await Self.releaseBuild("onMessageCreated")
        let authority = try await TestCertificateAuthority.make()
        let root = try await Self.root(of: binary, authority: authority)
        defer { try? FileManager.default.removeItem(at: root) }
        let port = try freeLoopbackPort()
        let dev = try await RunningDev.start(["--seed", "demo", "--function", "onMessageCreated=http://127.0.0.1:\(port)/"])
        defer { dev.kill() }
        try await withTLSProxy(to: dev.base, authority: authority) { proxy in
            let function = try await Self.runFromRoot(root, environment: environment(dev: dev, proxy: proxy, port: port))
            defer { function.signal(SIGKILL) }
            #expect(try await RemoteFunctionTests.waitUntilHealthy(port: port) != nil, "\(Self.log(root))")
            let world = DemoWorld(schema: Schema.presets["default"]!, project: "e2e")
            // Erin keeps quiet hours all day in Pacific/Auckland: from the image's time zone database, her
            // device gets a badge-only push (an unknown zone would be warned about and alert her).
            _ = try await dev.app.commit([try world.message(from: "alice", in: "book-club", text: "Chapter 3 tonight", id: "m-image", at: Timestamp.now())])
            try await dev.waitUntilIdle()
            let pushes = try await dev.pushes().compactMap { $0["message"] }.filter { $0["data"]?["messageId"] == "m-image" }
            let tokens = pushes.compactMap { $0["token"]?.stringValue }.sorted()
            #expect(tokens.contains("tok-bob-phone") && tokens.contains("tok-erin-phone"), "\(tokens): \(Self.log(root))")
            let erin = pushes.first { $0["token"] == "tok-erin-phone" }
            #expect(erin?["notification"] == nil && erin?["data"]?["reason"] == "quiet-hours", "\(String(describing: erin))")
            #expect(try await dev.deadLetters().isEmpty)
            let log = Self.log(root)
            #expect(!log.contains("time zone") && !log.contains("RSA") && !log.contains("TLS failed"), "\(log)")
        }
    }

    @Test func withoutItsCertificatesTheImageRefusesTheConnection() async throws {
        try Self.skipUnlessRoot()
        let binary = try await Self.releaseBuild("onMessageCreated")
        let authority = try await TestCertificateAuthority.make()
        let root = try await Self.root(of: binary, authority: nil)
        defer { try? FileManager.default.removeItem(at: root) }
        let port = try freeLoopbackPort()
        let dev = try await RunningDev.start(["--seed", "demo", "--function", "onMessageCreated=http://127.0.0.1:\(port)/"])
        defer { dev.kill() }
        try await withTLSProxy(to: dev.base, authority: authority) { proxy in
            let function = try await Self.runFromRoot(root, environment: environment(dev: dev, proxy: proxy, port: port))
            defer { function.signal(SIGKILL) }
            #expect(try await RemoteFunctionTests.waitUntilHealthy(port: port) != nil, "\(Self.log(root))")
            let world = DemoWorld(schema: Schema.presets["default"]!, project: "e2e")
            _ = try await dev.app.commit([try world.message(from: "alice", in: "family", text: "Dinner at 6pm", id: "m-no-ca", at: Timestamp.now())])
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline, !Self.log(root).contains("TLS failed") { try await Task.sleep(for: .milliseconds(200)) }
            #expect(Self.log(root).contains("TLS failed"), "\(Self.log(root))")
            #expect(try await dev.pushes().isEmpty, "nothing reached Firestore or FCM without trusting it")
        }
    }

    static func log(_ root: URL) -> String { (try? String(contentsOfFile: root.path + ".log", encoding: .utf8)) ?? "" }
}
