import Foundation
import HeraldHTTPClient
import HeraldRuntime
import Supervision

/// `herald dev --firestore google`: Google's Firestore emulator, started by `herald dev` on a free port
/// with `--functions_emulator` at the local cloud (so it sends each write's event there), and stopped
/// with it. Java is started directly, as the gcloud launcher script would: the script does not `exec`
/// it, and stopping the script would leave Java running.
struct GoogleEmulatorLauncher: Sendable {
    let jar: String
    let port: Int

    static let candidates = [
        "/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator/cloud-firestore-emulator.jar",
        "/usr/share/google-cloud-sdk/platform/cloud-firestore-emulator/cloud-firestore-emulator.jar",
        NSHomeDirectory() + "/google-cloud-sdk/platform/cloud-firestore-emulator/cloud-firestore-emulator.jar",
    ]

    /// The installed emulator and a port for it; nil with what to install when there is none.
    static func find(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> GoogleEmulatorLauncher {
        let jar = ([environment["HERALD_FIRESTORE_EMULATOR_JAR"]].compactMap { $0 } + candidates).first { FileManager.default.fileExists(atPath: $0) }
        guard let jar else {
            throw Missing(
                description:
                    "--firestore google: Google's Firestore emulator is not installed (gcloud components install cloud-firestore-emulator, "
                    + "or apt-get install google-cloud-cli-firestore-emulator; or set HERALD_FIRESTORE_EMULATOR_JAR)")
        }
        return GoogleEmulatorLauncher(jar: jar, port: try freeLoopbackPort())
    }

    struct Missing: Error, CustomStringConvertible { let description: String }

    var host: String { "127.0.0.1:\(port)" }

    /// Starts it sending events to `functionsHost`, and waits until it answers (a JVM: seconds).
    func start(functionsHost: String) async throws -> ChildProcess {
        let process = try await ChildProcess.start(
            "/usr/bin/env",
            arguments: [
                "java", "-Duser.language=en", "-cp", jar, "com.google.cloud.datastore.emulator.firestore.CloudFirestore", "start",
                "--host=127.0.0.1", "--port=\(port)", "--functions_emulator=\(functionsHost)",
            ],
            output: .discarded)
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline, !process.hasExited {
            if (try? await HTTPTransport.shared.execute(HTTPRequest(url: "http://\(host)/"), timeout: .seconds(2))) != nil { return process }
            try await Task.sleep(for: .milliseconds(200))
        }
        await process.stop()
        throw Missing(description: "--firestore google: Google's Firestore emulator did not start on \(host) within 60 s (is java installed?)")
    }
}
