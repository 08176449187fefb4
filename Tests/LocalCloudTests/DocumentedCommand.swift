import AsyncHTTPClient
import FirestoreModel
import Foundation
import HeraldTesting
import Supervision
import WireFormats

/// A command as README.md or a guide in docs/ writes it: in a fenced shell block (its continuation lines
/// joined, its trailing comment removed), or in the text as a code span that starts with `swift run`
/// (`swift run NAME`, in capitals, names a pattern, not a command).
struct DocumentedCommand: Sendable, CustomStringConvertible {
    let document: String
    let line: Int
    let text: String

    var description: String { "\(document):\(line): \(text)" }

    static let documents: [String] = {
        let docs = (try? FileManager.default.contentsOfDirectory(atPath: TestPaths.packageRoot.appendingPathComponent("docs").path)) ?? []
        return ["README.md"] + docs.filter { $0.hasSuffix(".md") }.sorted().map { "docs/\($0)" }
    }()

    static let shellFences: Set<String> = ["```sh", "```bash", "```shell", "```console"]

    static func all() throws -> [DocumentedCommand] {
        var commands: [DocumentedCommand] = []
        for document in documents {
            let lines = try String(contentsOf: TestPaths.packageRoot.appendingPathComponent(document), encoding: .utf8)
                .split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            var inShell = false
            var pending: (line: Int, text: String)?
            for (index, line) in lines.enumerated() {
                if line.hasPrefix("```") {
                    inShell = !inShell && shellFences.contains(line)
                    continue
                }
                guard inShell else {
                    commands += inlineCommands(in: line).map { DocumentedCommand(document: document, line: index + 1, text: $0) }
                    continue
                }
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if pending == nil, trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
                var text = (pending?.text ?? "") + trimmed
                let start = pending?.line ?? index + 1
                if text.hasSuffix("\\") {
                    text.removeLast()
                    pending = (start, text)
                    continue
                }
                pending = nil
                commands.append(DocumentedCommand(document: document, line: start, text: withoutComment(text)))
            }
        }
        return commands
    }

    static func inlineCommands(in line: String) -> [String] {
        let span = try! NSRegularExpression(pattern: "`(swift run ([A-Za-z-]+)[^`]*)`")
        return span.matches(in: line, range: NSRange(line.startIndex..., in: line)).compactMap { match in
            guard let text = Range(match.range(at: 1), in: line), let name = Range(match.range(at: 2), in: line) else { return nil }
            return line[name].uppercased() == line[name] ? nil : String(line[text])
        }
    }

    /// Fenced blocks without a language whose first line is a command: they would escape `all()`.
    static func unlabelledShellBlocks() throws -> [String] {
        var found: [String] = []
        for document in documents {
            let lines = try String(contentsOf: TestPaths.packageRoot.appendingPathComponent(document), encoding: .utf8)
                .split(separator: "\n", omittingEmptySubsequences: false)
            var inBlock = false
            for (index, line) in lines.enumerated() where line.hasPrefix("```") {
                defer { inBlock.toggle() }
                guard !inBlock, line == "```", index + 1 < lines.count else { continue }
                let first = lines[index + 1]
                if ["swift ", "herald ", "gcloud ", "python3 ", "curl ", "cd ", "./"].contains(where: { first.hasPrefix($0) }) {
                    found.append("\(document):\(index + 1)")
                }
            }
        }
        return found
    }

    /// The text before a `#` that starts a comment (outside quotes, after a space).
    static func withoutComment(_ text: String) -> String {
        var quote: Character?
        var previous: Character = " "
        for index in text.indices {
            let character = text[index]
            if let open = quote {
                if character == open { quote = nil }
            } else if character == "'" || character == "\"" {
                quote = character
            } else if character == "#", previous == " " {
                return text[..<index].trimmingCharacters(in: .whitespaces)
            }
            previous = character
        }
        return text
    }

    /// The command for `/bin/sh`: placeholders replaced, and `swift run NAME` the suite's own build of NAME.
    func shell(_ replacements: [String: String] = [:]) -> String {
        var text = self.text
        for (placeholder, value) in replacements { text = text.replacingOccurrences(of: placeholder, with: value) }
        let swiftRun = try! NSRegularExpression(pattern: #"swift run ([A-Za-z][A-Za-z0-9-]*)"#)
        for match in swiftRun.matches(in: text, range: NSRange(text.startIndex..., in: text)).reversed() {
            let name = String(text[Range(match.range(at: 1), in: text)!])
            text.replaceSubrange(Range(match.range, in: text)!, with: "'\(TestPaths.executable(name).path)'")
        }
        return text
    }
}

enum Scratch {
    static func directory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-docs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return directory
    }
}

enum Shell {
    static func run(_ command: String, in directory: URL = FileManager.default.temporaryDirectory) async throws -> ProcessResult {
        try await ProcessRunner.run(URL(fileURLWithPath: "/bin/sh"), ["-c", "cd '\(directory.path)' && \(command)"])
    }
}

/// A documented command that runs until stopped (a server), in a session of its own so that Ctrl-C
/// reaches it as a terminal's would: the whole process group.
final class Background: Sendable {
    let process: ChildProcess
    let log: URL
    let base: String

    private init(process: ChildProcess, log: URL, base: String) {
        self.process = process
        self.log = log
        self.base = base
    }

    var output: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
    var port: String { String(base.split(separator: ":").last ?? "") }

    static func start(_ command: String, in directory: URL, base: String = "") async throws -> Background {
        let log = directory.appendingPathComponent("output-\(UUID().uuidString).log")
        let process = try await ChildProcess.start(
            "/usr/bin/setsid", arguments: ["/bin/sh", "-c", "cd '\(directory.path)' && exec \(command)"], output: .file(log.path))
        return Background(process: process, log: log, base: base)
    }

    /// A `herald dev` command, on a free port unless it names one, once it serves (its address from its log).
    static func startDev(_ command: String, in directory: URL) async throws -> Background {
        let started = try await start(command.contains(" --port ") ? command : command + " --port 0", in: directory)
        try await started.waitFor { RunningDev.address(inOutput: $0) != nil }
        return Background(process: started.process, log: started.log, base: RunningDev.address(inOutput: started.output) ?? "")
    }

    struct DidNotHappen: Error, CustomStringConvertible { let description: String }

    /// Until `condition` holds of the output (checked every 100 ms); fails if the process ends first.
    func waitFor(timeout: Duration = .seconds(60), _ condition: (String) async -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if await condition(output) { return }
            if process.hasExited { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        if await condition(output) { return }
        let ended = process.termination.map { " (it \($0))" } ?? ""
        terminate()
        throw DidNotHappen(description: "not seen within \(timeout)\(ended): \(output.suffix(3000))")
    }

    func pushes() async throws -> [JSONValue] { try await RunningDev.pushes(at: base) }

    /// Ctrl-C to the process group; the exit status (-1 if it still runs 30 s later, then killed).
    func interrupt() async throws -> Int32 {
        if !process.hasExited { kill(-process.pid, SIGINT) }
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if let ended = process.termination { return ended.code }
            try await Task.sleep(for: .milliseconds(50))
        }
        terminate()
        return -1
    }

    /// SIGTERM to the whole group (a launcher script's Java child included), SIGKILL half a second later
    /// for what is left: for a test that is done with it or failed, not for a clean stop.
    func terminate() {
        guard !process.hasExited else { return }
        kill(-process.pid, SIGTERM)
        Thread.sleep(forTimeInterval: 0.5)
        kill(-process.pid, SIGKILL)
    }
}
