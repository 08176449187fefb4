import Foundation
import HeraldTesting
import Testing

/// The decoders under libFuzzer (Scripts/fuzz.sh), and every input it ever crashed on, replayed.
@Suite struct FuzzTests {
    static let fuzzer = TestPaths.executable("herald-fuzz")

    /// Inputs kept in Tests/Fixtures/fuzz-regressions/ (crashes found, and hand-made hard cases such as
    /// nesting far past the parser's depth limit) and the corpus seeded from every fixture, through
    /// every decoder: none may crash.
    @Test func regressionsAndTheSeedCorpusReplayWithoutACrash() async throws {
        let corpus = FileManager.default.temporaryDirectory.appendingPathComponent("herald-corpus-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: corpus) }
        let seeded = try await ProcessRunner.run(Self.fuzzer, ["seed", TestPaths.fixtures.path, corpus.path])
        #expect(seeded.status == 0, "\(seeded.stderr)")
        let replay = try await ProcessRunner.run(Self.fuzzer, [TestPaths.fixtures.appendingPathComponent("fuzz-regressions").path, corpus.path])
        #expect(replay.status == 0, "\(replay.stderr)")
        #expect(replay.stdoutText.contains("no crash") && !replay.stdoutText.contains("replayed 0 inputs"))
    }

    /// libFuzzer for a bounded time: in CI (60 s), or wherever HERALD_FUZZ_SECONDS is set.
    @Test func libFuzzerFindsNoCrashInItsTime() async throws {
        let environment = ProcessInfo.processInfo.environment
        guard let seconds = environment["HERALD_FUZZ_SECONDS"] ?? (environment["CI"] == "true" ? "60" : nil) else {
            try skipTest("set HERALD_FUZZ_SECONDS=60, or run Scripts/fuzz.sh 60")
        }
        let run = try await ProcessRunner.run(TestPaths.packageRoot.appendingPathComponent("Scripts/fuzz.sh"), [seconds])
        let said = run.stderr + run.stdoutText
        #expect(run.status == 0, "libFuzzer found a crash or did not run; the input is in .build-fuzz/crashes/:\n\(said.suffix(3000))")
        if let stats = said.split(separator: "\n").first(where: { $0.hasPrefix("Done ") }) { print("fuzzing: \(stats)") }
    }
}
