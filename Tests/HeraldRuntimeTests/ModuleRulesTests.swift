import ChatFunctions
import FirestoreModel
import Foundation
import HeraldTesting
import Testing
import WireFormats

/// The rules the package's shape keeps, checked from its own description (`swift package describe`)
/// and the imports of its sources: a function executable links no Foundation at all (full Foundation's
/// ICU data is 39 MB; FoundationEssentials is 4 MB of code and a thousand conformance records searched
/// at start), no second HTTP client or BoringSSL, no local cloud, no SQLite and no developer tool.
@Suite struct ModuleRulesTests {
    struct Target: Sendable {
        var name: String
        var path: String
        var targets: [String]
        var products: [String]
    }

    /// The function executables: every target in Functions/ (`herald infra` writes one per catalog entry).
    static func functions(in targets: [String: Target]) -> [String] {
        targets.values.filter { $0.path.hasPrefix("Functions/") }.map(\.name).sorted()
    }

    static let forbiddenForFunctions: Set<String> = [
        "Foundation", "FoundationInternationalization", "LocalCloud", "EmbeddedFirestore", "SQLiteNIO", "VaporCSQLite", "HeraldCLI", "HeraldTesting",
        "JWTKit", "X509", "Supervision", "Subprocess", "Hummingbird", "HummingbirdCore", "ServiceLifecycle", "AsyncAlgorithms", "ArgumentParser",
        "SwiftProtobuf", "FirestoreEventsProtobuf", "FoundationEssentials", "AsyncHTTPClient", "Crypto", "CryptoExtras", "_CryptoExtras",
    ]

