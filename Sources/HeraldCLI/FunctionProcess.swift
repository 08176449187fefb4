import AsyncHTTPClient
import Foundation
import FirestoreModel
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One function running as its own process (`herald function NAME serve`), as Cloud Run would run
/// its container; its JSON log lines are turned into the live log. A process that dies (a crash, a
/// SIGKILL) is started again on the same port, as Cloud Run starts a new instance.
final class FunctionProcess: Sendable {
    let name: String
    let port: Int
    let executable: URL
    let environment: [String: String]
    let printLine: @Sendable (String) -> Void
    let buffer = Mutex("")
    let state = Mutex(State())

    struct State {
        var current: Process?
        var stopping = false
        var restarts = 0
        /// Deaths in a row within a second of starting: each one doubles the wait before the next start.
        var quickDeaths = 0
        var startedAt = ContinuousClock.now
    }

    init(name: String, port: Int, executable: URL, environment: [String: String], printLine: @escaping @Sendable (String) -> Void) throws {
        self.name = name
        self.port = port
        self.executable = executable
        self.environment = environment
        self.printLine = printLine
        try launch()
    }

    var process: Process? { state.withLock { $0.current } }
    var restarts: Int { state.withLock { $0.restarts } }

    private func launch() throws {
        let process = Process()
        process.executableURL = executable
        process.arguments = ["function", name, "serve", "--host", "127.0.0.1", "--port", String(port)]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self else { return }
            if data.isEmpty {
                handle.readabilityHandler = nil
                return
            }
            self.consume(String(decoding: data, as: UTF8.self))
        }
        process.terminationHandler = { [weak self] ended in self?.ended(ended) }
        let started = try state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            try process.run()
            state.current = process
            state.startedAt = .now
            return true
        }
        if !started { try? pipe.fileHandleForWriting.close() }
    }

    private func ended(_ process: Process) {
        let delay: Duration? = state.withLock { state in
            guard !state.stopping, state.current === process else { return nil }
            state.quickDeaths = ContinuousClock.now - state.startedAt < .seconds(1) ? state.quickDeaths + 1 : 0
            state.restarts += 1
            return .milliseconds(100) * (1 << min(state.quickDeaths, 7))
        }
        guard let delay else { return }
        let how = process.terminationReason == .uncaughtSignal ? "was killed by signal \(process.terminationStatus)" : "exited with status \(process.terminationStatus)"
        printLine("\(name.padding(toLength: 17, withPad: " ", startingAt: 0)) \(how); starting it again, as Cloud Run starts a new instance")
        Task {
            try? await Task.sleep(for: delay)
            do { try self.launch() } catch { self.printLine("\(self.name): cannot start again: \(error)") }
        }
    }

    func consume(_ text: String) {
        let lines: [String] = buffer.withLock { pending in
            pending += text
            var complete = pending.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            pending = complete.removeLast()
            return complete
        }
        for line in lines where !line.isEmpty { printLine(Self.describe(line, function: name)) }
    }

    /// A function's Cloud Logging JSON line as one readable line: `function  message  (event …)`.
    static func describe(_ line: String, function: String) -> String {
        guard let json = try? JSONValue(parsing: line), let message = json["message"]?.stringValue else { return "\(function): \(line)" }
        let severity = json["severity"]?.stringValue ?? "INFO"
        let event = json["eventId"]?.stringValue ?? json["event_id"]?.stringValue
        let level = severity == "INFO" ? "" : "\(severity) "
        return "\(function.padding(toLength: 17, withPad: " ", startingAt: 0)) \(level)\(message)\(event.map { "  (event \($0.prefix(8)))" } ?? "")"
    }

    /// Waits until `GET /healthz` answers, or the process dies, or 30 s pass.
    func waitUntilHealthy() async -> Bool {
        for _ in 0..<300 {
            guard let process, !process.hasExited else { return false }
            if let response = try? await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/healthz"), timeout: .seconds(1)),
               response.status == .ok {
                return true
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    /// SIGTERM, as Cloud Run stops a container; SIGKILL after 10 s. No restart after this.
    func stop() async {
        let process = state.withLock { state in
            state.stopping = true
            return state.current
        }
        guard let process, !process.hasExited else { return }
        kill(process.processIdentifier, SIGTERM)
        for _ in 0..<100 where !process.hasExited { try? await Task.sleep(for: .milliseconds(100)) }
        guard !process.hasExited else { return }
        kill(process.processIdentifier, SIGKILL)
        for _ in 0..<50 where !process.hasExited { try? await Task.sleep(for: .milliseconds(100)) }
    }
}

extension Process {
    /// Whether the child has exited, asked of the kernel (`waitid` with WNOWAIT, so Foundation can still
    /// reap it). Foundation on Linux sometimes never notices a child's exit: `isRunning` then stays true
    /// and `waitUntilExit` never returns, and `herald dev` hung at Ctrl-C about one time in twelve with
    /// every function already stopped.
    var hasExited: Bool {
        var info = siginfo_t()
        // ECHILD: Foundation has reaped it already, so it knows.
        guard waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOWAIT | WNOHANG) == 0 else { return !isRunning }
        return info._sifields._sigchld.si_pid != 0
    }
}

struct DevError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
