import ChatFunctions
import FirestoreEvents
import Foundation
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldCLI

/// "Adding a function: its type, one catalog line, `swift run herald infra`." A throwaway fifth
/// function is added to the catalog in a scratch copy of the package, the infra files are written as
/// `herald infra` writes them, and every place that lists the functions must then cover it with no
/// other edit: the executables and the module rules, Cloud Run, deploy.sh, the images, compose and the benchmarks.
@Suite struct OneFunctionListTests {
    struct OnReaction: EventFunction, ConfigurableFunction {
        static let name = "onReaction"
        static let summary = "A throwaway fifth function: reactions on messages."
        init(settings: FunctionSettings) {}
        var trigger: Trigger { Trigger(pattern: "conversations/{conversationId}/reactions/{reactionId}", kinds: [.created]) }
        func plan(for change: DocumentChange, reading: Reads) throws(NotReadYet) -> Plan { Plan(writes: []) }
    }

    /// The package's files as git sees them (tracked and new, not ignored), without its build.
    static func scratchCopy() async throws -> URL {
        let root = TestPaths.packageRoot
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("herald-fifth-\(UUID().uuidString)")
        let files = try await ProcessRunner.run(
            URL(fileURLWithPath: "/usr/bin/env"), ["git", "-C", root.path, "ls-files", "--cached", "--others", "--exclude-standard", "-z"])
        guard files.status == 0 else { throw StillBusy(description: "git ls-files: \(files.stderr)") }
        for path in files.stdout.split(separator: 0).map({ String(decoding: $0, as: UTF8.self) }) {
            let source = root.appendingPathComponent(path)
            guard FileManager.default.fileExists(atPath: source.path) else { continue }  // deleted, not yet committed
            let target = scratch.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: source, to: target)
        }
        return scratch
    }

    @Test func aFifthFunctionNeedsItsTypeAndOneCatalogLineOnly() async throws {
        let scratch = try await Self.scratchCopy()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let catalog = FunctionCatalog.all + [FunctionDeclaration(OnReaction.self, sendsPushes: true)]
        for (path, text) in try InfraFiles.all(root: scratch, functions: catalog) {
            let url = scratch.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
        }
        func text(_ path: String) throws -> String { try String(contentsOf: scratch.appendingPathComponent(path), encoding: .utf8) }

        // Its executable, and the module rules hold it to what every function executable is held to.
        #expect(try text("Functions/onReaction/main.swift").contains("FunctionCommand<OnReaction>"))
        let targets = try await ModuleRulesTests.describe(root: scratch)
        #expect(ModuleRulesTests.functions(in: targets) == (FunctionCatalog.names + ["onReaction"]).sorted())
        #expect(try ModuleRulesTests.violations(of: "onReaction", forbidden: ModuleRulesTests.forbiddenForFunctions, in: targets, root: scratch).isEmpty)

        // Cloud Run and deploy.sh: its service, account, invoker and trigger.
        #expect(try text("Infra/cloudrun/onReaction.yaml").contains("name: herald-onreaction"))
        // deploy.sh derives triggers with `herald schema deployment`; a herald built with the fifth function
        // would write these files (the catalog here is in memory, so a stand-in copies them out).
        let rendered = scratch.appendingPathComponent("deployment")
        try FileManager.default.createDirectory(at: rendered, withIntermediateDirectories: true)
        for (name, text) in try DeploymentFiles.files(schema: "default", ledgerCollection: "_herald/events/ledger", functions: catalog) {
            try Data(text.utf8).write(to: rendered.appendingPathComponent(name))
        }
        let herald = scratch.appendingPathComponent("herald-with-onReaction")
        try Data("#!/bin/sh\nmkdir -p \"$5\" && cp '\(rendered.path)'/* \"$5\"/\n".utf8).write(to: herald)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: herald.path)
        let (status, run, stderr) = try await InfraTests().dryRun(
            ["herald-demo", "europe-west1", "--dry-run"], script: scratch.appendingPathComponent("Infra/deploy.sh"), herald: herald)
        defer { try? FileManager.default.removeItem(at: run.rendered) }
        #expect(status == 0, "\(stderr)")
        #expect(run.index("service-accounts create herald-onreaction") != nil)
        #expect(run.index("eventarc triggers create herald-onreaction", #"document=conversations/\{conversationId\}/reactions/\{reactionId\}"#) != nil)
        #expect(run.index("herald-onreaction@", "roles/firebasecloudmessaging.admin") != nil, "it sends pushes")

        // Its image, its container beside the others, and the benchmarks.
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
        #expect(benchmarks.stdoutText.contains("functions: \((FunctionCatalog.names + ["onReaction"]).joined(separator: " ")))"))
    }
}