    static func describe(root: URL = TestPaths.packageRoot) async throws -> [String: Target] {
        // Another scratch path than the build's: `swift test` holds .build's lock while the tests run.
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("herald-describe-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let result = try await ProcessRunner.run(
            URL(fileURLWithPath: "/usr/bin/env"),
            [
                "swift", "package", "--package-path", root.path, "--scratch-path", scratch.path, "describe", "--type", "json",
            ])
        guard result.status == 0, let json = try? JSONValue(parsing: Array(result.stdout)) else {
            throw StillBusy(description: "swift package describe failed: \(result.stderr.suffix(1000))")
        }
        var targets: [String: Target] = [:]
        for item in json["targets"]?.arrayValue ?? [] {
            guard let name = item["name"]?.stringValue, let path = item["path"]?.stringValue else { continue }
            targets[name] = Target(
                name: name, path: path, targets: item["target_dependencies"]?.arrayValue?.compactMap(\.stringValue) ?? [],
                products: item["product_dependencies"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        }
        return targets
    }

    /// `name` and every package target it depends on, directly or not.
    static func closure(of name: String, in targets: [String: Target]) -> [Target] {
        var seen: [String] = []
        var todo = [name]
        while let next = todo.popLast() {
            guard !seen.contains(next), let target = targets[next] else { continue }
            seen.append(next)
            todo += target.targets
        }
        return seen.compactMap { targets[$0] }
    }

    /// Every module a source file imports, except Foundation where it is only the fallback of
    /// `#if canImport(FoundationEssentials)` (the branch Linux never takes).
    static func imports(of file: String, reExportedOnly: Bool = false) -> [String] {
        var modules: [String] = []
        var fallback: [Bool] = []  // per open #if: are we in the #else of canImport(FoundationEssentials)?
        var essentialsIf: [Bool] = []
        var inString = false  // inside a multi-line string literal (a test's Python, a file's text)
        for raw in file.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = raw.trimmingWhitespace
            if line.components(separatedBy: "\"\"\"").count % 2 == 0 {  // a line that opens or closes one
                inString.toggle()
                continue
            }
            if inString || line.hasPrefix("//") {
                continue
            } else if line.hasPrefix("#if") {
                essentialsIf.append(line.contains("canImport(FoundationEssentials)"))
                fallback.append(false)
            } else if line.hasPrefix("#else") || line.hasPrefix("#elseif") {
                if let last = essentialsIf.last { fallback[fallback.count - 1] = last }
            } else if line.hasPrefix("#endif") {
                _ = essentialsIf.popLast()
                _ = fallback.popLast()
            } else if let range = line.range(of: "import "), line[..<range.lowerBound].allSatisfy({ $0 == "@" || $0.isLetter || $0 == "_" || $0 == " " }) {
                let rest = line[range.upperBound...].split(separator: " ")
                guard var module = rest.last.map(String.init) else { continue }
                if rest.count > 1 { module = String(module.split(separator: ".").first ?? "") }  // import struct A.B
                if fallback.contains(true) || reExportedOnly && !line.hasPrefix("@_exported") { continue }
                modules.append(module)
            }
        }
        return modules
    }

    /// Every module `name` reaches (package targets, their products, their sources' imports) that is in `forbidden`.
    /// `direct`: only the target itself and what it names, not what those reach (a test may use
    /// HeraldTesting, which is built on the local cloud).
    static func violations(
        of name: String, forbidden: Set<String>, in targets: [String: Target], direct: Bool = false, root: URL = TestPaths.packageRoot
    ) throws -> [String] {
        let graph =
            direct ? [targets[name]!] + targets[name]!.targets.compactMap { forbidden.contains($0) ? targets[$0] : nil } : closure(of: name, in: targets)
        #expect(direct || graph.count > 1, "\(name): \(graph.map(\.name))")
        var found: [String] = []
        for target in graph {
            if forbidden.contains(target.name) { found.append("\(name) depends on \(target.name)") }
            for product in target.products where forbidden.contains(product) { found.append("\(name) → \(target.name) links \(product)") }
            let folder = root.appendingPathComponent(target.path)
            let files = FileManager.default.enumerator(atPath: folder.path)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") } ?? []
            let cSources = FileManager.default.enumerator(atPath: folder.path)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".c") } ?? []
            #expect(!files.isEmpty || !cSources.isEmpty, "\(target.name) has no sources at \(target.path)")
            for file in files {
                let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
                for module in imports(of: text) where forbidden.contains(module) { found.append("\(name) → \(target.name)/\(file) imports \(module)") }
            }
        }
        return found
    }

    @Test func functionExecutablesReachNoFoundationHTTPClientCryptoLocalCloudOrSQLite() async throws {
        let targets = try await Self.describe()
        #expect(Self.functions(in: targets) == FunctionCatalog.names.sorted())
        for function in Self.functions(in: targets) {
            let found = try Self.violations(of: function, forbidden: Self.forbiddenForFunctions, in: targets)
            #expect(found.isEmpty, "\(found)")
        }
    }

    /// The domain (what a function is, and the chat's functions) is pure: plans from documents. It reaches
    /// no HTTP, no Google client, no runtime, no local cloud and no logging; the runtime does the I/O.
    /// The local cloud plays Google's part for any app: it knows Firestore, not the chat on top.
    @Test func theLocalCloudKnowsNoChatDomain() async throws {
        let targets = try await Self.describe()
        let found = try Self.violations(of: "LocalCloud", forbidden: ["HeraldCore", "ChatFunctions", "HeraldRuntime", "HeraldCLI"], in: targets)
        #expect(found.isEmpty, "\(found)")
    }

    /// The local Firestore is Firestore for any server: documents, queries and its protocols. Triggers,
    /// Google's other APIs and identity are the local cloud's, around it.
    @Test func theLocalFirestoreKnowsNoTriggersCloudOrChat() async throws {
        let targets = try await Self.describe()
        let forbidden: Set<String> = [
            "LocalCloud", "FirestoreEvents", "HeraldHTTPClient", "JWTKit", "Crypto", "HeraldCore", "ChatFunctions", "HeraldRuntime", "HeraldCLI",
        ]
        let found = try Self.violations(of: "EmbeddedFirestore", forbidden: forbidden, in: targets)
        #expect(found.isEmpty, "\(found)")
        #expect(targets["LocalCloud"]?.targets.contains("EmbeddedFirestore") == true)
    }

    @Test func theDomainReachesNoIOModule() async throws {
        let targets = try await Self.describe()
        let forbidden: Set<String> = [
            "GoogleClients", "HeraldHTTPClient", "HeraldRuntime", "LocalCloud", "EmbeddedFirestore", "HeraldCLI", "HeraldTesting", "AsyncHTTPClient", "NIO",
            "NIOCore",
            "NIOPosix", "NIOHTTP1", "Hummingbird", "JWTKit", "SQLiteNIO", "VaporCSQLite", "Logging", "Supervision", "Subprocess", "Foundation",
            "FoundationInternationalization",
        ]
        for domain in ["HeraldCore", "ChatFunctions", "ChatSchemaTools"] {
            let found = try Self.violations(of: domain, forbidden: forbidden, in: targets)
            #expect(found.isEmpty, "\(found)")
        }
    }

    /// Tests reach the local cloud through HeraldTesting (`withLocalCloud`, `RunningDev`): only the local
    /// cloud's own tests depend on it directly.
    @Test func testsReachTheLocalCloudThroughTheTestingModule() async throws {
        let targets = try await Self.describe()
        let tests = targets.values.filter { $0.path.hasPrefix("Tests/") || $0.path.hasPrefix("Benchmarks/") || $0.path.hasPrefix("Fuzz/") }
        #expect(tests.count > 5, "\(tests.map(\.name))")
        for target in tests where target.name != "LocalCloudTests" {
            let found = try Self.violations(of: target.name, forbidden: ["LocalCloud", "EmbeddedFirestore"], in: targets, direct: true)
            #expect(found.isEmpty, "\(found)")
        }
    }

    /// What the built executables load: FoundationEssentials at most, never full Foundation, its
    /// internationalization or ICU (whose data alone is 39 MB).
    @Test func functionExecutablesLoadNoFullFoundation() async throws {
        for function in FunctionCatalog.names {
            let ldd = try await ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/ldd"), [TestPaths.executable(function).path])
            #expect(ldd.status == 0, "\(ldd.stderr)")
            let libraries = ldd.stdoutText.split(separator: "\n").compactMap { $0.trimmingWhitespace.split(separator: " ").first.map(String.init) }
            for library in libraries where ["libFoundation.so", "libFoundationInternationalization.so", "lib_FoundationICU.so"].contains(library) {
                Issue.record("\(function) loads \(library)")
            }
            #expect(libraries.contains("libFoundationEssentials.so") || libraries.allSatisfy { !$0.contains("Foundation") }, "\(libraries)")
        }
    }

    /// Modules every target may import without naming them: the toolchain's own.
    static let toolchainModules: Set<String> = [
        "Foundation", "FoundationEssentials", "FoundationNetworking", "Glibc", "Darwin", "Musl", "Android", "Dispatch", "Synchronization",
        "_Concurrency", "Testing", "XCTest", "RegexBuilder", "Observation", "_StringProcessing",
    ]

    /// A target's files import only what the target declares (its targets and products) and the toolchain's
    /// own modules, and re-export nothing: where a type lives is what its file says.
    static func undeclaredImports(of target: Target, root: URL = TestPaths.packageRoot) throws -> [String] {
        // SQLite's C module comes with the SQLiteNIO product (the amalgamation it compiles), not as a product of its own.
        let builtWith: [String: String] = ["VaporCSQLite": "SQLiteNIO"]
        let allowed = toolchainModules.union(target.targets).union(target.products).union([target.name])
            .union(builtWith.filter { target.products.contains($0.value) }.keys)
        let folder = root.appendingPathComponent(target.path)
        let files = FileManager.default.enumerator(atPath: folder.path)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") } ?? []
        var found: [String] = []
        for file in files.sorted() {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            if imports(of: text, reExportedOnly: true).count > 0 { found.append("\(target.name)/\(file) re-exports a module (@_exported)") }
            for module in imports(of: text) where !allowed.contains(module) {
                found.append("\(target.name)/\(file) imports \(module), which \(target.name) does not declare")
            }
        }
        return found
    }

    @Test func everyImportIsDeclaredAndNothingIsReExported() async throws {
        let targets = try await Self.describe()
        #expect(targets.count > 20)
        var found: [String] = []
        for target in targets.values.sorted(by: { $0.name < $1.name }) { found += try Self.undeclaredImports(of: target) }
        #expect(found.isEmpty, "\(found.joined(separator: "\n"))")
    }

    /// The check itself: an import the target does not declare, and a re-export, are found.
    @Test func anUndeclaredImportAndAReExportAreFound() throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("herald-imports-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        try FileManager.default.createDirectory(at: scratch.appendingPathComponent("Sources/Lib"), withIntermediateDirectories: true)
        try "import WireFormats\nimport Logging\n".write(to: scratch.appendingPathComponent("Sources/Lib/A.swift"), atomically: true, encoding: .utf8)
        try "@_exported import WireFormats\n".write(to: scratch.appendingPathComponent("Sources/Lib/B.swift"), atomically: true, encoding: .utf8)
        let target = Target(name: "Lib", path: "Sources/Lib", targets: ["WireFormats"], products: [])
        #expect(
            try Self.undeclaredImports(of: target, root: scratch) == [
                "Lib/A.swift imports Logging, which Lib does not declare", "Lib/B.swift re-exports a module (@_exported)",
            ])
        let declared = Target(name: "Lib", path: "Sources/Lib", targets: ["WireFormats"], products: ["Logging"])
        #expect(try Self.undeclaredImports(of: declared, root: scratch) == ["Lib/B.swift re-exports a module (@_exported)"])
    }

    /// The check itself: Foundation in the fallback branch is allowed, anywhere else it is found.
    @Test func importsAreReadAsTheCompilerReadsThem() {
        let guarded = "#if canImport(FoundationEssentials)\nimport FoundationEssentials\n#else\nimport Foundation\n#endif\nimport Logging\n"
        #expect(Self.imports(of: guarded) == ["FoundationEssentials", "Logging"])
        #expect(Self.imports(of: "import Foundation\n@preconcurrency import NIOCore\nimport struct GRDB.Row\n") == ["Foundation", "NIOCore", "GRDB"])
        #expect(Self.imports(of: "#if canImport(Glibc)\nimport Glibc\n#else\nimport Foundation\n#endif\n") == ["Glibc", "Foundation"])
        let python = "let script = \"\"\"\n    import json\n    \"\"\"\nimport Logging\n@_exported import NIOCore\n"
        #expect(Self.imports(of: python) == ["Logging", "NIOCore"])
        #expect(Self.imports(of: python, reExportedOnly: true) == ["NIOCore"])
    }
}
