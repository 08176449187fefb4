import FirestoreModel
import Foundation
import HeraldTesting
import Testing

/// docs/event-formats.md's examples run as written (with the built executables for `swift run NAME`),
/// and do what the text around them says: each `invoke` applies its event, the sweep writes.
@Suite struct DocumentedExamplesTests {
    static func commands(in document: String) throws -> [[String]] {
        let text = try String(contentsOf: TestPaths.packageRoot.appendingPathComponent(document), encoding: .utf8)
        var commands: [[String]] = []
        var inShell = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                inShell = line == "```sh"
                continue
            }
            guard inShell, line.hasPrefix("swift run ") else { continue }
            commands.append(line.dropFirst("swift run ".count).split(separator: " ").map(String.init))
        }
        return commands
    }

    @Test func theEventFormatsExamplesApplyAsTheTextSays() async throws {
        let commands = try Self.commands(in: "docs/event-formats.md")
        #expect(commands.count >= 3, "\(commands)")
        for command in commands {
            let result = try await ProcessRunner.run(TestPaths.executable(command[0]), Array(command.dropFirst()))
            #expect(result.status == 0, "\(command.joined(separator: " ")): \(result.stderr)")
            let report = try JSONValue(parsing: result.stdout)
            if command[1] == "invoke" {
                #expect(report["outcome"]?["status"] == "applied", "\(command.joined(separator: " ")): \(report["outcome"].map { "\($0)" } ?? "")")
            } else {
                let written = report["sweeps"]?.objectValue?.values.compactMap { $0["written"]?.int64Value }.reduce(0, +) ?? 0
                #expect(written > 0, "\(command.joined(separator: " ")): \(result.stdoutText.prefix(500))")
            }
        }
    }
}
