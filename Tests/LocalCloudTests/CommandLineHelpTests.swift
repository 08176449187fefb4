import ChatFunctions
import Foundation
import HeraldCore
import HeraldTesting
import Testing

/// Every command and subcommand answers `--help` with its help and exit 0, as a newcomer tries them.
@Suite struct CommandLineHelpTests {
    static let herald = TestPaths.executable("herald")

    static func help(_ arguments: [String]) async throws -> (status: Int32, text: String) {
        let result = try await ProcessRunner.run(herald, arguments)
        return (result.status, result.stdoutText + result.stderr)
    }

    @Test func everyHeraldCommandAnswersHelp() async throws {
        let root = try await Self.help(["--help"])
        #expect(root.status == 0)
        let subcommands = ["dev", "send", "export", "indexes", "infra", "function", "version"]
        for name in subcommands {
            #expect(root.text.contains("  \(name) "), "herald --help lists \(name)")
            for arguments in [[name, "--help"], ["help", name]] {
                let answer = try await Self.help(arguments)
                #expect(answer.status == 0, "herald \(arguments.joined(separator: " ")): \(answer.text)")
                #expect(answer.text.contains("USAGE: herald \(name)"), "herald \(arguments.joined(separator: " ")): \(answer.text)")
            }
        }
        // `function` without a name is a usage error that still shows what to type.
        let bare = try await Self.help(["function"])
        #expect(bare.status == 64)
        #expect(bare.text.contains(FunctionCatalog.names.joined(separator: ", ")))
    }

    @Test func everyFunctionAndItsSubcommandsAnswerHelp() async throws {
        for function in FunctionCatalog.all {
            let subcommands =
                ["serve"] + (function.schedule == nil || function.name == "tokenCleanup" ? ["invoke"] : []) + (function.schedule != nil ? ["sweep"] : [])
            for arguments in [["--help"]] + subcommands.map({ [$0, "--help"] }) {
                let answer = try await Self.help(["function", function.name] + arguments)
                #expect(answer.status == 0, "herald function \(function.name) \(arguments.joined(separator: " ")): \(answer.text)")
                #expect(answer.text.contains(function.name), "\(answer.text)")
            }
        }
    }

    /// A dry run against Firestore writes nothing, and says "would write" (it said "wrote").
    @Test func aDryRunSweepSaysWouldWrite() async throws {
        try await withLocalCloud { cloud in
            var environment = cloud.functionEnvironment(schema: "default")
            environment["LOG_LEVEL"] = "info"
            let result = try await ProcessRunner.run(TestPaths.executable("presenceSweeper"), ["sweep", "--dry-run"], environment: environment)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stderr.contains("would write 0"), "\(result.stderr)")
            #expect(!result.stderr.contains("wrote"), "\(result.stderr)")
        }
    }
}
