import Foundation
import HeraldTesting
import Testing

/// `herald deploy --check`, and the same check first in every deployment, against a stand-in gcloud on
/// PATH (Tests/Fixtures/gcloud-standin) answering with gcloud's own JSON and error lines: a project that
/// is ready, one without a Firestore database, and one whose database is in nam5 while the functions go
/// to europe-west1.
@Suite struct DeployCheckTests {
    struct Scenario {
        let folder: URL
        let bin: URL

        /// A project as gcloud would describe it; `database`: nil for none, else its location and type.
        static func make(database: (location: String, type: String)?, firebase: Bool = true, owner: Bool = true) throws -> Scenario {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gcloud-\(UUID().uuidString)")
            let bin = folder.appendingPathComponent("bin")
            try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
            func write(_ name: String, _ text: String) throws { try Data(text.utf8).write(to: folder.appendingPathComponent(name)) }
            try write("account", "deployer@example.com\n")
            try write(
                "projects-describe.json",
                #"{"createTime": "2026-01-05T10:00:00.000Z", "lifecycleState": "ACTIVE", "name": "Team chat", "projectId": "team-chat", "projectNumber": "123456789012"}"#
            )
            if let database {
                try write(
                    "databases-describe.json",
                    #"{"appEngineIntegrationMode": "DISABLED", "concurrencyMode": "PESSIMISTIC", "createTime": "2026-01-05T10:01:00.000Z", "deleteProtectionState": "DELETE_PROTECTION_DISABLED", "locationId": "\#(database.location)", "name": "projects/team-chat/databases/(default)", "pointInTimeRecoveryEnablement": "POINT_IN_TIME_RECOVERY_DISABLED", "type": "\#(database.type)", "uid": "b1c2d3e4-0000-4000-8000-000000000000", "updateTime": "2026-01-05T10:01:00.000Z", "versionRetentionPeriod": "3600s"}"#
                )
            } else {
                try write(
                    "databases-describe.error",
                    "ERROR: (gcloud.firestore.databases.describe) NOT_FOUND: Project 'team-chat' or database '(default)' does not exist.\n")
            }
            let services = ["firestore.googleapis.com", "run.googleapis.com"] + (firebase ? ["firebase.googleapis.com", "fcm.googleapis.com"] : [])
            try write(
                "services-list.json",
                "["
                    + services.map {
                        #"{"config": {"name": "\#($0)", "title": "\#($0)"}, "name": "projects/123456789012/services/\#($0)", "parent": "projects/123456789012", "state": "ENABLED"}"#
                    }
                    .joined(separator: ", ") + "]")
            try write(
                "iam-policy.json",
                #"{"bindings": [{"members": ["user:\#(owner ? "deployer" : "someone")@example.com"], "role": "roles/owner"}, {"members": ["user:deployer@example.com"], "role": "roles/viewer"}], "etag": "BwX1", "version": 1}"#
            )
            try write(
                "repository.error",
                "ERROR: (gcloud.artifacts.repositories.describe) NOT_FOUND: Requested entity was not found.\n")
            // gcloud itself, and the tools the check looks for.
            try FileManager.default.copyItem(at: TestPaths.fixture("gcloud-standin/gcloud"), to: bin.appendingPathComponent("gcloud"))
            for tool in ["buildah", "jq", "curl"] {
                try Data("#!/bin/sh\nexit 0\n".utf8).write(to: bin.appendingPathComponent(tool))
                try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: bin.appendingPathComponent(tool).path)
            }
            // PATH is this folder alone: what the check finds is what the scenario put there.
            for tool in ["sh", "bash", "cat"] {
                try FileManager.default.createSymbolicLink(at: bin.appendingPathComponent(tool), withDestinationURL: URL(fileURLWithPath: "/bin/\(tool)"))
            }
            return Scenario(folder: folder, bin: bin)
        }

        func run(_ arguments: [String]) async throws -> ProcessResult {
            var environment = ProcessInfo.processInfo.environment
            environment["GCLOUD_STANDIN"] = folder.path
            environment["PATH"] = bin.path
            return try await ProcessRunner.run(
                TestPaths.executable("herald"), ["deploy"] + arguments + ["--package-path", TestPaths.packageRoot.path], environment: environment)
        }

