import Foundation
import HeraldHTTPClient
import NIOCore
import NIOHTTP1
import Supervision

/// Google's Firestore emulator (Java), started on a port: by `herald dev --firestore google` (with
/// `--functions_emulator` at the local cloud, so it sends each write's event there, and stopped with it)
/// and by the tests, which use it as the oracle. Java is started directly, as the gcloud launcher script
/// would: the script does not `exec` it, and stopping the script would leave Java running.
public struct GoogleEmulatorLauncher: Sendable {
    public let jar: String
    public let port: Int

    public init(jar: String, port: Int) {
        self.jar = jar
        self.port = port
    }

    public static let candidates = [
        "/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator/cloud-firestore-emulator.jar",
        "/usr/share/google-cloud-sdk/platform/cloud-firestore-emulator/cloud-firestore-emulator.jar",
        NSHomeDirectory() + "/google-cloud-sdk/platform/cloud-firestore-emulator/cloud-firestore-emulator.jar",
    ]

    /// Java on `port`, with more of the emulator's own `arguments`; not yet serving.
    public func launch(arguments: [String] = []) async throws -> ChildProcess {
        try await ChildProcess.start(
            "/usr/bin/env",
            arguments: [
                "java", "-Duser.language=en", "-cp", jar, "com.google.cloud.datastore.emulator.firestore.CloudFirestore", "start",
                "--host=127.0.0.1", "--port=\(port)",
            ] + arguments,
            output: .discarded)
    }

    /// Until the emulator answers on `port` (false after 60 s, or once `process` ended). Only its own
    /// answer counts: while Java starts (seconds), another server can take the port, and its answers
    /// must not be taken for the emulator's.
    public static func waitUntilServing(port: Int, process: ChildProcess) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline, !process.hasExited {
            let answer = try? await HTTPTransport.shared.execute(HTTPRequest(url: "http://127.0.0.1:\(port)/"), timeout: .seconds(2))
            if let answer, answer.status == .ok, String(buffer: answer.body).hasPrefix("Ok") { return true }
            try? await Task.sleep(for: .milliseconds(200))
        }
        return false
    }
}
