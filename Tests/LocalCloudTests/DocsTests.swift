import AsyncHTTPClient
import ChatFunctions
import Foundation
import HeraldCore
import HeraldTesting
import NIOCore
import NIOHTTP1
import Testing

/// What the docs state as facts is checked against the code: settings, endpoints, flags and links.
@Suite struct DocsTests {
    static let root = TestPaths.packageRoot

    static func text(_ relativePath: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(relativePath), encoding: .utf8)
    }

    static func sources(_ modules: [String]) throws -> String {
        var all = ""
        for module in modules {
            let folder = try sourceFolder(of: module)
            for case let file as String in FileManager.default.enumerator(atPath: folder.path) ?? .init() where file.hasSuffix(".swift") {
                all += try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            }
        }
        return all
    }

    /// A module's folder: `Sources/{layer}/{module}`.
    static func sourceFolder(of module: String) throws -> URL {
        let layers = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Sources").path)
        guard let layer = layers.first(where: { FileManager.default.fileExists(atPath: root.appendingPathComponent("Sources/\($0)/\(module)").path) })
        else { throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: "Sources/*/\(module)"]) }
        return root.appendingPathComponent("Sources/\(layer)/\(module)")
    }

    static func matches(_ pattern: String, in text: String, group: Int = 1) -> Set<String> {
        guard let regex = try? NSRegularExpression(pattern: pattern) else { return [] }
        let range = NSRange(text.startIndex..., in: text)
        return Set(
            regex.matches(in: text, range: range).compactMap { match in
                Range(match.range(at: group), in: text).map { String(text[$0]) }
            })
    }

    static func pairs(_ pattern: String, in text: String) -> [(String, String)] {
        guard let regex = try? NSRegularExpression(pattern: pattern) else { return [] }
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap { match in
            guard let first = Range(match.range(at: 1), in: text), let second = Range(match.range(at: 2), in: text) else { return nil }
            return (String(text[first]), String(text[second]))
        }
    }

    /// Every environment variable the functions read is in docs/configuration.md, and every variable
    /// documented there is read.
    @Test func everySettingIsDocumentedAndEveryDocumentedSettingIsRead() throws {
        let variables = #"((?:HERALD|GOOGLE|GCLOUD|FIRESTORE|FCM|GCE|LOG)_[A-Z_]+|PORT|TZDIR|K_SERVICE|CLOUD_RUN_JOB|FUNCTION_TARGET|GAE_SERVICE)"#
        // APNs's category for message notifications: a string the functions send, not a variable.
        let notVariables: Set<String> = ["HERALD_MESSAGE"]
        let read = Self.matches("\"\(variables)\"", in: try Self.sources(["HeraldRuntime", "GoogleClients", "HeraldCore", "ChatFunctions"]))
            .subtracting(notVariables)
        let documented = Self.matches("`\(variables)`", in: try Self.text("docs/configuration.md"))
        #expect(read.count > 20)
        #expect(read.subtracting(documented).isEmpty, "read but not in docs/configuration.md: \(read.subtracting(documented).sorted())")
        #expect(documented.subtracting(read).isEmpty, "in docs/configuration.md but read nowhere: \(documented.subtracting(read).sorted())")
    }

    /// Each function's declaration (`FunctionCatalog.all`) against its source and the docs: the settings
    /// it declares are exactly those it reads and are documented; docs/functions.md describes it, with
    /// its scheduled path.
    @Test func everyFunctionIsDescribedAsDeclared() throws {
        let configuration = try Self.text("docs/configuration.md")
        let functions = try Self.text("docs/functions.md")
        for function in FunctionCatalog.all {
            let source = try Self.text("Sources/Chat/ChatFunctions/\(String(describing: function.type)).swift")
            let read = Self.matches(#""(HERALD_[A-Z_]+)""#, in: source).subtracting(["HERALD_MESSAGE"])
            #expect(read == Set(function.settings), "\(function.name) reads \(read.sorted()), declares \(function.settings)")
            for setting in function.settings { #expect(configuration.contains("`\(setting)`"), "\(setting) is not in docs/configuration.md") }
            let row = functions.split(separator: "\n").first { $0.hasPrefix("| `\(function.name)` |") }
            #expect(row != nil, "docs/functions.md's table has no row for \(function.name)")
            if let schedule = function.schedule {
                #expect(row?.contains("POST \(schedule.path)") == true, "\(function.name)'s row names no POST \(schedule.path)")
            }
        }
    }

    /// The `/herald/` endpoints docs/local-cloud.md lists: each is answered (not "no such endpoint"),
    /// and each endpoint the local cloud has is listed.
    @Test func everyLocalCloudEndpointIsListedAndEveryListedOneAnswers() async throws {
        let docs = try Self.text("docs/local-cloud.md")
        var listed: [(method: String, path: String)] = []
        for row in docs.split(separator: "\n") where row.hasPrefix("| `") && row.contains("/herald/") {
            let cell = row.dropFirst(2).prefix { $0 != "|" }
            for item in cell.split(separator: ",") {
                guard let path = Self.matches(#"(/herald/[A-Za-z0-9/:_-]+)"#, in: String(item)).first else { continue }
                for method in Self.matches(#"\b(GET|PUT|POST|DELETE)\b"#, in: String(item)) { listed.append((method, path)) }
            }
        }
        let admin = try Self.text("Sources/LocalCloud/LocalCloud/AdminAPI.swift")
        let console = try Self.text("Sources/LocalCloud/LocalCloud/Console/ConsoleAPI.swift")
        let route = #"\("(GET|PUT|POST|DELETE)", "([^"]+)"\)"#
        let routes =
            Self.pairs(route, in: admin).map { "\($0.0) /herald/\($0.1)" } + Self.pairs(route, in: console).map { "\($0.0) /herald/console/\($0.1)" }
        #expect(routes.count > 15)
        let listedRoutes = Set(listed.map { "\($0.method) \($0.path)" })
        let missing = routes.filter { !listedRoutes.contains($0) }.sorted()
        #expect(missing.isEmpty, "endpoints docs/local-cloud.md does not list: \(missing)")
        try await withLocalCloud { [listed] local in
            for (method, path) in listed {
                var request = HTTPClientRequest(url: local.baseURL + path.replacingOccurrences(of: "NAME", with: "no-such-job"))
                request.method = .init(rawValue: method)
                if method != "GET" {
                    request.headers.add(name: "content-type", value: "application/json")
                    request.body = .bytes(ByteBuffer(string: "{}"))
                }
                let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
                let body = String(buffer: try await response.body.collect(upTo: 1 << 20))
                #expect(
                    !body.contains("No admin endpoint") && !body.contains("No console endpoint") && !body.contains("Nothing at"),
                    "\(method) \(path): \(response.status) \(body.prefix(200))")
            }
        }
    }

    /// Every `--flag` the README and the guides name exists in the command it belongs to.
    @Test func everyFlagTheDocsNameExists() async throws {
        var help = ""
        let commands: [(String, [String])] = [
            ("herald", ["dev", "--help"]), ("herald", ["export", "--help"]), ("herald", ["send", "--help"]), ("herald", ["indexes", "--help"]),
            ("herald", ["infra", "--help"]), ("herald", ["deploy", "--help"]), ("herald", ["schema", "infer", "--help"]),
            ("herald", ["schema", "check", "--help"]), ("herald", ["schema", "deployment", "--help"]),
            ("onMessageCreated", ["serve", "--help"]), ("onMessageCreated", ["invoke", "--help"]), ("presenceSweeper", ["sweep", "--help"]),
        ]
        for (executable, arguments) in commands {
            let result = try await ProcessRunner.run(TestPaths.executable(executable), arguments)
            help += result.stdoutText + result.stderr
        }
        // The README's test command is SwiftPM's.
        help += try await ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["swift", "test", "--help"]).stdoutText
        // And gcloud's and its emulator's, where the docs start Google's emulator (`gcloud info --format`,
        // `--host-port`, the launcher's `--host`, `--port`, `--functions_emulator`).
        // Other tools' flags the docs use: gcloud's and its emulator's, the Firebase CLI's (`--only`), Docker's (`--rm`, `--build-arg`).
        let known = Self.matches(#"(--[a-z][a-z-]+)"#, in: help).union([
            "--host-port", "--format", "--host", "--functions", "--only", "--rm", "--build-arg", "--rules",
        ])
        #expect(known.contains("--export-on-exit") && known.contains("--documents"))
        for document in ["README.md", "docs/local-cloud.md", "docs/functions.md", "docs/schema.md"] {
            let named = Self.matches(#"(?:^|[\s`(\[])(--[a-z][a-z-]+)"#, in: try Self.text(document))
            #expect(named.subtracting(known).isEmpty, "\(document) names flags no command has: \(named.subtracting(known).sorted())")
        }
    }

    /// Every page of docs/ is in README's table of documentation.
    @Test func everyDocumentationPageIsInTheReadmesTable() throws {
        let readme = try Self.text("README.md")
        let table = readme[readme.range(of: "## Documentation")!.upperBound...]
        let pages = try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent("docs").path).filter { $0.hasSuffix(".md") }
        #expect(pages.count >= 10)
        for page in pages { #expect(table.contains("](docs/\(page))"), "README's table lacks docs/\(page)") }
    }

    /// Relative links in the README and the docs lead to files that exist.
    @Test func everyRelativeLinkLeadsSomewhere() throws {
        var documents = ["README.md", "BENCHMARKS.md", "Infra/README.md"]
        documents += try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent("docs").path)
            .filter { $0.hasSuffix(".md") }.map { "docs/\($0)" }
        var checked = 0
        for document in documents {
            let folder = Self.root.appendingPathComponent(document).deletingLastPathComponent()
            for target in Self.matches(#"\]\(([^)#\s]+)(?:#[^)]*)?\)"#, in: try Self.text(document))
            where !target.contains("://") && !target.hasPrefix("mailto:") {
                checked += 1
                #expect(
                    FileManager.default.fileExists(atPath: folder.appendingPathComponent(target).path), "\(document) links to \(target), which does not exist")
            }
        }
        #expect(checked > 10)
    }
}
