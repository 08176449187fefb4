import Subprocess
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A program this process started and watches until it exits, through swift-subprocess: spawned with
/// `posix_spawn` (descriptors closed in the child), its exit learnt from a pidfd and reaped once, its
/// output read without blocking a thread. It replaces Foundation's `Process`, whose exit detection on
/// Linux missed children (zombies that never ended `waitUntilExit`) and whose pipes' descriptors were
/// closed twice under concurrent launches.
///
/// The child lives in a task of its own, so it may outlive the call that started it (a server started by
/// one test step and stopped by another, or a function `herald dev` supervises); `waitForExit` and `stop`
/// meet it again.
public final class ChildProcess: Sendable {
    /// Where the child's standard output and standard error go, together.
    public enum Output: Sendable {
        /// Each line (without its newline) to this handler, as it is printed.
        case lines(@Sendable (String) -> Void)
        /// Appended to this file, created if missing.
        case file(String)
        case discarded
    }

    /// How the child ended: its exit status, or the signal that ended it.
    public enum Termination: Sendable, Equatable, CustomStringConvertible {
        case exited(Int32)
        case signaled(Int32)

        /// The exit status, or the signal's number: what Foundation's `terminationStatus` gave.
        public var code: Int32 {
            switch self {
            case .exited(let code), .signaled(let code): code
            }
        }

        public var description: String {
            switch self {
            case .exited(let code): "exited with status \(code)"
            case .signaled(let signal): "was killed by signal \(signal)"
            }
        }
    }

    public let pid: Int32
    private let ending = Mutex(Ending())

    private struct Ending {
        var termination: Termination?
        var waiting: [CheckedContinuation<Termination, Never>] = []
    }

    private init(pid: Int32) { self.pid = pid }

    /// Starts `executable` (a path) with `arguments`, in `environment` (this process's when nil), with
    /// standard input from /dev/null, and returns once it runs.
    public static func start(_ executable: String, arguments: [String], environment: [String: String]? = nil, output: Output) async throws -> ChildProcess {
        let started = Started()
        let configuration = Configuration(
            executable: .path(FilePath(executable)), arguments: Arguments(arguments), environment: Self.environment(environment))
        Task.detached {
            do {
                let status = try await Self.supervise(configuration, output: output, started: started)
                started.child?.ended(Termination(status))
            } catch {
                // Failing to spawn is the caller's error; after spawning, swift-subprocess throws only when
                // reading the output failed, and has still waited for the child.
                if !started.fail(error) { started.child?.ended(.exited(-1)) }
            }
        }
        return try await started.wait()
    }

    /// Runs `executable` to its end with `input` on its standard input, and collects what it printed.
    public static func run(_ executable: String, arguments: [String], environment: [String: String]? = nil, input: [UInt8] = [])
        async throws -> (termination: Termination, standardOutput: [UInt8], standardError: [UInt8])
    {
        let result = try await Subprocess.run(
            .path(FilePath(executable)), arguments: Arguments(arguments), environment: Self.environment(environment),
            input: .array(input), output: .sequence, error: .sequence
        ) { execution in
            // Both pipes are read at once, so a child that fills one is never stuck on it.
            async let standardError = Self.collect(execution.standardError)
            let standardOutput = try await Self.collect(execution.standardOutput)
            return (standardOutput, try await standardError)
        }
        return (Termination(result.terminationStatus), result.closureResult.0, result.closureResult.1)
    }

    /// The termination, once the child has exited; nil while it runs.
    public var termination: Termination? { ending.withLock { $0.termination } }
    public var hasExited: Bool { termination != nil }

    public func signal(_ signal: Int32) {
        guard !hasExited else { return }
        _ = kill(pid, signal)
    }

    public func waitForExit() async -> Termination {
        await withCheckedContinuation { continuation in
            let ended: Termination? = ending.withLock { ending in
                if ending.termination == nil { ending.waiting.append(continuation) }
                return ending.termination
            }
            if let ended { continuation.resume(returning: ended) }
        }
    }

    /// SIGTERM, then SIGKILL if the child is still running after `grace`; its termination.
    @discardableResult
    public func stop(grace: Duration = .seconds(10)) async -> Termination {
        signal(SIGTERM)
        let deadline = ContinuousClock.now + grace
        while !hasExited, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        signal(SIGKILL)
        return await waitForExit()
    }

