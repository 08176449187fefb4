import ChatFunctions
import FirestoreModel
import Foundation
import HeraldTesting
import Testing

/// Infra/deploy.sh --dry-run: every command, in order, consistent with the code's schemas; and every
/// file under Infra/ linted.
@Suite struct InfraTests {
    static let script = TestPaths.packageRoot.appendingPathComponent("Infra/deploy.sh")

    struct DryRun {
        let commands: [String]
        let rendered: URL

        /// The index of the first command containing every fragment.
        func index(_ fragments: String...) -> Int? {
            commands.firstIndex { command in fragments.allSatisfy(command.contains) }
        }
        func all(_ fragment: String) -> [String] { commands.filter { $0.contains(fragment) } }
    }

    /// - herald: what deploy.sh runs as `herald` (`schema deployment`): the executable this suite built by default.
    func dryRun(_ arguments: [String], script: URL = Self.script, herald: URL = TestPaths.executable("herald")) async throws -> (
        status: Int32, run: DryRun, stderr: String
    ) {
        let rendered = FileManager.default.temporaryDirectory.appendingPathComponent("herald-render-\(UUID().uuidString)")
        var environment = ProcessInfo.processInfo.environment
        environment["HERALD_RENDER_DIR"] = rendered.path
        // deploy.sh derives the schema's triggers and indexes with herald (`herald schema deployment`): the one this suite built.
        environment["HERALD"] = herald.path
        let result = try await ProcessRunner.run(URL(fileURLWithPath: "/bin/bash"), [script.path] + arguments, environment: environment)
        let commands = result.stdoutText.split(separator: "\n").filter { $0.hasPrefix("+ ") }.map { String($0.dropFirst(2)) }
        return (result.status, DryRun(commands: commands, rendered: rendered), result.stderr)
    }

