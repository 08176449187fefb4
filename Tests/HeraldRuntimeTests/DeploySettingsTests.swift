import Foundation
import HeraldTesting
import Testing

/// `herald deploy --set NAME=VALUE` / `--unset NAME`: a function's settings in the manifests of the
/// functions that read them, kept by the next deploy (read back from the deployed services), and
/// refused by name before anything is built when no function reads them, the deployment sets them
/// itself, or a function would refuse the value.
@Suite struct DeploySettingsTests {
    struct Deployed {
        let folder: URL
        let run: ProcessResult
        func manifest(_ function: String) throws -> String {
            try String(contentsOf: folder.appendingPathComponent("rendered/\(function).yaml"), encoding: .utf8)
        }
    }

    /// A dry run rendering into a folder; `deployed` is what a stand-in `gcloud` says each service carries
    /// now (service name → env entries), as `gcloud run services describe --format=json` prints it.
    static func deploy(_ arguments: [String], deployed: [String: [String: String]] = [:]) async throws -> Deployed {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("herald-deploy-settings-\(UUID().uuidString)")
        let tools = folder.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: tools, withIntermediateDirectories: true)
        var answers = ""
        for (service, env) in deployed {
            // A value `secret:NAME` is a Secret Manager reference, as deploy.sh writes the push services' keys.
            let entries = env.map { entry in
                entry.value.hasPrefix("secret:")
                    ? #"{"name": "\#(entry.key)", "valueFrom": {"secretKeyRef": {"name": "\#(entry.value.dropFirst(7))", "key": "latest"}}}"#
                    : #"{"name": "\#(entry.key)", "value": "\#(entry.value)"}"#
            }.joined(separator: ", ")
            let json = #"{"spec": {"template": {"spec": {"containers": [{"name": "function", "env": [\#(entries)]}]}}}}"#
            answers += "  *\"services describe \(service) \"*) echo '\(json)'; exit 0 ;;\n"
        }
        let gcloud = tools.appendingPathComponent("gcloud")
        try Data("#!/bin/sh\ncase \"$*\" in\n\(answers)esac\necho 'ERROR: not found' >&2\nexit 1\n".utf8).write(to: gcloud)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: gcloud.path)
        var environment = ProcessInfo.processInfo.environment
        environment["HERALD_RENDER_DIR"] = folder.appendingPathComponent("rendered").path
        environment["PATH"] = tools.path + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        let run = try await ProcessRunner.run(
            TestPaths.executable("herald"),
            ["deploy", "my-project", "europe-west1"] + arguments + ["--dry-run", "--package-path", TestPaths.packageRoot.path], environment: environment)
        return Deployed(folder: folder, run: run)
    }

    static func entry(_ name: String, _ value: String) -> String { "- name: \(name)\n              value: '\(value)'" }

    @Test func aSettingGoesToTheFunctionsThatReadIt() async throws {
        let deployed = try await Self.deploy(["--set", "HERALD_PRESENCE_STALE_AFTER=120", "--set", "LOG_LEVEL=debug"])
        defer { try? FileManager.default.removeItem(at: deployed.folder) }
        #expect(deployed.run.status == 0, "\(deployed.run.stderr)")
        let sweeper = try deployed.manifest("presenceSweeper")
        #expect(sweeper.contains(Self.entry("HERALD_PRESENCE_STALE_AFTER", "120")), "\(sweeper)")
        for function in ["onMessageCreated", "onReadReceipt", "presenceSweeper", "tokenCleanup"] {
            let manifest = try deployed.manifest(function)
            #expect(manifest.contains(Self.entry("LOG_LEVEL", "debug")), "every function reads LOG_LEVEL: \(function)")
            if function != "presenceSweeper" { #expect(!manifest.contains("HERALD_PRESENCE_STALE_AFTER"), "\(function) does not read it") }
        }
    }

    /// The next deploy, without `--set`, keeps what the services carry; `--unset` removes one; `--set`
    /// replaces one.
    @Test func aRedeployKeepsWhatTheServicesCarry() async throws {
        let carried = ["herald-presencesweeper": ["HERALD_PRESENCE_STALE_AFTER": "120", "LOG_LEVEL": "debug", "HERALD_SCHEMA": "default"]]
        let again = try await Self.deploy([], deployed: carried)
        defer { try? FileManager.default.removeItem(at: again.folder) }
        #expect(again.run.status == 0, "\(again.run.stderr)")
        let kept = try again.manifest("presenceSweeper")
        #expect(kept.contains(Self.entry("HERALD_PRESENCE_STALE_AFTER", "120")) && kept.contains(Self.entry("LOG_LEVEL", "debug")), "\(kept)")
        #expect(kept.components(separatedBy: "name: HERALD_SCHEMA").count == 2, "the deployment's own settings are its own, not kept twice")
        #expect(again.run.stdoutText.contains("herald-presencesweeper keeps HERALD_PRESENCE_STALE_AFTER"), "\(again.run.stdoutText.suffix(2000))")

        let changed = try await Self.deploy(["--unset", "LOG_LEVEL", "--set", "HERALD_PRESENCE_STALE_AFTER=90"], deployed: carried)
        defer { try? FileManager.default.removeItem(at: changed.folder) }
        #expect(changed.run.status == 0, "\(changed.run.stderr)")
        let manifest = try changed.manifest("presenceSweeper")
        #expect(!manifest.contains("LOG_LEVEL") && manifest.contains(Self.entry("HERALD_PRESENCE_STALE_AFTER", "90")), "\(manifest)")
        #expect(manifest.components(separatedBy: "HERALD_PRESENCE_STALE_AFTER").count == 2, "one entry, the new value")
    }

    /// A redeploy that does not name the schema, the database or the ledger keeps the deployed ones: a
    /// setting changed a week later never moves the functions to the default database.
    @Test func aRedeployKeepsTheDeployedSchemaDatabaseAndLedger() async throws {
        let schema = #"{\"extends\": \"default\", \"userCollection\": \"profiles\"}"#
        let carried = [
            "herald-onmessagecreated": ["FIRESTORE_DATABASE": "chat", "HERALD_SCHEMA": schema, "HERALD_LEDGER_COLLECTION": "_herald/events/chatLedger"]
        ]
        let kept = try await Self.deploy(["--set", "LOG_LEVEL=debug"], deployed: carried)
        defer { try? FileManager.default.removeItem(at: kept.folder) }
        #expect(kept.run.status == 0, "\(kept.run.stderr)")
        #expect(kept.run.stdoutText.contains("# database: chat (the deployed services', kept)"), "\(kept.run.stdoutText.prefix(3000))")
        let manifest = try kept.manifest("onMessageCreated")
        #expect(
            manifest.contains(Self.entry("FIRESTORE_DATABASE", "chat"))
                && manifest.contains(Self.entry("HERALD_LEDGER_COLLECTION", "_herald/events/chatLedger")))
        #expect(manifest.contains("profiles"), "the deployed schema file is the one deployed again")
        #expect(kept.run.stdoutText.contains("--event-filters=database=chat"), "the triggers stay on the database")

        let moved = try await Self.deploy(["--database", "chat-eu", "--schema", "default"], deployed: carried)
        defer { try? FileManager.default.removeItem(at: moved.folder) }
        #expect(moved.run.status == 0, "\(moved.run.stderr)")
        let movedManifest = try moved.manifest("onMessageCreated")
        #expect(movedManifest.contains(Self.entry("FIRESTORE_DATABASE", "chat-eu")) && !movedManifest.contains("profiles"), "what is given wins")
    }

    /// A redeploy without push flags keeps the push services the deployed services use: a setting
    /// changed later never turns Expo or APNs off.
    @Test func aRedeployKeepsThePushServices() async throws {
        let carried = [
            "herald-onmessagecreated": [
                "HERALD_EXPO_PUSH": "on", "HERALD_EXPO_ACCESS_TOKEN": "secret:expo-push-token", "HERALD_APNS_KEY": "secret:herald-apns-key",
                "HERALD_APNS_KEY_ID": "ABCDE12345", "HERALD_APNS_TEAM_ID": "TEAM123456", "HERALD_APNS_TOPIC": "com.example.chat",
                "HERALD_APNS_ENVIRONMENT": "sandbox",
            ]
        ]
        let kept = try await Self.deploy(["--set", "LOG_LEVEL=debug"], deployed: carried)
        defer { try? FileManager.default.removeItem(at: kept.folder) }
        #expect(kept.run.status == 0, "\(kept.run.stderr)")
        for function in ["onMessageCreated", "onReadReceipt", "tokenCleanup"] {
            let manifest = try kept.manifest(function)
            #expect(
                manifest.contains(Self.entry("HERALD_EXPO_PUSH", "on")) && manifest.contains(Self.entry("HERALD_APNS_ENVIRONMENT", "sandbox")), "\(function)")
            #expect(manifest.contains("name: expo-push-token") && manifest.contains("name: herald-apns-key"), "\(function): \(manifest)")
        }
        #expect(!(try kept.manifest("presenceSweeper")).contains("HERALD_EXPO_PUSH"), "it sends no pushes")
        // A push flag given decides the push services alone.
        let changed = try await Self.deploy(["--expo"], deployed: carried)
        defer { try? FileManager.default.removeItem(at: changed.folder) }
        let manifest = try changed.manifest("onMessageCreated")
        #expect(manifest.contains(Self.entry("HERALD_EXPO_PUSH", "on")) && !manifest.contains("HERALD_APNS_KEY"), "\(manifest)")
    }

    @Test(arguments: [
        (["--set", "HERALD_PRESENCE_STALE_AFTER=soon"], "HERALD_PRESENCE_STALE_AFTER must be a positive number of seconds"),
        (["--set", "HERALD_TOKEN_VALIDATE=maybe"], "HERALD_TOKEN_VALIDATE must be true or false"),
        (["--set", "LOG_LEVEL=loud"], "LOG_LEVEL must be one of"),
        (["--set", "HERALD_SHOUT=1"], "--set HERALD_SHOUT: no function reads it"),
        (["--set", "HERALD_SCHEMA=prd001"], "the deployment sets it; use --schema"),
        (["--set", "HERALD_APNS_TOPIC=com.example"], "use --apns-topic"),
        (["--set", "LOG_LEVEL"], "--set takes NAME=VALUE"),
        (["--set", "LOG_LEVEL=debug", "--unset", "LOG_LEVEL"], "LOG_LEVEL is both --set and --unset"),
        (["--unset", "PORT"], "--unset PORT: no function reads it"),
    ])
    func aWrongSettingIsRefusedBeforeAnythingIsBuilt(arguments: [String], reason: String) async throws {
        let deployed = try await Self.deploy(arguments)
        defer { try? FileManager.default.removeItem(at: deployed.folder) }
        #expect(deployed.run.status != 0)
        #expect(deployed.run.stderr.contains(reason), "\(deployed.run.stderr)")
        #expect(!deployed.run.stdoutText.contains("[1/"), "no step ran: \(deployed.run.stdoutText.prefix(500))")
    }
}