        var calls: String { (try? String(contentsOf: folder.appendingPathComponent("calls.log"), encoding: .utf8)) ?? "" }
    }

    /// A redeploy without --database checks the database the deployed services use, as deploy.sh keeps it.
    @Test func aRedeployChecksTheDeployedDatabase() async throws {
        let scenario = try Scenario.make(database: ("nam5", "FIRESTORE_NATIVE"))
        defer { try? FileManager.default.removeItem(at: scenario.folder) }
        try Data(
            #"{"spec": {"template": {"spec": {"containers": [{"name": "function", "env": [{"name": "FIRESTORE_DATABASE", "value": "chat"}]}]}}}}"#.utf8
        ).write(to: scenario.folder.appendingPathComponent("run-services-describe.json"))
        let check = try await scenario.run(["team-chat", "us-central1", "--check"])
        #expect(check.stdoutText.contains("database chat"), "\(check.stdoutText)")
        #expect(scenario.calls.contains("firestore databases describe --database=chat"), "\(scenario.calls)")
    }

    @Test func aReadyProjectIsReady() async throws {
        let scenario = try Scenario.make(database: ("europe-west1", "FIRESTORE_NATIVE"))
        defer { try? FileManager.default.removeItem(at: scenario.folder) }
        let check = try await scenario.run(["team-chat", "europe-west1", "--check"])
        #expect(check.status == 0, "\(check.stdoutText)\(check.stderr)")
        let out = check.stdoutText
        #expect(out.contains("✓ signed in to gcloud as deployer@example.com") && out.contains("✓ Firestore database (default) in Native mode"), "\(out)")
        #expect(out.contains("✓ database (default) is in europe-west1, with the functions") && out.contains("✓ deployer@example.com is an owner of team-chat"))
        #expect(out.contains("! APIs not enabled yet (the deployment enables them): eventarc.googleapis.com"), "\(out)")
        #expect(out.contains("fix: gcloud artifacts repositories create herald --repository-format=docker --location=europe-west1 --project=team-chat"))
        #expect(out.hasSuffix("ready to deploy\n"), "\(out)")
        #expect(scenario.calls.contains("firestore databases describe --database=(default) --project=team-chat --format=json"), "\(scenario.calls)")
    }

    @Test func noDatabaseIsFatalAndStopsTheDeploymentBeforeBuilding() async throws {
        let scenario = try Scenario.make(database: nil, firebase: false, owner: false)
        defer { try? FileManager.default.removeItem(at: scenario.folder) }
        let check = try await scenario.run(["team-chat", "europe-west1", "--check"])
        #expect(check.status == 1, "\(check.stdoutText)")
        let out = check.stdoutText
        #expect(out.contains("✗ Firestore database (default): NOT_FOUND: Project 'team-chat' or database '(default)' does not exist."), "\(out)")
        #expect(
            out.contains("fix: gcloud firestore databases create --database='(default)' --location=nam5 --type=firestore-native --project=team-chat"), "\(out)")
        #expect(out.contains("! the project is not a Firebase project") && out.contains("fix: firebase projects:addfirebase team-chat"), "\(out)")
        #expect(out.contains("holds none of these directly (a group may grant them): roles/run.admin"), "\(out)")
        #expect(out.contains("not ready: 1 missing"))
        // A deployment runs the same check first and stops: no image built, nothing changed.
        let deploy = try await scenario.run(["team-chat", "europe-west1"])
        #expect(deploy.status != 0 && deploy.stderr.contains("not deploying: 1 missing"), "\(deploy.stderr)")
        #expect(!deploy.stdoutText.contains("[1/"), "nothing ran: \(deploy.stdoutText)")
    }

    @Test func aDatabaseInNam5TakesTheTriggersThere() async throws {
        let scenario = try Scenario.make(database: ("nam5", "FIRESTORE_NATIVE"))
        defer { try? FileManager.default.removeItem(at: scenario.folder) }
        let check = try await scenario.run(["team-chat", "europe-west1", "--check"])
        #expect(check.status == 0, "\(check.stdoutText)")
        #expect(check.stdoutText.contains("✓ database (default) is in nam5: its Eventarc triggers go to nam5, the services and jobs to europe-west1"))
        // Saying another location than the database's is caught.
        let wrong = try await scenario.run(["team-chat", "europe-west1", "--firestore-location", "eur3", "--check"])
        #expect(wrong.status == 1 && wrong.stdoutText.contains("✗ --firestore-location eur3, but database (default) is in nam5"), "\(wrong.stdoutText)")
    }

    @Test func datastoreModeAndMissingToolsAreNamed() async throws {
        let scenario = try Scenario.make(database: ("us-east1", "DATASTORE_MODE"))
        defer { try? FileManager.default.removeItem(at: scenario.folder) }
        try FileManager.default.removeItem(at: scenario.bin.appendingPathComponent("jq"))
        try Data().write(to: scenario.folder.appendingPathComponent("no-alpha"))
        let check = try await scenario.run(["team-chat", "us-east1", "--check"])
        #expect(check.status == 1)
        let out = check.stdoutText
        #expect(out.contains("✗ jq on this machine\n    fix: apt-get install jq"), "\(out)")
        #expect(out.contains("✗ gcloud's alpha commands"), "\(out)")
        #expect(out.contains("is in Datastore mode, not Native mode"), "\(out)")
    }
}
