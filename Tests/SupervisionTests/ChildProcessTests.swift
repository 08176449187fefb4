import Foundation
import Supervision
import Synchronization
import Testing

/// The one way Herald's dev tool and tests run programs: output, exit, signals, and the races
/// Foundation's `Process` lost (concurrent launches, exits it never noticed).
@Suite struct ChildProcessTests {
    static let shell = "/bin/sh"

    final class Lines: Sendable {
        let seen = Mutex<[String]>([])
        var all: [String] { seen.withLock { $0 } }
        var output: ChildProcess.Output { .lines { line in self.seen.withLock { $0.append(line) } } }
    }

    @Test func linesOfBothStreamsArriveInOrderAndTheExitStatusIsKept() async throws {
        let lines = Lines()
        let child = try await ChildProcess.start(Self.shell, arguments: ["-c", "echo one; echo two >&2; printf 'three\\nfour'; exit 3"], output: lines.output)
        #expect(child.pid > 0)
        #expect(await child.waitForExit() == .exited(3))
        #expect(lines.all == ["one", "two", "three", "four"])
        #expect(child.hasExited && child.termination == .exited(3))
        #expect(await child.waitForExit() == .exited(3), "a second wait answers at once")
    }

    @Test func aLineSplitAcrossWritesIsOneLine() async throws {
        let lines = Lines()
        let child = try await ChildProcess.start(
            Self.shell, arguments: ["-c", "printf 'hal'; sleep 0.2; printf 'f\\n'; printf '%070000d\\n' 7"], output: lines.output)
        #expect(await child.waitForExit() == .exited(0))
        #expect(lines.all.first == "half")
        #expect(lines.all.count == 2 && lines.all.last?.count == 70_000)
    }

    @Test func stopEndsAChildWithSIGTERM() async throws {
        let child = try await ChildProcess.start(Self.shell, arguments: ["-c", "exec sleep 30"], output: .discarded)
        #expect(child.termination == nil)
        let clock = ContinuousClock()
        let started = clock.now
        #expect(await child.stop(grace: .seconds(10)) == .signaled(SIGTERM))
        #expect(clock.now - started < .seconds(5))
    }

    @Test func stopKillsAChildThatIgnoresSIGTERMAfterTheGrace() async throws {
        let lines = Lines()
        let child = try await ChildProcess.start(Self.shell, arguments: ["-c", "trap '' TERM; echo ready; exec sleep 30"], output: lines.output)
        // SIGTERM before the trap is set would end it at once.
        while lines.all.isEmpty, !child.hasExited { try await Task.sleep(for: .milliseconds(10)) }
        let clock = ContinuousClock()
        let started = clock.now
        #expect(await child.stop(grace: .milliseconds(300)) == .signaled(SIGKILL))
        let took = clock.now - started
        #expect(took >= .milliseconds(300) && took < .seconds(20))
    }

    @Test func anExitIsNoticedEvenWhenAGrandchildKeepsTheOutputOpen() async throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("child-\(UUID().uuidString).log").path
        defer { try? FileManager.default.removeItem(atPath: log) }
        let child = try await ChildProcess.start(Self.shell, arguments: ["-c", "echo first; (sleep 60 &); echo second; exit 4"], output: .file(log))
        let clock = ContinuousClock()
        let started = clock.now
        #expect(await child.waitForExit() == .exited(4))
        #expect(clock.now - started < .seconds(30), "the grandchild holds the output for 60 s")
        #expect(try String(contentsOfFile: log, encoding: .utf8) == "first\nsecond\n")
    }

    @Test func aFileOutputIsAppendedTo() async throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("child-\(UUID().uuidString).log").path
        defer { try? FileManager.default.removeItem(atPath: log) }
        for word in ["a", "b"] {
            let child = try await ChildProcess.start(Self.shell, arguments: ["-c", "echo \(word); echo \(word)2 >&2"], output: .file(log))
            #expect(await child.waitForExit() == .exited(0))
        }
        #expect(try String(contentsOfFile: log, encoding: .utf8) == "a\na2\nb\nb2\n")
    }

    @Test func anEnvironmentGivenIsTheWholeEnvironment() async throws {
        let result = try await ChildProcess.run(Self.shell, arguments: ["-c", "echo \"$HERALD_X ${HOME-unset}\""], environment: ["HERALD_X": "given"])
        #expect(result.termination == .exited(0))
        #expect(String(decoding: result.standardOutput, as: UTF8.self) == "given unset\n")
        let inherited = try await ChildProcess.run(Self.shell, arguments: ["-c", "echo ${HOME-unset}"])
        #expect(String(decoding: inherited.standardOutput, as: UTF8.self) == "\(ProcessInfo.processInfo.environment["HOME"] ?? "unset")\n")
    }

    @Test func runFeedsInputAndCollectsLargeOutputOnBothPipes() async throws {
        let input = Array(repeating: UInt8(ascii: "x"), count: 300_000)
        let result = try await ChildProcess.run(Self.shell, arguments: ["-c", "cat; head -c 500000 /dev/zero >&2; exit 2"], input: input)
        #expect(result.termination == .exited(2))
        #expect(result.standardOutput == input)
        #expect(result.standardError.count == 500_000)
    }

    @Test func aMissingProgramIsAnErrorFromStart() async throws {
        await #expect(throws: (any Error).self) {
            _ = try await ChildProcess.start("/nonexistent/herald-program", arguments: [], output: .discarded)
        }
        await #expect(throws: (any Error).self) {
            _ = try await ChildProcess.run("/nonexistent/herald-program", arguments: [])
        }
    }

    /// Foundation's `Process` lost descriptors when tests launched children from many threads at once.
    @Test func manyChildrenStartedAtOnceAllRunAndAreAllHeard() async throws {
        let outputs = try await withThrowingTaskGroup(of: (Int, [String], ChildProcess.Termination).self) { group in
            for index in 0..<24 {
                group.addTask {
                    let lines = Lines()
                    let child = try await ChildProcess.start(Self.shell, arguments: ["-c", "echo child \(index)"], output: lines.output)
                    let termination = await child.waitForExit()
                    // Every line is handed over before the exit is reported.
                    return (index, lines.all, termination)
                }
            }
            return try await group.reduce(into: [Int: ([String], ChildProcess.Termination)]()) { $0[$1.0] = ($1.1, $1.2) }
        }
        #expect(outputs.count == 24)
        for (index, (lines, termination)) in outputs {
            #expect(termination == .exited(0))
            #expect(lines == ["child \(index)"])
        }
    }
}
