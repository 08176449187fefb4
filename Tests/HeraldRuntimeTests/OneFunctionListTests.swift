import ChatDemo
import ChatFunctions
import FirestoreModel
import Foundation
import GoogleClients
import HeraldCore
import HeraldHTTPClient
import HeraldTesting
import Testing
import WireFormats

@testable import HeraldCLI

/// "Adding a function: its type, one catalog line, `swift run herald infra`": a scratch copy of the
/// package gets a fifth function's source and its catalog line by text edit, and what `herald infra`
/// writes from the catalog covers it with no other edit: the executables and the module rules, Cloud
/// Run, deploy.sh, the images, compose and the benchmarks. With HERALD_SCRATCH_BUILD=1 the copy is
/// built and its `herald dev` runs the function.
@Suite(.serialized) struct OneFunctionListTests {
    /// The fifth function's source, as its author writes it: `OnReaction.swift` beside this file, compiled
    /// into this target too, so both tests hold the one definition.
    static var source: String {
        get throws { try String(contentsOf: TestPaths.packageRoot.appendingPathComponent("Tests/HeraldRuntimeTests/OnReaction.swift"), encoding: .utf8) }
    }
    static let fifth = FunctionDeclaration(OnReaction.self, sendsPushes: false)

    static let catalogFile = "Sources/Chat/ChatFunctions/FunctionCatalog.swift"
    static let catalogLine = "        FunctionDeclaration(OnReaction.self, sendsPushes: false),\n"

    /// The package's files as git sees them (tracked and new, not ignored), the function's source and its
    /// catalog line added, in a folder kept between runs (outside the package, one per checkout): a file
    /// is written only when it differs, so after the first run the copy's build is incremental.
    static func scratchCopy() async throws -> URL {
        let root = TestPaths.packageRoot
        let key = String(root.path.utf8.reduce(UInt64(14_695_981_039_346_656_037)) { ($0 ^ UInt64($1)) &* 1_099_511_628_211 }, radix: 36)
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("herald-fifth-function-\(key)")
        let listed = try await ProcessRunner.run(
            URL(fileURLWithPath: "/usr/bin/env"), ["git", "-C", root.path, "ls-files", "--cached", "--others", "--exclude-standard", "-z"])
        guard listed.status == 0 else { throw StillBusy(description: "git ls-files: \(listed.stderr)") }
        var wanted: [String: Data] = [:]
        for path in listed.stdout.split(separator: 0).map({ String(decoding: $0, as: UTF8.self) }) {
            guard let contents = FileManager.default.contents(atPath: root.appendingPathComponent(path).path) else { continue }  // deleted, not committed
            wanted[path] = contents
        }
        // The author's two edits.
        wanted["Sources/Chat/ChatFunctions/OnReaction.swift"] = Data(try source.utf8)
        var catalog = String(decoding: try #require(wanted[catalogFile]), as: UTF8.self)
        let end = try #require(catalog.range(of: "    ]\n\n    public static var names"), "the end of FunctionCatalog.all")
        catalog.insert(contentsOf: catalogLine, at: end.lowerBound)
        wanted[catalogFile] = Data(catalog.utf8)

        // What an earlier run left (its generated files, the fifth executable's folder) goes: `herald infra` writes them again.
        if let files = FileManager.default.enumerator(atPath: scratch.path) {
            while let path = files.nextObject() as? String {
                if path == ".build" || path == ".git" {
                    files.skipDescendants()
                    continue
                }
                var isFolder: ObjCBool = false
                FileManager.default.fileExists(atPath: scratch.appendingPathComponent(path).path, isDirectory: &isFolder)
                if !isFolder.boolValue, wanted[path] == nil { try FileManager.default.removeItem(at: scratch.appendingPathComponent(path)) }
            }
        }
        try? FileManager.default.removeItem(at: scratch.appendingPathComponent("Functions/onReaction"))
        for (path, contents) in wanted {
            let target = scratch.appendingPathComponent(path)
            guard FileManager.default.contents(atPath: target.path) != contents else { continue }
            try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            try contents.write(to: target)
            // Its mode too: scripts stay executable.
            if let mode = try? FileManager.default.attributesOfItem(atPath: root.appendingPathComponent(path).path)[.posixPermissions] {
                try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: target.path)
            }
        }
        return scratch
    }

