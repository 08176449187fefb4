import Foundation
import HeraldRuntime
import LocalCloud
import Supervision

#if canImport(Glibc)
import Glibc
#endif

/// Google's own Firestore emulator (Java), used as the oracle for Firestore's wire format and semantics.
/// Present on Herald's build machines, absent elsewhere: tests that need it skip with a message then.
public enum GoogleFirestoreEmulator {
    public static let launcher = "/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator/cloud_firestore_emulator"
    static let jar = GoogleEmulatorLauncher.candidates[0]

    public static var isInstalled: Bool { FileManager.default.fileExists(atPath: jar) }

    /// Starts the emulator on a free port, waits until it answers, runs `body` with its `HOST:PORT`,
    /// and stops it. One emulator runs at a time: each is a JVM, and these machines have 2 cores.
    /// `arguments`: more of the emulator's own (`--functions_emulator=HOST:PORT`).
    public static func run<T>(arguments: [String] = [], _ body: (String) async throws -> T) async throws -> T {
        try await takingTurn { try await startAndRun(arguments: arguments, body) }
    }

    /// Runs `body` while no other test runs an emulator (for a test that starts one its own way).
    public static func takingTurn<T>(_ body: () async throws -> T) async throws -> T {
        await EmulatorTurn.shared.acquire()
        do {
            let result = try await body()
            await EmulatorTurn.shared.release()
            return result
        } catch {
            await EmulatorTurn.shared.release()
            throw error
        }
    }

    static func startAndRun<T>(arguments: [String], _ body: (String) async throws -> T) async throws -> T {
        for _ in 0..<3 {
            let port = try freePort()
            let process = try await GoogleEmulatorLauncher(jar: jar, port: port).launch(arguments: arguments)
            // The port is free when chosen, not when Java binds it: if another process took it, ours exits.
            guard await GoogleEmulatorLauncher.waitUntilServing(port: port, process: process), !process.hasExited else {
                await process.stop()
                continue
            }
            let result: Result<T, any Error>
            do { result = .success(try await body("127.0.0.1:\(port)")) } catch { result = .failure(error) }
            await process.stop()
            return try result.get()
        }
        throw RawHTTPError("Google's Firestore emulator did not start")
    }

    public static func freePort() throws -> Int { try freeLoopbackPort() }
}

/// Hands out turns at running the emulator, first come first served.
actor EmulatorTurn {
    static let shared = EmulatorTurn()
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func acquire() async {
        if !busy {
            busy = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func release() {
        if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
    }
}
