import Foundation
import HeraldTesting
import Testing

@testable import HeraldRuntime

/// The executor hook (`EventLoopExecutor`) uses Swift's runtime below its public API: the global
/// enqueue hook and `swift_job_run`, declared by hand in `ConcurrencyHook`. These tests fail when the
/// runtime in use stops offering them as declared, and check that start-up notices a hook that did not take.
@Suite struct ExecutorHookTests {
    /// The Swift runtime this test process loaded: the toolchain the package is built with.
    static func concurrencyLibrary() async throws -> URL {
        // Read by `cat`: Foundation reads a file by its size, and /proc's files say 0.
        let maps = try await ProcessRunner.run(URL(fileURLWithPath: "/bin/cat"), ["/proc/\(getpid())/maps"]).stdoutText
        guard let line = maps.split(separator: "\n").first(where: { $0.hasSuffix("/libswift_Concurrency.so") }),
            let path = line.split(separator: " ").last
        else { throw StillBusy(description: "libswift_Concurrency.so is not loaded by this process") }
        return URL(fileURLWithPath: String(path))
    }

    @Test func theRuntimeStillExportsTheHookAndTheJobRunnerHeraldCalls() async throws {
        let library = try await Self.concurrencyLibrary()
        let symbols = try await ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["nm", "-D", "--defined-only", library.path])
        try #require(symbols.status == 0, "nm: \(symbols.stderr)")
        let lines = String(decoding: symbols.stdout, as: UTF8.self).split(separator: "\n").map { $0.split(separator: " ").suffix(2).joined(separator: " ") }
        // A variable (the hook's slot), and a function.
        #expect(lines.contains("B swift_task_enqueueGlobal_hook"), "the runtime no longer has swift_task_enqueueGlobal_hook as a variable")
        #expect(lines.contains("T swift_job_run"), "the runtime no longer exports swift_job_run")
    }

    @Test func theJobRunnerTakesAJobAndATwoWordExecutorAsDeclared() async throws {
        let linux = try await Self.concurrencyLibrary().deletingLastPathComponent()
        // The stdlib's own declaration of swift_job_run (Swift's calling convention, as ConcurrencyHook.c declares it).
        let interface = try String(
            contentsOf: linux.appendingPathComponent("_Concurrency.swiftmodule/x86_64-unknown-linux-gnu.swiftinterface"), encoding: .utf8)
        let declaration = """
            @_silgen_name("swift_job_run")
            @usableFromInline
            internal func _swiftJobRun(_ job: _Concurrency.UnownedJob, _ executor: _Concurrency.UnownedSerialExecutor)
            """
        #expect(interface.contains(declaration), "swift_job_run's declaration in _Concurrency changed")
        // The executor reference: two words, identity then implementation (zero and zero: the generic executor).
        let header = try String(contentsOf: linux.appendingPathComponent("../../../include/swift/ExecutorImpl.h").standardizedFileURL, encoding: .utf8)
        let reference = "typedef struct {\n  SwiftHeapObject * _Nullable identity;\n  uintptr_t implementation;\n} SwiftExecutorRef;"
        #expect(header.contains(reference), "SwiftExecutorRef is no longer two words (identity, implementation)")
    }

    /// This test process runs without the hook: the check start-up makes says so.
    @Test func withoutTheHookTasksAreSeenNotToRunOnTheLoops() async {
        #expect(await EventLoopExecutor.tasksRunOnEventLoops() == false)
    }

    /// A function executable installs the hook and checks it before anything else: it starts.
    @Test func aFunctionExecutableStartsWithItsHookChecked() async throws {
        let result = try await ProcessRunner.run(TestPaths.executable("onMessageCreated"), ["--help"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stderr.contains("executor hook"))
    }
}
