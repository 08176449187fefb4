import Foundation
import HeraldTesting
import Testing

/// What keeps README and docs/ current: every measured figure they quote is one of BENCHMARKS.md's,
/// every anchor they link to is a heading, no path leads outside the repository, and the command lists
/// are the CLI's.
@Suite struct DocsCurrencyTests {
    static var guides: [String] {
        get throws {
            let pages = try FileManager.default.contentsOfDirectory(atPath: DocsTests.root.appendingPathComponent("docs").path)
            return ["README.md"] + pages.filter { $0.hasSuffix(".md") }.sorted().map { "docs/\($0)" }
        }
    }

    /// A measured figure: a size in MB or GB, a rate of events, sends or writes a second, a ratio (`7.6×`),
    /// and, on a line that cites BENCHMARKS.md, a time in ms. Sizes in MiB and times elsewhere are limits
    /// and settings, not measurements.
    static func figures(in line: String) -> [String] {
        let found = DocsTests.matches(#"(?<![\w.$])(\d[\d,]*(?:\.\d+)?(?:×|\s?(?:ms|MB|GB|events/s|sends/s|writes/s)(?!\w)))"#, in: line)
        return found.filter { !$0.hasSuffix("ms") || line.contains("BENCHMARKS.md") }.sorted()
    }

    @Test func everyFigureQuotedIsOneOfBenchmarksOwn() throws {
        let benchmarks = try DocsTests.text("BENCHMARKS.md")
        #expect(Self.figures(in: "image 20.9 MB, a burst 7.6×, every 250 ms, 1 MiB, 3 × $2") == ["20.9 MB", "7.6×"])
        #expect(Self.figures(in: "4.0 ms to the last push (BENCHMARKS.md, 2026-11-25)") == ["4.0 ms"])
        var checked = 0
        for guide in try Self.guides {
            for (number, line) in try DocsTests.text(guide).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                for figure in Self.figures(in: String(line)) {
                    checked += 1
                    #expect(benchmarks.contains(figure), "\(guide):\(number + 1) quotes \(figure), which BENCHMARKS.md does not have")
                }
            }
        }
        #expect(checked > 10)
    }

    /// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as dashes.
    static func anchor(_ heading: String) -> String {
        String(
            heading.lowercased().compactMap { character -> Character? in
                if character == " " { return "-" }
                return character.isLetter || character.isNumber || character == "-" || character == "_" ? character : nil
            })
    }

    static func anchors(in document: String) throws -> Set<String> {
        var found: Set<String> = []
        var fenced = false
        for line in try DocsTests.text(document).split(separator: "\n") {
            if line.hasPrefix("```") { fenced.toggle() }
            guard !fenced, line.hasPrefix("#") else { continue }
            let heading = line.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces)
            var name = anchor(heading)
            var suffix = 1
            while found.contains(name) {
                name = anchor(heading) + "-\(suffix)"
                suffix += 1
            }
            found.insert(name)
        }
        return found
    }

    @Test func everyAnchorLinkedIsAHeading() throws {
        #expect(Self.anchor("On the network, and on a Mac") == "on-the-network-and-on-a-mac")
        #expect(Self.anchor("Sign-in (Firebase Auth)") == "sign-in-firebase-auth")
        var checked = 0
        for document in try Self.guides + ["BENCHMARKS.md", "CHANGELOG.md"] {
            let folder = URL(fileURLWithPath: document).deletingLastPathComponent().relativePath
            for (target, fragment) in DocsTests.pairs(#"\]\(([^)#\s]*)#([^)\s]+)\)"#, in: try DocsTests.text(document)) where !target.contains("://") {
                let linked = target.isEmpty ? document : URL(fileURLWithPath: folder + "/" + target).standardized.relativePath
                guard linked.hasSuffix(".md") else { continue }
                checked += 1
                let path = linked.hasPrefix("./") ? String(linked.dropFirst(2)) : linked
                #expect(try Self.anchors(in: path).contains(fragment), "\(document) links to \(path)#\(fragment), which is no heading there")
            }
        }
        #expect(checked > 3)
    }

    /// The docs name only what a clone has: no path above the repository.
    @Test func noPathLeadsOutsideTheRepository() throws {
        for document in try Self.guides + ["BENCHMARKS.md", "CHANGELOG.md", "Infra/README.md"] {
            let text = try DocsTests.text(document)
            #expect(!text.contains("../shared"), "\(document) names ../shared/, which no clone has")
            let depth = document.split(separator: "/").count - 1
            for target in DocsTests.matches(#"\]\(([^)#\s]+)"#, in: text) where !target.contains("://") {
                let ups = target.split(separator: "/").prefix { $0 == ".." }.count
                #expect(ups <= depth, "\(document) links to \(target), outside the repository")
            }
        }
    }

    /// README's status names the version `herald version` prints, and CHANGELOG.md's newest entry is it.
    @Test func theVersionIsTheSameEverywhere() async throws {
        let version = try await ProcessRunner.run(TestPaths.executable("herald"), ["version"]).stdoutText
        let current = try #require(DocsTests.matches(#"(\d+\.\d+\.\d+)"#, in: version).first, "\(version)")
        #expect(try DocsTests.text("README.md").contains("**Status: \(current)**"), "README's status is not \(current)")
        let changelog = try DocsTests.text("CHANGELOG.md")
        let newest = changelog.components(separatedBy: "\n## ").dropFirst().first ?? ""
        #expect(newest.hasPrefix(current + " "), "CHANGELOG.md's newest entry is not \(current): \(newest.prefix(40))")
    }

    /// The lists of herald's commands in the docs are `herald --help`'s.
    @Test func theCommandListsAreTheCLIs() async throws {
        let help = try await ProcessRunner.run(TestPaths.executable("herald"), ["--help"]).stdoutText
        let section = help.components(separatedBy: "SUBCOMMANDS:").last ?? ""
        let commands = Set(DocsTests.matches(#"(?m)^  ([a-z][a-z-]+)\s"#, in: section)).subtracting(["help"])
        #expect(commands.isSuperset(of: ["dev", "deploy", "dead-letters", "schema"]), "\(commands)")
        for (document, marker) in [("docs/functions.md", "| `herald` |"), ("docs/architecture.md", "| `Sources/Tools/HeraldCLI` |")] {
            let row = try #require(try DocsTests.text(document).split(separator: "\n").first { $0.hasPrefix(marker) }, "\(document) lists no commands")
            let listed = Set(DocsTests.matches(#"`([a-z][a-z-]+)(?: NAME …)?`"#, in: String(row.dropFirst(marker.count)))).subtracting(["herald"])
            #expect(listed == commands, "\(document): lists \(listed.sorted()), herald --help has \(commands.sorted())")
        }
    }
}
