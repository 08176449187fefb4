import AsyncHTTPClient
import FirestoreModel
import Foundation
import NIOCore
import NIOHTTP1
import Supervision
import Synchronization
import WireFormats

/// One function running as its own process (its own executable, `NAME serve`), as Cloud Run would run
/// its container; its JSON log lines are turned into the live log. A process that dies (a crash, a
/// SIGKILL) is started again on the same port, as Cloud Run starts a new instance.
final class FunctionProcess: Sendable {
    let name: String
    let port: Int
    let executable: String
    let environment: [String: String]
    let printLine: @Sendable (String) -> Void
    let state = Mutex(State())

    struct State {
        var current: ChildProcess?
        var stopping = false
        var restarts = 0
        /// Deaths in a row within a second of starting: each one doubles the wait before the next start.
        var quickDeaths = 0
        var startedAt = ContinuousClock.now
    }

    /// Takes each line of the function's own log (for the console's Logs) and says whether the
    /// terminal leaves it out (seeding's events, summed up in one line).
    let recordLine: @Sendable (String) -> Bool

    private init(
        name: String, port: Int, executable: String, environment: [String: String], printLine: @escaping @Sendable (String) -> Void,
        recordLine: @escaping @Sendable (String) -> Bool
    ) {
        self.recordLine = recordLine
        self.name = name
        self.port = port
        self.executable = executable
        self.environment = environment
        self.printLine = printLine
    }

    static func start(
        name: String, port: Int, executable: String, environment: [String: String],
        printLine: @escaping @Sendable (String) -> Void, recordLine: @escaping @Sendable (String) -> Bool = { _ in false }
    ) async throws -> FunctionProcess {
        let function = FunctionProcess(
            name: name, port: port, executable: executable, environment: environment, printLine: printLine, recordLine: recordLine)
        try await function.launch()
        return function
    }

    var process: ChildProcess? { state.withLock { $0.current } }
    var restarts: Int { state.withLock { $0.restarts } }

    private func launch() async throws {
        guard !state.withLock({ $0.stopping }) else { return }
        let child = try await ChildProcess.start(
            executable, arguments: ["serve", "--host", "127.0.0.1", "--port", String(port)],
            environment: ProcessInfo.processInfo.environment.merging(environment) { _, new in new },
            output: .lines { [name, printLine, recordLine] line in
                if !line.isEmpty, !recordLine(line) { printLine(Self.describe(line, function: name)) }
            })
        let kept = state.withLock { state in
            guard !state.stopping else { return false }
            state.current = child
            state.startedAt = .now
            return true
        }
        guard kept else {
            await child.stop()
            return
        }
        Task {
            let termination = await child.waitForExit()
            await self.ended(child, termination)
        }
    }

    private func ended(_ child: ChildProcess, _ termination: ChildProcess.Termination) async {
        let delay: Duration? = state.withLock { state in
            guard !state.stopping, state.current === child else { return nil }
            state.quickDeaths = ContinuousClock.now - state.startedAt < .seconds(1) ? state.quickDeaths + 1 : 0
            return .milliseconds(100) * (1 << min(state.quickDeaths, 7))
        }
        guard let delay else { return }
        try? await Task.sleep(for: delay)
        // Ctrl-C at a terminal reaches the whole process group: a function it stopped is not started
        // again once herald dev, which hears the same signal, is stopping too.
        let restarting = state.withLock { state in
            guard !state.stopping else { return false }
            state.restarts += 1
            return true
        }
        guard restarting else { return }
        printLine("\(name.padding(toLength: 17, withPad: " ", startingAt: 0)) \(termination); starting it again, as Cloud Run starts a new instance")
        do { try await launch() } catch { printLine("\(name): cannot start again: \(error)") }
    }

    /// A function's Cloud Logging JSON line as one readable line: `function  message  (event …)`.
    static func describe(_ line: String, function: String) -> String {
        guard let json = try? JSONValue(parsing: line), let message = json["message"]?.stringValue else { return "\(function): \(line)" }
        let severity = json["severity"]?.stringValue ?? "INFO"
        let event = json["eventId"]?.stringValue ?? json["event_id"]?.stringValue
        let level = severity == "INFO" ? "" : "\(severity) "
        return "\(function.padding(toLength: 17, withPad: " ", startingAt: 0)) \(level)\(message)\(event.map { "  (event \($0.prefix(8)))" } ?? "")"
    }

    /// Waits until `GET /healthz` answers from this process (its process id: a port another process
    /// took between the choice and the bind answers too, and its events would go to that process), or
    /// the process dies, or 30 s pass.
    func waitUntilHealthy() async -> Bool {
        for _ in 0..<300 {
            guard let process, !process.hasExited else { return false }
            if let response = try? await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/healthz"), timeout: .seconds(1)),
                response.status == .ok, let body = try? await response.body.collect(upTo: 4096)
            {
                // Another process's answer: this one fails to bind and exits, and is then started elsewhere.
                if (try? JSONValue(parsing: Array(body.readableBytesView)))?["pid"]?.int64Value == Int64(process.pid) { return true }
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    /// No restart from now on: herald dev is stopping (its functions are then stopped one by one).
    func markStopping() { state.withLock { $0.stopping = true } }

    /// SIGTERM, as Cloud Run stops a container; SIGKILL after 10 s. No restart after this.
    func stop() async {
        let child = state.withLock { state in
            state.stopping = true
            return state.current
        }
        await child?.stop(grace: .seconds(10))
    }
}

struct DevError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
