import AsyncHTTPClient
import Foundation
import FirestoreModel
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One function running as its own process (`herald function NAME serve`), as Cloud Run would run
/// its container; its JSON log lines are turned into the live log.
final class FunctionProcess: Sendable {
    let name: String
    let port: Int
    let process: Process
    let printLine: @Sendable (String) -> Void
    let buffer = Mutex("")

    init(name: String, port: Int, executable: URL, environment: [String: String], printLine: @escaping @Sendable (String) -> Void) throws {
        self.name = name
        self.port = port
        self.printLine = printLine
        let process = Process()
        process.executableURL = executable
        process.arguments = ["function", name, "serve", "--host", "127.0.0.1", "--port", String(port)]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        self.process = process
        pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self else { return }
            if data.isEmpty {
                handle.readabilityHandler = nil
                return
            }
            self.consume(String(decoding: data, as: UTF8.self))
        }
        try process.run()
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
            guard process.isRunning else { return false }
            if let response = try? await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/healthz"), timeout: .seconds(1)),
               response.status == .ok {
                return true
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    /// SIGTERM, as Cloud Run stops a container; SIGKILL after 10 s.
    func stop() async {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        for _ in 0..<100 where process.isRunning { try? await Task.sleep(for: .milliseconds(100)) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

struct DevError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
