import Foundation
#if canImport(Testing)
import Testing
#endif

/// Runs a program to completion and collects what it printed.
public struct ProcessResult: Sendable {
    public var status: Int32
    public var stdout: Data
    public var stderr: String
    public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
}

public enum ProcessRunner {
    /// `run`, waiting on a dispatch thread rather than a task's: a child that calls back into a server
    /// of this process (an in-process local cloud) needs the cooperative threads to stay free.
    /// Tests call this one: a synchronous wait inside a test holds one of the few cooperative threads.
    public static func run(_ executable: URL, _ arguments: [String], stdin: Data? = nil, environment: [String: String]? = nil) async throws -> ProcessResult {
        try await offThePool { try runBlocking(executable, arguments, stdin: stdin, environment: environment) }
    }

    /// Waits on the calling thread: for synchronous code outside tests' async functions.
    public static func runBlocking(_ executable: URL, _ arguments: [String], stdin: Data? = nil, environment: [String: String]? = nil) throws -> ProcessResult {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        let out = Pipe(), err = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.launchAlone()
        // Read both pipes while the process runs, so a large output cannot block it.
        let stdoutData = LockedData(), stderrData = LockedData()
        let group = DispatchGroup()
        for (pipe, sink) in [(out, stdoutData), (err, stderrData)] {
            group.enter()
            DispatchQueue.global().async {
                sink.set(pipe.fileHandleForReading.readDataToEndOfFile())
                group.leave()
            }
        }
        if let stdin { input.fileHandleForWriting.write(stdin) }
        try? input.fileHandleForWriting.close()
        let status = process.waitForExit()
        group.wait()
        return ProcessResult(status: status, stdout: stdoutData.get(), stderr: String(decoding: stderrData.get(), as: UTF8.self))
    }
}

final class LockedData: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    func set(_ d: Data) { lock.withLock { data = d } }
    func get() -> Data { lock.withLock { data } }
}

/// A Python interpreter with Google's reference libraries (google-events, …), if this machine has one.
/// Looked for in $HERALD_PYTHON, the package's .venv, then python3 on the PATH.
public enum PythonReference {
    public static func interpreter(importing module: String) -> URL? {
        var candidates: [String] = []
        if let configured = ProcessInfo.processInfo.environment["HERALD_PYTHON"] { candidates.append(configured) }
        candidates.append(TestPaths.packageRoot.appendingPathComponent(".venv/bin/python").path)
        candidates.append("/usr/bin/env")
        for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate) {
            let url = URL(fileURLWithPath: candidate)
            let args = candidate == "/usr/bin/env" ? ["python3", "-c", "import \(module)"] : ["-c", "import \(module)"]
            if let result = try? ProcessRunner.runBlocking(url, args), result.status == 0 {
                return candidate == "/usr/bin/env" ? resolvePython3() : url
            }
        }
        return nil
    }

    static func resolvePython3() -> URL? {
        guard let result = try? ProcessRunner.runBlocking(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", "import sys; print(sys.executable)"]),
            result.status == 0
        else { return nil }
        return URL(fileURLWithPath: result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// In CI a missing reference is a failure (CI installs it); elsewhere the test says so and skips.
    public static var isRequired: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

    /// The interpreter for a test that needs `module`. Without one the test is skipped, and in CI
    /// (which installs it) also failed.
    public static func forTest(importing module: String) async throws -> URL {
        if let found = (try? await offThePool { interpreter(importing: module) }) ?? nil { return found }
        let message = "\(module) is not installed: pip install -r Tests/Python/requirements.txt (into .venv or HERALD_PYTHON)"
        if isRequired { recordFailure(message) }
        try skipTest(message)
    }
}

extension Process {
    static let launches = NSLock()

    /// Blocks until the process exits and gives its exit status (or the signal that killed it), as
    /// `terminationStatus` does. Foundation on Linux learns of a child's exit through a socket the child
    /// inherits; a full CI run once hung in `waitUntilExit` with the child a zombie that Foundation never
    /// noticed. So wait on the pid itself, with WNOWAIT: the zombie stays for Foundation to reap.
    public func waitForExit() -> Int32 {
        var info = siginfo_t()
        while waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOWAIT) == -1 {
            // ECHILD: Foundation has reaped it already, so it knows the status.
            guard errno == EINTR else {
                waitUntilExit()
                return terminationStatus
            }
        }
        return info._sifields._sigchld.si_status
    }

    /// The exit status if the process has exited (a zombie or reaped), without waiting; nil while it runs.
    public var exitStatusIfExited: Int32? {
        var info = siginfo_t()
        guard waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOWAIT | WNOHANG) == 0 else {
            return isRunning ? nil : terminationStatus
        }
        return info._sifields._sigchld.si_pid == 0 ? nil : info._sifields._sigchld.si_status
    }

    /// SIGTERM, SIGKILL if it is still running after `grace`, and its exit status; waits off the
    /// cooperative pool.
    public func stop(grace: Duration = .seconds(10)) async throws -> Int32 {
        guard exitStatusIfExited == nil else { return try await offThePool { self.waitForExit() } }
        kill(processIdentifier, SIGTERM)
        let deadline = ContinuousClock.now + grace
        while exitStatusIfExited == nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        if exitStatusIfExited == nil { kill(processIdentifier, SIGKILL) }
        return try await offThePool { self.waitForExit() }
    }

    /// `run()`, one launch at a time in this process. Tests start children from many threads at once,
    /// and a full run once saw a child's pipe descriptor already closed at launch (EBADF): launching
    /// one at a time takes Foundation's descriptor handling out of that race.
    public func launchAlone() throws {
        Self.launches.lock()
        defer { Self.launches.unlock() }
        try run()
    }
}
