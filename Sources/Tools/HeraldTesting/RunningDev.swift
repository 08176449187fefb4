import AsyncHTTPClient
import FirestoreModel
import Foundation
import GoogleClients
import HeraldHTTPClient
import Supervision
import WireFormats

/// `herald dev --ephemeral --port 0` running in the background, its output in a file.
public final class RunningDev: Sendable {
    public let process: ChildProcess
    public let log: URL
    /// The local cloud's URL (`http://127.0.0.1:PORT`).
    public let base: String
    /// The data directory made for this run (removed with the log), if the test gave none.
    let scratch: URL?
    /// How a function reaches its Expo and APNs stand-ins (`GET /herald/push-services`).
    public let pushServiceEnvironment: [String: String]

    init(process: ChildProcess, log: URL, base: String, scratch: URL?, pushServiceEnvironment: [String: String] = [:]) {
        self.pushServiceEnvironment = pushServiceEnvironment
        self.process = process
        self.log = log
        self.base = base
        self.scratch = scratch
    }

    /// - ephemeral: fresh state in a directory of its own, removed at the end (else pass `--data DIR`
    ///   in `arguments`). The directory holds the run's shared test key: `--ephemeral` would make a
    ///   key of its own, seconds of CPU in a debug build, times every test that starts one.
    /// - herald: the executable (another build's, for a test that builds one of its own).
    public static func start(
        _ arguments: [String], environment: [String: String] = [:], ephemeral: Bool = true, herald: URL = TestPaths.executable("herald")
    ) async throws -> RunningDev {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("herald-dev-\(UUID().uuidString).log")
        var scratch: URL?
        if ephemeral {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-dev-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let key = directory.appendingPathComponent("local-key.pem")
            guard FileManager.default.createFile(atPath: key.path, contents: Data(try await TestKeys.rsaPEM().utf8), attributes: [.posixPermissions: 0o600])
            else { throw DevDidNotStart(output: "cannot write \(key.path)") }
            scratch = directory
        }
        let process = try await ChildProcess.start(
            herald.path,
            arguments: ["dev"] + (scratch.map { ["--data", $0.path] } ?? []) + ["--port", "0", "--project", "e2e"] + arguments,
            environment: ProcessInfo.processInfo.environment.merging(environment) { _, new in new }, output: .file(log.path))
        let dev = RunningDev(process: process, log: log, base: "", scratch: scratch)
        // Generous: with Google's emulator as the store, its first answers can take long on a busy machine.
        let deadline = ContinuousClock.now + .seconds(180)
        while !process.hasExited, ContinuousClock.now < deadline {
            let text = dev.output
            if let base = address(inOutput: text) {
                let services = try? JSONValue(parsing: Array(try await HTTPClient.shared.get("\(base)/herald/push-services").body.utf8))
                let environment = (services?["environment"]?.objectValue ?? [:]).compactMapValues(\.stringValue)
                return RunningDev(process: process, log: log, base: base, scratch: scratch, pushServiceEnvironment: environment)
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        let said = dev.output
        dev.kill()
        throw DevDidNotStart(output: said)
    }

    /// The local cloud's address from `herald dev`'s banner, once the banner is whole (its last line
    /// says how to stop it); nil before.
    public static func address(inOutput text: String) -> String? {
        guard text.contains("Stop: Ctrl-C"), let range = text.range(of: #"Herald local cloud on (http://[0-9.:]+)"#, options: .regularExpression)
        else { return nil }
        return String(text[range].dropFirst("Herald local cloud on ".count))
    }

    public struct DevDidNotStart: Error, CustomStringConvertible {
        let output: String
        public var description: String { "herald dev did not come up: \(output.suffix(2000))" }
    }

    public var output: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    /// Waits until herald dev's output holds every one of `texts` (a line it logs once something has
    /// happened); false if it still did not at `timeout`.
    @discardableResult
    public func waitForOutput(containing texts: String..., timeout: Duration = .seconds(30)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            let output = self.output
            if texts.allSatisfy({ output.contains($0) }) { return true }
            guard ContinuousClock.now < deadline, (try? await Task.sleep(for: .milliseconds(100))) != nil else { return false }
        }
    }

    /// Until no delivery is pending for a moment (a function's writes make new events): the local cloud's
    /// own wait, asked for a few seconds at a time so no answer is long in coming.
    public func waitUntilIdle(timeout: Duration = .seconds(30)) async throws {
        let deadline = ContinuousClock.now + timeout
        while true {
            let left = (deadline - ContinuousClock.now).components
            let seconds = min(5, max(0, Double(left.seconds) + Double(left.attoseconds) / 1e18))
            let answer = try await HTTPClient.shared.post("\(base)/herald/idle?timeoutSeconds=\(seconds)", body: [], timeout: .seconds(20))
            if answer.status == 200 { return }
            guard ContinuousClock.now < deadline else { throw StillBusy(description: "deliveries still pending after \(timeout)") }
        }
    }

    /// Pauses Cloud Scheduler's jobs, so only the test runs them (`POST …/jobs/NAME:run` still does).
    public func pauseJobs() async throws {
        let jobs = try JSONValue(parsing: Array(try await HTTPClient.shared.get("\(base)/herald/scheduler/jobs").body.utf8))["jobs"]?.arrayValue ?? []
        for job in jobs {
            guard case .object(var members) = job else { continue }
            members["paused"] = true
            let answer = try await HTTPClient.shared.post(
                "\(base)/herald/scheduler/jobs", headers: ["content-type": "application/json"],
                body: Array(JSONValue.object(members).serialized().utf8))
            guard answer.status == 200 else { throw StillBusy(description: "cannot pause \(job): \(answer.body)") }
        }
    }

    /// A Firestore client for the app's own writes (as a chat client would make them, emulator-style).
    public var app: FirestoreClient {
        FirestoreClient(project: "e2e", endpoint: base, credentials: EmulatorCredentials(), httpClient: .shared, userAgent: "herald-test-app")
    }

    /// Sets the faults the local cloud injects on Herald's calls to Google (`PUT /herald/faults`).
    public func setFaults(_ plan: JSONValue) async throws {
        let answer = try await HTTPClient.shared.post(
            "\(base)/herald/faults", headers: ["content-type": "application/json"], body: Array(plan.serialized().utf8))
        guard answer.status == 200 else { throw StillBusy(description: "cannot set faults: \(answer.body)") }
    }

    public func pushes() async throws -> [JSONValue] { try await Self.pushes(at: base) }

    /// What the FCM, Expo and APNs stand-ins of the local cloud at `base` recorded, in that order, each in
    /// the FCM sink's shape (`DevicePush.fcmShaped`).
    public static func pushes(at base: String) async throws -> [JSONValue] {
        try await DevicePush.all(at: base).map(\.fcmShaped)
    }

    /// The deliveries in `state` (`pending`, `in_flight`, `dead`, `delivered`).
    public func deliveries(state: String) async throws -> [JSONValue] {
        try JSONValue(parsing: Array(try await HTTPClient.shared.get("\(base)/herald/deliveries?state=\(state)").body.utf8))["deliveries"]?.arrayValue ?? []
    }

    public func deadLetters() async throws -> [JSONValue] {
        try JSONValue(parsing: Array(try await HTTPClient.shared.get("\(base)/herald/deliveries?state=dead").body.utf8))["deliveries"]?.arrayValue ?? []
    }

    /// Ctrl-C, and the exit status (-1 if it is still running 30 s later).
    public func stop() async throws -> Int32 {
        process.signal(SIGINT)
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if let ended = process.termination {
                if let scratch { try? FileManager.default.removeItem(at: scratch) }
                return ended.code
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        return -1
    }

    public func kill() {
        process.signal(SIGKILL)
        try? FileManager.default.removeItem(at: log)
        if let scratch { try? FileManager.default.removeItem(at: scratch) }
    }
}

public struct StillBusy: Error, CustomStringConvertible {
    public var description: String
    public init(description: String) { self.description = description }
}