    @Test(arguments: ["default", "prd000", "prd001", "prd004"])
    func theDryRunDeploysEverythingInOrder(preset: String) async throws {
        let (status, run, stderr) = try await dryRun(["herald-demo", "europe-west1", "--schema", preset, "--dry-run"])
        defer { try? FileManager.default.removeItem(at: run.rendered) }
        #expect(status == 0, "\(stderr)")
        #expect(run.commands.count > 30)
        #expect(run.commands.allSatisfy { $0.hasPrefix("gcloud ") && $0.contains("herald-demo") }, "every command names the project")

        // Order: APIs, accounts, roles, indexes, services, invokers, triggers, jobs.
        let phases = [
            run.index("gcloud services enable", "eventarc.googleapis.com"),
            run.index("service-accounts create herald-onmessagecreated"),
            run.index("add-iam-policy-binding herald-demo", "roles/datastore.user"),
            run.index("firestore indexes composite create"),
            run.index("run services replace"),
            run.index("roles/run.invoker"),
            run.index("eventarc triggers create"),
            run.index("scheduler jobs create http herald-presence-sweep"),
        ]
        #expect(phases.allSatisfy { $0 != nil }, "\(phases)")
        #expect(phases.compactMap { $0 } == phases.compactMap { $0 }.sorted(), "phases out of order: \(phases)")

        // Idempotent: whatever is created is looked for first.
        for create in run.all(" create ") where !create.contains("indexes composite create") {
            #expect((create.contains(" describe ") || create.contains(" list ")) && create.contains(" || "), "not guarded: \(create)")
        }

        // Least privilege: FCM only for the functions that push; each function its own account.
        let fcm = run.all("roles/firebasecloudmessaging.admin")
        #expect(fcm.count == 3 && !fcm.contains { $0.contains("presencesweeper") })
        #expect(run.all("run services replace").count == 4)
        for name in ["onmessagecreated", "onreadreceipt", "presencesweeper", "tokencleanup"] {
            let firestore = run.all("herald-\(name)@herald-demo.iam.gserviceaccount.com --role=roles/datastore.user")
            #expect(firestore.count == 1)
            // This database only, by an IAM condition on its resource name.
            #expect(firestore.first?.contains(#"--condition=expression=resource.name==\"projects/herald-demo/databases/\(default\)\""#) == true, "\(firestore)")
        }
        // Pub/Sub may mint tokens for the trigger's account only, not for every account of the project.
        #expect(run.index("iam service-accounts add-iam-policy-binding herald-trigger@", "gcp-sa-pubsub", "roles/iam.serviceAccountTokenCreator") != nil)
        #expect(run.index("projects add-iam-policy-binding", "roles/iam.serviceAccountTokenCreator") == nil)
        #expect(run.all("roles/run.invoker").count == 5)
        #expect(run.index("herald-presencesweeper", "herald-trigger@", "roles/run.invoker") == nil, "Eventarc never calls presenceSweeper")

        // Triggers: the event types and document patterns each function's code declares.
        let schema = try #require(Schema.presets[preset])
        let escaped = { (pattern: String) in pattern.replacingOccurrences(of: "{", with: "\\{").replacingOccurrences(of: "}", with: "\\}") }
        for (name, kind, pattern) in [
            ("herald-onmessagecreated", "created", schema.messagePattern),
            ("herald-onreadreceipt", "updated", schema.messagePattern),
            ("herald-onreadreceipt-deleted", "deleted", schema.messagePattern),
            ("herald-tokencleanup", "written", schema.userPattern),
        ] {
            let create = try #require(run.commands.first { $0.contains("eventarc triggers create \(name) ") }, "\(name)")
            #expect(create.contains("--event-filters=type=google.cloud.firestore.document.v1.\(kind) "), "\(create)")
            #expect(create.contains("--event-filters-path-pattern=document=\(escaped(pattern)) "), "\(preset): \(create)")
            #expect(create.contains("--event-data-content-type=application/protobuf") && create.contains("--service-account=herald-trigger@"))
            #expect(run.index("subscriptions update SUBSCRIPTION_OF_\(name)", "--dead-letter-topic=", "--max-delivery-attempts=") != nil)
        }
        // Scheduler: every minute and daily, with OIDC tokens of the scheduler's account for each service's URL.
        let sweep = try #require(run.commands.first { $0.contains("scheduler jobs") && $0.contains("herald-presence-sweep") })
        #expect(sweep.contains("--oidc-service-account-email=herald-scheduler@") && sweep.contains(#"--schedule=\*\ \*\ \*\ \*\ \*"#))
        #expect(sweep.contains("--oidc-token-audience=https://herald-presencesweeper-PROJECT_NUMBER.europe-west1.run.app "))
        let cleanup = try #require(run.commands.first { $0.contains("scheduler jobs") && $0.contains("herald-token-cleanup") })
        #expect(cleanup.contains("/sweep ") && cleanup.contains(#"--schedule=0\ 3\ \*\ \*\ \*"#))

        // The rendered manifests carry the schema, the image and the audience the function checks.
        let manifest = try String(contentsOf: run.rendered.appendingPathComponent("onMessageCreated.yaml"), encoding: .utf8)
        // Each function its own image, deployed by digest, never by a tag that can move; it serves by default.
        #expect(manifest.contains("value: '\(preset)'\n"))
        #expect(manifest.contains("- name: HERALD_LEDGER_COLLECTION\n              value: '_herald/events/ledger'\n"), "\(manifest)")
        #expect(manifest.contains("image: europe-west1-docker.pkg.dev/herald-demo/herald/herald-onmessagecreated@DIGEST_OF_herald-onmessagecreated\n"))
        #expect(manifest.contains("args: [\"serve\"]"))
        #expect(manifest.contains("value: https://herald-onmessagecreated-PROJECT_NUMBER.europe-west1.run.app\n"))
        #expect(manifest.contains("value: herald-trigger@herald-demo.iam.gserviceaccount.com\n") && manifest.contains("HERALD_ALLOWED_CALLERS"))
        let sweeper = try String(contentsOf: run.rendered.appendingPathComponent("presenceSweeper.yaml"), encoding: .utf8)
        #expect(sweeper.contains("value: herald-scheduler@herald-demo.iam.gserviceaccount.com\n"))
        let cleaner = try String(contentsOf: run.rendered.appendingPathComponent("tokenCleanup.yaml"), encoding: .utf8)
        #expect(cleaner.contains("value: herald-trigger@herald-demo.iam.gserviceaccount.com,herald-scheduler@herald-demo.iam.gserviceaccount.com\n"))
        #expect(manifest.contains("run.googleapis.com/ingress: internal") && !manifest.contains("PROJECT_ID"))
        // Indexes: the composite index of the presence query, derived from the schema.
        let index = try #require(run.commands.first { $0.contains("indexes composite create") })
        #expect(index.contains("field-path=\(schema.onlineField)") && index.contains("field-path=\(schema.heartbeatField)"))
        #expect(run.index("ttls update expireAt", "--enable-ttl") != nil)
    }

