import ChatFunctions
import Foundation
import HeraldTesting
import Testing

/// `herald deploy PROJECT REGION`: one command that builds, pushes and deploys, tested in dry run.
@Suite struct DeployCommandTests {
    static func deploy(_ arguments: [String], path: String? = nil) async throws -> ProcessResult {
        try await ProcessRunner.run(
            TestPaths.executable("herald"), ["deploy"] + arguments + ["--package-path", TestPaths.packageRoot.path],
            environment: path.map { ["PATH": $0] })
    }

    @Test func aDryRunPrintsEveryStepInOrder() async throws {
        let run = try await Self.deploy(["my-project", "europe-west1", "--dry-run"])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdoutText.split(separator: "\n").map(String.init)
        let steps = lines.filter { $0.hasPrefix("[") }
        #expect(steps.map { String($0.prefix(5)) } == ["[1/4]", "[2/4]", "[3/4]", "[4/4]"], "\(steps)")
        func first(_ fragment: String) -> Int? { lines.firstIndex { $0.hasPrefix("+ ") && $0.contains(fragment) } }
        let repository = try #require(first("gcloud artifacts repositories create"), "\(run.stdoutText.prefix(2000))")
        let login = try #require(first("login --username oauth2accesstoken"))
        let repo = "europe-west1-docker.pkg.dev/my-project/herald"
        var pushes: [Int] = []
        for function in FunctionCatalog.names {
            let image = "herald-\(function.lowercased())"
            let built = try #require(first("-t localhost/\(image):latest"), "\(function) is built")
            let pushed = try #require(first("push localhost/\(image):latest docker://\(repo)/\(image):latest"), "\(function) is pushed")
            let deployed = try #require(first("gcloud run services replace"), "the services are deployed")
            #expect(repository < login && login < built && built < pushed && pushed < deployed)
            pushes.append(pushed)
        }
        let lastDeploy = try #require(lines.lastIndex { $0.contains("gcloud run services replace") })
        #expect(pushes.allSatisfy { $0 < lastDeploy })
        #expect(run.stdoutText.contains("dry run done: 4 steps printed"))
    }

    /// deploy.sh renders the services' manifests into a temporary folder: gone at the end (each dry run
    /// used to leave one behind).
    @Test func aDryRunLeavesNoTemporaryFolder() async throws {
        let temporary = FileManager.default.temporaryDirectory.appendingPathComponent("herald-deploy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: temporary, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: temporary) }
        var environment = ProcessInfo.processInfo.environment
        environment["TMPDIR"] = temporary.path
        environment["HERALD_RENDER_DIR"] = nil
        let run = try await ProcessRunner.run(
            TestPaths.executable("herald"), ["deploy", "my-project", "europe-west1", "--dry-run", "--package-path", TestPaths.packageRoot.path],
            environment: environment)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdoutText.contains("rendered into \(temporary.path)/"), "\(run.stdoutText.prefix(3000))")
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary.path).isEmpty)
    }

    /// A project id or region that could carry shell syntax is refused by name; a schema file's path,
    /// whatever it holds, reaches every command as one word, and nothing in it runs.
    @Test func nothingGivenToDeployRunsInAShell() async throws {
        for (project, region) in [("p;touch x", "europe-west1"), ("my-project", "eu$(id)"), ("my-project", "europe-west1 --quiet")] {
            let run = try await Self.deploy([project, region, "--dry-run"])
            #expect(run.status != 0 && run.stderr.contains("must be lower-case letters, digits and dashes"), "\(project) \(region): \(run.stderr)")
        }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("herald-quoting-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let marker = scratch.appendingPathComponent("ran")
        // Directories named by shell syntax: `$(touch …)`, backquotes, a semicolon, spaces and a quote.
        let folder = scratch.appendingPathComponent("a b;`touch \(marker.path)`;$(touch \(marker.path))'")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let schema = folder.appendingPathComponent("my schema.json")
        try Data(#"{"extends": "default"}"#.utf8).write(to: schema)
        let run = try await Self.deploy(["my-project", "europe-west1", "--schema", schema.path, "--dry-run"])
        #expect(run.status == 0, "\(run.stderr.suffix(2000))")
        #expect(!FileManager.default.fileExists(atPath: marker.path), "a command in the schema's path ran")
        #expect(run.stdoutText.contains("dry run done"))
    }

    @Test func anOwnRepositoryIsUsedAsItIs() async throws {
        let run = try await Self.deploy(["my-project", "us-central1", "--repository", "us-docker.pkg.dev/other/images", "--dry-run"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(!run.stdoutText.contains("repositories create"), "no repository is created for one given")
        #expect(run.stdoutText.contains("docker://us-docker.pkg.dev/other/images/herald-onmessagecreated:latest"))
        #expect(run.stdoutText.contains("--password-stdin \"$0\"' us-docker.pkg.dev"))
    }

    @Test func theLedgerCollectionIsPassedOnToTheDeployment() async throws {
        let run = try await Self.deploy(["my-project", "europe-west1", "--ledger-collection", "_herald/events/heraldLedger", "--dry-run"])
        #expect(run.status == 0, "\(run.stderr)")
        // deploy.sh got it: the TTL policy goes to that collection's group, not to every collection named `ledger`.
        #expect(run.stdoutText.contains("ttls update expireAt --collection-group=heraldLedger --enable-ttl"), "\(run.stdoutText.suffix(3000))")
        #expect(!run.stdoutText.contains("--collection-group=ledger "))
    }

    @Test func wrongSettingsAndMissingToolsAreNamed() async throws {
        let badProject = try await Self.deploy(["My_Project", "europe-west1", "--dry-run"])
        #expect(badProject.status == 64 && badProject.stderr.contains("PROJECT must be"), "\(badProject.stderr)")
        let badSchema = try await Self.deploy(["p", "europe-west1", "--schema", "whatsapp", "--dry-run"])
        #expect(badSchema.status == 64 && badSchema.stderr.contains("--schema whatsapp: unknown schema"), "\(badSchema.stderr)")
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("empty-path-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: empty) }
        let noTools = try await Self.deploy(["p", "europe-west1"], path: empty.path)
        #expect(noTools.status != 0 && noTools.stdoutText.contains("✗ gcloud on this machine"), "\(noTools.stdoutText)")
        #expect(noTools.stderr.contains("not deploying"), "\(noTools.stderr)")
        #expect(!noTools.stdoutText.contains("[1/"), "nothing ran")
    }
}
