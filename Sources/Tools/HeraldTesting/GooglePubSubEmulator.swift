import Foundation
import HeraldHTTPClient
import HeraldRuntime
import NIOCore
import NIOHTTP1
import Supervision

/// Google's Pub/Sub emulator (Java, installed with gcloud), for the tests of what Herald does with
/// Pub/Sub (the dead letters). Absent elsewhere: tests that need it skip with a message then.
public enum GooglePubSubEmulator {
    public static let launcher = "/usr/lib/google-cloud-sdk/platform/pubsub-emulator/bin/cloud-pubsub-emulator"

    public static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: launcher) }

    /// Starts the emulator on a free port, waits until it answers, runs `body` with its `HOST:PORT`, and stops it.
    public static func run<T>(_ body: (String) async throws -> T) async throws -> T {
        for _ in 0..<3 {
            let port = try freeLoopbackPort()
            // The launcher script `exec`s Java, so stopping it stops the emulator.
            let process = try await ChildProcess.start(launcher, arguments: ["--host=127.0.0.1", "--port=\(port)"], output: .discarded)
            guard await waitUntilServing(port: port, process: process) else {
                await process.stop()
                continue
            }
            let result: Result<T, any Error>
            do { result = .success(try await body("127.0.0.1:\(port)")) } catch { result = .failure(error) }
            await process.stop()
            return try result.get()
        }
        throw RawHTTPError("Google's Pub/Sub emulator did not start")
    }

    static func waitUntilServing(port: Int, process: ChildProcess) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline, !process.hasExited {
            let answer = try? await HTTPTransport.shared.execute(HTTPRequest(url: "http://127.0.0.1:\(port)/v1/projects/probe/topics"), timeout: .seconds(2))
            if let answer, answer.status == .ok, String(buffer: answer.body).contains("{") { return true }
            try? await Task.sleep(for: .milliseconds(200))
        }
        return false
    }
}
