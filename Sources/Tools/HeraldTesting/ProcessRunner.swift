import Foundation
import Supervision

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
    /// Runs `executable` to its end (stdin from `stdin`, else empty) and collects what it printed; the
    /// environment is this process's unless one is given.
    public static func run(_ executable: URL, _ arguments: [String], stdin: Data? = nil, environment: [String: String]? = nil) async throws -> ProcessResult {
        let result = try await ChildProcess.run(executable.path, arguments: arguments, environment: environment, input: stdin.map { Array($0) } ?? [])
        return ProcessResult(
            status: result.termination.code, stdout: Data(result.standardOutput), stderr: String(decoding: result.standardError, as: UTF8.self))
    }
}

/// A Python interpreter with Google's reference libraries (google-events, …), if this machine has one.
/// Looked for in $HERALD_PYTHON, the package's .venv, then python3 on the PATH.
public enum PythonReference {
    public static func interpreter(importing module: String) async -> URL? {
        var candidates: [String] = []
        if let configured = ProcessInfo.processInfo.environment["HERALD_PYTHON"] { candidates.append(configured) }
        candidates.append(TestPaths.packageRoot.appendingPathComponent(".venv/bin/python").path)
        candidates.append("/usr/bin/env")
        for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate) {
            let url = URL(fileURLWithPath: candidate)
            let args = candidate == "/usr/bin/env" ? ["python3", "-c", "import \(module)"] : ["-c", "import \(module)"]
            if let result = try? await ProcessRunner.run(url, args), result.status == 0 {
                return candidate == "/usr/bin/env" ? await resolvePython3() : url
            }
        }
        return nil
    }

    static func resolvePython3() async -> URL? {
        guard let result = try? await ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", "import sys; print(sys.executable)"]),
            result.status == 0
        else { return nil }
        return URL(fileURLWithPath: result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// In CI a missing reference is a failure (CI installs it); elsewhere the test says so and skips.
    public static var isRequired: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

    /// The interpreter for a test that needs `module`. Without one the test is skipped, and in CI
    /// (which installs it) also failed.
    public static func forTest(importing module: String) async throws -> URL {
        if let found = await interpreter(importing: module) { return found }
        let message = "\(module) is not installed: pip install -r Tests/Python/requirements.txt (into .venv or HERALD_PYTHON)"
        if isRequired { recordFailure(message) }
        try skipTest(message)
    }
}