    /// A ledger of its own name (an app of yours keeps a `ledger` collection): the TTL policy and the index
    /// exemption go to its group, not to every collection named `ledger`, and every function gets its path.
    @Test func aLedgerOfItsOwnNameTakesTheTTLAndTheFunctionsWithIt() async throws {
        let (status, run, stderr) = try await dryRun(["herald-demo", "europe-west1", "--ledger-collection", "_herald/events/heraldLedger", "--dry-run"])
        defer { try? FileManager.default.removeItem(at: run.rendered) }
        #expect(status == 0, "\(stderr)")
        #expect(run.index("ttls update expireAt", "--collection-group=heraldLedger ", "--enable-ttl") != nil, "\(run.all("ttls update"))")
        #expect(run.index("ttls update expireAt", "--collection-group=ledger ") == nil, "no TTL on every collection named ledger")
        #expect(run.index("indexes fields update expireAt", "--collection-group=heraldLedger ", "--disable-indexes") != nil)
        for function in FunctionCatalog.names {
            let manifest = try String(contentsOf: run.rendered.appendingPathComponent("\(function).yaml"), encoding: .utf8)
            #expect(manifest.contains("- name: HERALD_LEDGER_COLLECTION\n              value: '_herald/events/heraldLedger'\n"), "\(function)")
        }
    }

    @Test func badArgumentsAreRefusedBeforeAnything() async throws {
        for arguments in [
            [], ["only-project"], ["p", "r", "--schema", "prd999", "--dry-run"], ["Bad_Project", "europe-west1", "--dry-run"],
            ["p", "europe-west1", "--nonsense"], ["p", "europe-west1", "--notification-channel", "me@example.com", "--dry-run"],
            ["p", "europe-west1", "--notification-channel", "projects/p/notificationChannels/1;rm -rf /", "--dry-run"],
            ["p", "europe-west1", "--ledger-collection", "_herald/events", "--dry-run"],
            ["p", "europe-west1", "--ledger-collection", "_herald/events/ledger;rm -rf /", "--dry-run"],
        ] {
            let (status, run, stderr) = try await dryRun(arguments)
            #expect(status == 2, "\(arguments)")
            #expect(run.commands.isEmpty && !stderr.isEmpty, "\(arguments): \(stderr)")
        }
    }

    /// Every command must get past gcloud's own argument parser (it then stops for want of an account).
    @Test func gcloudAcceptsEveryCommand() async throws {
        guard let gcloud = Self.tool("gcloud") else {
            try skipTest("gcloud is not installed")
        }
        let (status, run, _) = try await dryRun(["herald-demo", "europe-west1", "--schema", "prd004", "--dry-run"])
        defer { try? FileManager.default.removeItem(at: run.rendered) }
        #expect(status == 0)
        let single = run.commands.flatMap { $0.components(separatedBy: " >/dev/null 2>&1 || ") }
            .flatMap { $0.components(separatedBy: " >/dev/null 2>&1 && ") }.flatMap { $0.components(separatedBy: " || gcloud ") }
            .map { $0.hasPrefix("gcloud ") ? $0 : "gcloud " + $0 }
        let configuration = FileManager.default.temporaryDirectory.appendingPathComponent("herald-gcloud-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: configuration) }
        var environment = ProcessInfo.processInfo.environment
        environment["CLOUDSDK_CONFIG"] = configuration.path
        environment["CLOUDSDK_CORE_DISABLE_PROMPTS"] = "1"
        environment["PATH"] = gcloud.deletingLastPathComponent().path + ":" + (environment["PATH"] ?? "")
        let gcloudEnvironment = environment
        // Unique shapes only (the same command for another function adds nothing), four at a time.
        var seen = Set<String>()
        let distinct = single.filter { seen.insert($0.split(separator: " ").prefix(5).joined(separator: " ")).inserted }
        try await withThrowingTaskGroup(of: (String, ProcessResult).self) { group in
            var next = 0
            func start() {
                let command = distinct[next]
                next += 1
                group.addTask { (command, try await ProcessRunner.run(URL(fileURLWithPath: "/bin/bash"), ["-c", command], environment: gcloudEnvironment)) }
            }
            while next < min(4, distinct.count) { start() }
            for try await (command, result) in group {
                let said = result.stderr + result.stdoutText
                #expect(
                    !said.contains("unrecognized arguments") && !said.contains("Invalid choice") && !said.contains("argument --")
                        && !said.contains("Invalid value"), "gcloud refused: \(command)\n\(said.suffix(600))")
                if next < distinct.count { start() }
            }
        }
    }

