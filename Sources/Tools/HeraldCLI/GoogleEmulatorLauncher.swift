import Foundation
import HeraldRuntime
import LocalCloud
import Supervision

/// `herald dev --firestore google`: Google's emulator on a free port, sending its events to herald dev.
extension GoogleEmulatorLauncher {
    /// The installed emulator and a free port for it; an error naming what to install when there is none.
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
        let process = try await launch(arguments: ["--functions_emulator=\(functionsHost)"])
        if await Self.waitUntilServing(port: port, process: process) { return process }
        await process.stop()
        throw Missing(description: "--firestore google: Google's Firestore emulator did not start on \(host) within 60 s (is java installed?)")
    }
}
