import Foundation
import HeraldTesting
import Testing

/// What the documents point at exists: every source, test, script or fixture path they name (a line
/// number within its file), and every test they cite as evidence (`SuiteTests.testName`). A rename
/// (FirestoreGateway became ExactlyOnceExecutor on 2026-11-29) or a moved file otherwise leaves a
/// reader following a name that is not there.
@Suite struct DocumentReferencesTests {
    static let root = TestPaths.packageRoot
    /// Where a path in the documents may be relative to: the package, or one of its folders (a module's
    /// files are named from `Sources`, as `HeraldRuntime/Events/EventProcessor.swift`).
    static let bases = [".", "Sources", "Tests", "Infra", "Benchmarks", "Functions"]

    static func documents() throws -> [(name: String, text: String)] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)
            .filter { $0.hasSuffix(".md") }.map { "docs/\($0)" }
        return try (docs + ["README.md", "BENCHMARKS.md"]).sorted().map { name in
            (name, try String(contentsOf: root.appendingPathComponent(name), encoding: .utf8))
        }
    }

    static func lineCount(_ path: String) -> Int? {
        for base in bases {
            let url = root.appendingPathComponent(base).appendingPathComponent(path)
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder) else { continue }
            if isFolder.boolValue { return 0 }
            return (try? String(contentsOf: url, encoding: .utf8)).map { $0.split(separator: "\n", omittingEmptySubsequences: false).count } ?? 0
        }
        return nil
    }

    @Test func everyFileTheDocumentsNameExists() throws {
        // A path with a folder and a file kind, optionally `:LINE`, not inside a longer name (Swift's
        // regexes have no lookbehind: the character before it is matched, outside the captures);
        // placeholders (NAME) are not files.
        let path = try Regex(
            #"(?:^|[^A-Za-z0-9_./-])([A-Za-z0-9_.-]+/[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.(?:swift|sh|py|json|yaml|md|txt|c|h))(?![A-Za-z0-9_.-])(?::([0-9]+))?"#
        ).anchorsMatchLineEndings()
        var checked = 0
        for (name, text) in try Self.documents() {
            for match in text.matches(of: path) {
                guard let file = match.output[1].substring.map(String.init) else { continue }
                let line = match.output[2].substring.flatMap { Int($0) }
                guard !file.contains("NAME"), !file.hasPrefix("http"), !file.contains("..") else { continue }
                checked += 1
                guard let lines = Self.lineCount(file) else {
                    Issue.record("\(name) names \(file), which is not in the package")
                    continue
                }
                if let line {
                    #expect(line <= lines, "\(name) points at \(file):\(line), but the file has \(lines) lines")
                }
            }
        }
        #expect(checked > 50, "the documents name files: \(checked) found")
    }

    @Test func everyTestTheDocumentsCiteExists() throws {
        var suites: [String: String] = [:]  // suite → the text of the files that declare or extend it
        let tests = Self.root.appendingPathComponent("Tests")
        for case let file as String in FileManager.default.enumerator(atPath: tests.path) ?? .init() where file.hasSuffix(".swift") {
            let text = try String(contentsOf: tests.appendingPathComponent(file), encoding: .utf8)
            for match in text.matches(of: try Regex(#"(?:struct|class|extension|enum) ([A-Z][A-Za-z0-9]*Tests)\b"#)) {
                let suite = String(text[match.range].split(separator: " ")[1])
                suites[suite, default: ""] += text
            }
        }
        let citation = try Regex(#"`([A-Z][A-Za-z0-9]*Tests)(?:\.([a-z][A-Za-z0-9]*))?`"#)
        var checked = 0
        for (name, text) in try Self.documents() {
            for match in text.matches(of: citation) {
                let cited = text[match.range].dropFirst().dropLast().split(separator: ".").map(String.init)
                checked += 1
                // A test target (`HeraldHTTPClientTests`) is cited by its folder.
                if cited.count == 1, Self.lineCount("Tests/\(cited[0])") == 0 { continue }
                guard let source = suites[cited[0]] else {
                    Issue.record("\(name) cites \(cited[0]), a suite no test file declares")
                    continue
                }
                if cited.count > 1 {
                    #expect(source.contains("func \(cited[1])("), "\(name) cites \(cited.joined(separator: ".")), which \(cited[0]) does not have")
                }
            }
        }
        #expect(checked > 20, "the documents cite tests: \(checked) found")
    }
}
