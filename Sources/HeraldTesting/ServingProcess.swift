import Foundation

/// A function executable started with `serve` on a free port, for tests of the real process
/// (signals, exit status, what it prints).
public final class ServingProcess: @unchecked Sendable {
    public let process: Process
    public let port: Int
    let output: Pipe

    /// Starts `NAME serve --port 0 …` (or without `--port` when `port` is nil, so `PORT` decides) and waits
    /// for its "listening on" line to learn the port.
    public static func start(_ name: String, arguments: [String], port: Int? = 0, environment: [String: String] = [:]) async throws -> ServingProcess {
        try await offThePool { try ServingProcess(name, arguments: arguments, port: port, environment: environment) }
    }

    init(_ name: String, arguments: [String], port requestedPort: Int? = 0, environment: [String: String] = [:]) throws {
        process = Process()
        process.executableURL = TestPaths.executable(name)
        process.arguments = ["serve", "--host", "127.0.0.1"] + (requestedPort.map { ["--port", String($0)] } ?? []) + arguments
        var env = ProcessInfo.processInfo.environment
        env["LOG_FORMAT"] = "json"
        env.merge(environment) { _, new in new }
        process.environment = env
        output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        try process.launchAlone()
        var seen = ""
        let deadline = Date().addingTimeInterval(30)
        var found: Int?
        while found == nil, Date() < deadline {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen += String(decoding: chunk, as: UTF8.self)
            if let range = seen.range(of: #"listening on [0-9.]+:([0-9]+)"#, options: .regularExpression) {
                found = Int(seen[range].split(separator: ":").last!)
            }
        }
        guard let found else {
            process.terminate()
            throw RawHTTPError("\(name) did not say it was listening; it printed: \(seen)")
        }
        port = found
    }

    public func signal(_ signal: Int32) { kill(process.processIdentifier, signal) }

    /// Waits for the process to exit and returns its status and everything else it printed.
    public func waitForExit() async throws -> (status: Int32, output: String) {
        try await offThePool { [self] in
            let rest = output.fileHandleForReading.readDataToEndOfFile()
            return (process.waitForExit(), String(decoding: rest, as: UTF8.self))
        }
    }

    /// SIGTERM, and the exit waited for in the background (for a `defer`).
    public func stop() {
        signal(SIGTERM)
        reapInBackground { [self] in _ = output.fileHandleForReading.readDataToEndOfFile(); _ = process.waitForExit() }
    }

    deinit { if process.isRunning { process.terminate() } }
}