    /// `swift build --product herald` in the copy; herald depends on every function executable, so this builds them too.
    static func buildHerald(in scratch: URL) async throws -> URL {
        let built = try await ProcessRunner.run(
            URL(fileURLWithPath: "/usr/bin/env"), ["swift", "build", "--package-path", scratch.path, "--product", "herald"])
        try #require(built.status == 0, "swift build in \(scratch.path): \(built.stdoutText.suffix(3000)) \(built.stderr.suffix(2000))")
        return scratch.appendingPathComponent(".build/debug/herald")
    }

    /// `herald infra` writes the list of executables into Package.swift: on one line while it fits
    /// swift-format's 160 columns, else one a line (which swift-format leaves as it is), and it reads
    /// either form back, so a long list never leaves a broken manifest.
    @Test func thePackagesListOfExecutablesIsRewrittenWhole() throws {
        let manifest = "import PackageDescription\nlet functionNames = [\"a\", \"b\"]\nlet package = 1\n"
        let many = (0..<12).map { "onSomethingWithALongName\($0)" }
        let long = try InfraFiles.packageManifest(manifest, names: many)
        #expect(long.contains("let functionNames = [\n    \"onSomethingWithALongName0\",\n"), "\(long)")
        #expect(long.hasSuffix("    \"onSomethingWithALongName11\",\n]\nlet package = 1\n"), "\(long)")
        #expect(try InfraFiles.packageManifest(long, names: many) == long)
        #expect(try InfraFiles.packageManifest(long, names: ["a", "b"]) == manifest)
        #expect(throws: (any Error).self) { try InfraFiles.packageManifest("let package = 1\n", names: ["a"]) }
    }