    /// yamllint, shellcheck and jq over Infra/, Scripts/, Benchmarks/ and CI's script; in CI (which installs them) a missing one fails.
    @Test func infraFilesLintClean() async throws {
        let root = TestPaths.packageRoot
        let files = try ["Infra", "Scripts", "Benchmarks"].flatMap { folder in
            try FileManager.default.subpathsOfDirectory(atPath: root.appendingPathComponent(folder).path).map { "\(folder)/" + $0 }
        }.filter { !$0.contains("/.") }  // not a local virtualenv or build folder
        let yaml = files.filter { $0.hasSuffix(".yaml") || $0.hasSuffix(".yml") } + [".yamllint"]
        let shell = files.filter { $0.hasSuffix(".sh") } + [".ci/run"]
        let json = files.filter { $0.hasSuffix(".json") }
        #expect(!yaml.isEmpty && !shell.isEmpty && !json.isEmpty)
        let linters: [(String, URL?, [String])] = [
            ("yamllint", Self.tool("yamllint", alsoIn: root.appendingPathComponent(".venv/bin").path), ["-s"] + yaml),
            ("shellcheck", Self.tool("shellcheck"), shell),
            ("jq", Self.tool("jq"), ["-e", "type == \"object\""] + json),
        ]
        var missing: [String] = []
        for (name, tool, arguments) in linters {
            guard let tool else {
                if PythonReference.isRequired { Issue.record("\(name) is missing: .ci/run installs it") } else { missing.append(name) }
                continue
            }
            let result = try await ProcessRunner.run(
                tool, arguments.map { $0.hasPrefix("-") || $0.hasPrefix("type") ? $0 : root.appendingPathComponent($0).path })
            #expect(result.status == 0, "\(name):\n\(result.stdoutText)\(result.stderr)")
        }
        // The others ran; the test still says it was not all done.
        if !missing.isEmpty { try skipTest("not installed: \(missing.joined(separator: ", ")) (.ci/run installs them)") }
    }

    /// Each function is declared once (`FunctionCatalog.all`); its executable, manifest and deploy.sh's
    /// lists are written from it by `herald infra`, so a function added to the catalog but not written
    /// out (or a generated file edited by hand) fails here.
    @Test func executablesAndInfraAreWhatTheFunctionCatalogSays() async throws {
        let check = try await ProcessRunner.run(TestPaths.executable("herald"), ["infra", "--check", "--package-path", TestPaths.packageRoot.path])
        #expect(check.status == 0, "\(check.stdoutText)\(check.stderr)")
        let root = TestPaths.packageRoot
        let executables = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Functions").path).filter { !$0.hasPrefix(".") }
        #expect(Set(executables) == Set(FunctionCatalog.names), "a folder in Functions/ is an executable: no other may be there")
        let manifests = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Infra/cloudrun").path).filter { $0.hasSuffix(".yaml") }
        #expect(Set(manifests) == Set(FunctionCatalog.names.map { "\($0).yaml" }))
    }

    /// What a function's image holds besides its executable: CA certificates, a non-root user, and the
    /// time zone database its users' quiet hours need (without the posix/ and right/ copies).
    @Test func imageRootHoldsCertificatesUsersAndTimeZones() async throws {
        guard FileManager.default.fileExists(atPath: "/usr/share/zoneinfo/Europe/Berlin") else {
            try skipTest("no time zone database here (apt-get install tzdata)")
        }
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("herald-rootfs-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: out) }
        let result = try await ProcessRunner.run(
            URL(fileURLWithPath: "/bin/bash"),
            [
                TestPaths.packageRoot.appendingPathComponent("Infra/image/rootfs.sh").path, "/bin/true", out.path, "app",
            ])
        #expect(result.status == 0, "\(result.stderr)")
        for path in [
            "usr/local/bin/app", "etc/ssl/certs/ca-certificates.crt", "etc/passwd", "usr/share/zoneinfo/Europe/Berlin",
            "usr/share/zoneinfo/America/Argentina/Buenos_Aires", "usr/share/zoneinfo/Pacific/Auckland",
        ] {
            #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent(path).path), "\(path)")
        }
        // Signatures are the BoringSSL compiled in with TLS: no OpenSSL in the image.
        let files = FileManager.default.enumerator(atPath: out.path)?.compactMap { $0 as? String } ?? []
        #expect(!files.contains { $0.contains("libcrypto") || $0.contains("libssl") }, "\(files.filter { $0.contains("lib") })")
        for path in ["usr/share/zoneinfo/posix", "usr/share/zoneinfo/right", "usr/share/zoneinfo/tzdata.zi", "usr/share/zoneinfo/zone1970.tab"] {
            #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent(path).path), "\(path)")
        }
    }

    static func tool(_ name: String, alsoIn directory: String? = nil) -> URL? {
        let path = ((directory.map { [$0] } ?? []) + (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init))
        return path.map { URL(fileURLWithPath: $0).appendingPathComponent(name) }.first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }
}