    private func ended(_ termination: Termination) {
        let waiting = ending.withLock { ending in
            ending.termination = termination
            defer { ending.waiting = [] }
            return ending.waiting
        }
        for continuation in waiting { continuation.resume(returning: termination) }
    }

    private static func supervise(_ configuration: Configuration, output: Output, started: Started) async throws -> TerminationStatus {
        switch output {
        case .lines(let handle):
            return try await Subprocess.run(configuration, input: .none, output: .sequence, error: .combinedWithOutput) { execution in
                started.succeed(pid: execution.processIdentifier.value)
                var lines = LineSplitter()
                for try await buffer in execution.standardOutput {
                    buffer.withUnsafeBytes { lines.append($0, handle) }
                }
                lines.finish(handle)
            }.terminationStatus
        case .file(let path):
            let descriptor = try FileDescriptor.open(
                FilePath(path), .writeOnly, options: [.create, .append, .closeOnExec], permissions: [.ownerReadWrite])
            return try await Subprocess.run(
                configuration, input: .none, output: .fileDescriptor(descriptor, closeAfterSpawningProcess: true), error: .combinedWithOutput
            ) { execution in
                started.succeed(pid: execution.processIdentifier.value)
            }.terminationStatus
        case .discarded:
            return try await Subprocess.run(configuration, input: .none, output: .discarded, error: .discarded) { execution in
                started.succeed(pid: execution.processIdentifier.value)
            }.terminationStatus
        }
    }

    private static func collect(_ output: SubprocessOutputSequence) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        for try await buffer in output { buffer.withUnsafeBytes { bytes.append(contentsOf: $0) } }
        return bytes
    }

    private static func environment(_ variables: [String: String]?) -> Environment {
        guard let variables else { return .inherit }
        return .custom(Dictionary(uniqueKeysWithValues: variables.compactMap { key, value in Environment.Key(rawValue: key).map { ($0, value) } }))
    }

    /// The hand-over between the task that spawns the child and the caller of `start`.
    private final class Started: Sendable {
        private let state = Mutex<(child: ChildProcess?, error: (any Error)?, waiting: CheckedContinuation<ChildProcess, any Error>?)>((nil, nil, nil))

        var child: ChildProcess? { state.withLock { $0.child } }

        func succeed(pid: Int32) {
            let child = ChildProcess(pid: pid)
            let waiting = state.withLock { state in
                state.child = child
                defer { state.waiting = nil }
                return state.waiting
            }
            waiting?.resume(returning: child)
        }

        /// False when the child had started already (so the error is not the caller's).
        func fail(_ error: any Error) -> Bool {
            let (started, waiting) = state.withLock { state in
                guard state.child == nil else { return (true, CheckedContinuation<ChildProcess, any Error>?.none) }
                state.error = error
                defer { state.waiting = nil }
                return (false, state.waiting)
            }
            waiting?.resume(throwing: error)
            return !started
        }

        func wait() async throws -> ChildProcess {
            try await withCheckedThrowingContinuation { continuation in
                let outcome: Result<ChildProcess, any Error>? = state.withLock { state in
                    if let child = state.child { return .success(child) }
                    if let error = state.error { return .failure(error) }
                    state.waiting = continuation
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        }
    }
}

extension ChildProcess.Termination {
    init(_ status: TerminationStatus) {
        switch status {
        case .exited(let code): self = .exited(code)
        case .signaled(let signal): self = .signaled(signal)
        }
    }
}

/// Bytes as they arrive, cut into lines at "\n" (a line split across reads is joined first).
struct LineSplitter {
    private var pending: [UInt8] = []

    mutating func append(_ bytes: UnsafeRawBufferPointer, _ handle: (String) -> Void) {
        var start = 0
        for index in bytes.indices where bytes[index] == UInt8(ascii: "\n") {
            pending.append(contentsOf: bytes[start..<index])
            handle(String(decoding: pending, as: UTF8.self))
            pending.removeAll(keepingCapacity: true)
            start = index + 1
        }
        pending.append(contentsOf: bytes[start...])
    }

    mutating func finish(_ handle: (String) -> Void) {
        if !pending.isEmpty { handle(String(decoding: pending, as: UTF8.self)) }
        pending = []
    }
}