    /// Every file the catalog decides, written for the copy with the fifth function as `herald infra`
    /// writes them (the same `InfraFiles.all`), covers it: its executable, the module rules, Cloud Run,
    /// deploy.sh's lists, the images, compose and the benchmarks. No build: the test below builds the copy.
    @Test func aFifthFunctionsFilesComeFromItsCatalogLine() async throws {
        let scratch = try await Self.scratchCopy()
        for (path, text) in try InfraFiles.all(root: scratch, functions: FunctionCatalog.all + [Self.fifth]) {
            let url = scratch.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
        }
        let deployLists = try String(contentsOf: scratch.appendingPathComponent("Infra/functions.sh"), encoding: .utf8)
        #expect(deployLists.contains("onReaction"), "\(deployLists)")
        #expect(
            try InfraFiles.triggers(Self.fifth, schema: "default").map(\.pattern) == ["conversations/{conversationId}/messages/{messageId}/reactions/{userId}"])
        try await Self.checkTheCopyCovers(scratch)
    }

    /// The same, done for real: the copy's own `herald infra` writes the files, the copy builds `herald`
    /// with the new executable, its `herald dev` runs it on one event, and deploy.sh plans it. Two builds
    /// of the whole package (a cold one in a fresh clone): too long for the suite on two cores, so it
    /// runs with HERALD_SCRATCH_BUILD=1.
    @Test(.timeLimit(.minutes(60)))
    func aFifthFunctionBuildsAndRunsFromItsSourceAndOneCatalogLine() async throws {
        guard ProcessInfo.processInfo.environment["HERALD_SCRATCH_BUILD"] == "1" else {
            try skipTest("builds a copy of the whole package twice: run with HERALD_SCRATCH_BUILD=1 (the test above checks the files it writes)")
        }
        let scratch = try await Self.scratchCopy()
        func text(_ path: String) throws -> String { try String(contentsOf: scratch.appendingPathComponent(path), encoding: .utf8) }

        // Before `herald infra` the function has no executable; the copy's herald (with the new catalog) writes it.
        var herald = try await Self.buildHerald(in: scratch)
        let infra = try await ProcessRunner.run(herald, ["infra", "--package-path", scratch.path])
        try #require(infra.status == 0, "herald infra: \(infra.stderr)")
        #expect(infra.stdoutText.contains("Package.swift") && infra.stdoutText.contains("Functions/onReaction/main.swift"), "\(infra.stdoutText)")
        herald = try await Self.buildHerald(in: scratch)
        #expect(FileManager.default.isExecutableFile(atPath: scratch.appendingPathComponent(".build/debug/onReaction").path))
        try await Self.checkTheCopyCovers(scratch)

        // It runs under the copy's `herald dev`: a reaction to a message is counted on the message, once.
        let dev = try await RunningDev.start(["--seed", "demo"], herald: herald)
        defer { dev.kill() }
        let world = DemoWorld(schema: Schema.presets["default"]!, project: "e2e")
        let message = try world.message(from: "alice", in: "family", text: "Dinner at 6pm", id: "m-fifth", at: Timestamp.now())
        _ = try await dev.app.commit([message])
        let reaction = try message.document.sibling(path: message.document.path + "/reactions/bob")
        _ = try await dev.app.commit([Write(.update(reaction, fields: ["emoji": .string("👍")], mask: nil), precondition: .exists(false))])
        try await dev.waitUntilIdle(timeout: .seconds(120))
        #expect(try await dev.app.get(message.document)?["reactionCount"] == .integer(1), "\(dev.output.suffix(3000))")
        let delivered = try await dev.deliveries(state: "delivered").filter { $0["trigger"] == "onReaction" }
        #expect(delivered.count == 1, "\(delivered)")
        #expect(try await dev.deadLetters().isEmpty)
        #expect(try await dev.stop() == 0)

        // deploy.sh (the copy's herald derives the triggers): its service, account and trigger.
        let (status, run, stderr) = try await InfraTests().dryRun(
            ["herald-demo", "europe-west1", "--dry-run"], script: scratch.appendingPathComponent("Infra/deploy.sh"), herald: herald)
        defer { try? FileManager.default.removeItem(at: run.rendered) }
        #expect(status == 0, "\(stderr)")
        #expect(run.index("service-accounts create herald-onreaction") != nil)
        #expect(
            run.index("eventarc triggers create herald-onreaction", #"document=conversations/\{conversationId\}/messages/\{messageId\}/reactions/\{userId\}"#)
                != nil)
        #expect(run.index("herald-onreaction@", "roles/firebasecloudmessaging.admin") == nil, "it sends no pushes")
    }

    /// What every place that lists the functions must say of the fifth, once its files are written.
    static func checkTheCopyCovers(_ scratch: URL) async throws {
        func text(_ path: String) throws -> String { try String(contentsOf: scratch.appendingPathComponent(path), encoding: .utf8) }
        #expect(try text("Functions/onReaction/main.swift").contains("FunctionCommand<OnReaction>"))

        // The module rules hold it to what every function executable is held to.
        let targets = try await ModuleRulesTests.describe(root: scratch)
        #expect(ModuleRulesTests.functions(in: targets) == (FunctionCatalog.names + ["onReaction"]).sorted())
        #expect(try ModuleRulesTests.violations(of: "onReaction", forbidden: ModuleRulesTests.forbiddenForFunctions, in: targets, root: scratch).isEmpty)

        // Cloud Run, its image, its container beside the others, and the benchmarks.
        #expect(try text("Infra/cloudrun/onReaction.yaml").contains("name: herald-onreaction"))
        let images = try await ProcessRunner.run(
            URL(fileURLWithPath: "/bin/bash"), [scratch.appendingPathComponent("Infra/build-images.sh").path, "--dry-run"])
        #expect(images.status == 0, "\(images.stderr)")
        #expect(images.stdoutText.contains("-t localhost/herald-onreaction:latest"), "\(images.stdoutText)")
        let compose = try text("Infra/compose.yaml")
        #expect(compose.contains("--function=onReaction=http://onreaction:8080/"))
        #expect(compose.contains("image: localhost/herald-onreaction:latest"))
        let benchmarks = try await ProcessRunner.run(
            URL(fileURLWithPath: "/bin/bash"), [scratch.appendingPathComponent("Benchmarks/run.sh").path, "--dry-run"])
        #expect(benchmarks.status == 0, "\(benchmarks.stderr)")
        #expect(benchmarks.stdoutText.contains("swift-build-release onReaction"))
        let functions = FunctionCatalog.names + ["onReaction"]
        #expect(benchmarks.stdoutText.contains("functions: \(functions.joined(separator: " ")))"), "\(benchmarks.stdoutText)")
    }
}
