import Foundation
import Supervision
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A function executable started with `serve` on a free port, for tests of the real process
/// (signals, exit status, what it prints).
public final class ServingProcess: Sendable {
    public let child: ChildProcess
    public let port: Int
    let printed: Printed

    final class Printed: Sendable {
        let lines = Mutex<[String]>([])
        var text: String { lines.withLock { $0.map { $0 + "\n" }.joined() } }
    }

    init(child: ChildProcess, port: Int, printed: Printed) {
        self.child = child
        self.port = port
        self.printed = printed
    }

    /// Starts `NAME serve --port 0 …` (or without `--port` when `port` is nil, so `PORT` decides) and waits
    /// (30 s at most) for its "listening on" line to learn the port.
    /// `unprivileged`: as user 65534 without capabilities (through setpriv when the tests run as root),
    /// as a container runtime runs it.
    public static func start(
        _ name: String, arguments: [String], port requestedPort: Int? = 0, environment: [String: String] = [:], unprivileged: Bool = false
    ) async throws -> ServingProcess {
        var command = [TestPaths.executable(name).path, "serve", "--host", "127.0.0.1"] + (requestedPort.map { ["--port", String($0)] } ?? []) + arguments
        if unprivileged, getuid() == 0 {
            command = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--"] + command
        }
        return try await start(command: command, environment: environment.merging(["LOG_FORMAT": "json"]) { given, _ in given }, name: name)
    }

    /// Starts any server that prints "listening on HOST:PORT" once it serves (a helper script, say).
    public static func start(command: [String], environment: [String: String] = [:], name: String) async throws -> ServingProcess {
        let printed = Printed()
        var variables = ProcessInfo.processInfo.environment
        variables.merge(environment) { _, new in new }
        let child = try await ChildProcess.start(
            command[0], arguments: Array(command.dropFirst()), environment: variables,
            output: .lines { line in printed.lines.withLock { $0.append(line) } })
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline, !child.hasExited {
            let text = printed.text
            if let range = text.range(of: #"listening on [0-9.]+:([0-9]+)"#, options: .regularExpression),
                let port = Int(text[range].split(separator: ":").last ?? "")
            {
                return ServingProcess(child: child, port: port, printed: printed)
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        await child.stop(grace: .seconds(2))
        throw RawHTTPError("\(name) did not say it was listening; it printed: \(printed.text.suffix(2000))")
    }

    public func signal(_ signal: Int32) { child.signal(signal) }

    /// Waits for the process to exit and returns its status and everything it printed.
    public func waitForExit() async throws -> (status: Int32, output: String) {
        let termination = await child.waitForExit()
        return (termination.code, printed.text)
    }

    /// SIGTERM, and SIGKILL 10 s later if need be, in the background (for a `defer`).
    public func stop() {
        Task { [child] in await child.stop() }
    }
}
