import Foundation
import HeraldTesting
import Testing

/// Infra/deploy.sh run for real (not a dry run) against a stand-in gcloud (Tests/Fixtures/gcloud-standin)
/// in a project already deployed: each Eventarc trigger that exists is compared with what the schema asks
/// and left, updated, or deleted and created again. Before 2026-11-29 an existing trigger was left as it
/// was, so a schema that moved a function's documents (tokens into documents of their own) kept the
/// trigger on the old path, and every event of the new path went unseen.
@Suite struct DeployTriggerTests {
    /// A trigger as `gcloud eventarc triggers describe --format=json` prints it.
    static func described(_ name: String, type: String, pattern: String, database: String = "chat") -> String {
        #"""
        {"createTime": "2026-10-01T09:00:00.000000000Z", "destination": {"cloudRun": {"region": "europe-west1", "service": "\#(name.replacingOccurrences(of: "-deleted", with: ""))"}}, \#
        "eventDataContentType": "application/protobuf", "eventFilters": [{"attribute": "database", "value": "\#(database)"}, \#
        {"attribute": "document", "operator": "match-path-pattern", "value": "\#(pattern)"}, \#
        {"attribute": "type", "value": "google.cloud.firestore.document.v1.\#(type)"}], \#
        "name": "projects/team-chat/locations/nam5/triggers/\#(name)", "serviceAccount": "herald-trigger@team-chat.iam.gserviceaccount.com", \#
        "transport": {"pubsub": {"subscription": "projects/team-chat/subscriptions/eventarc-nam5-\#(name)-sub-101", "topic": "projects/team-chat/topics/eventarc-nam5-\#(name)-102"}}, \#
        "uid": "0f3c2a1e-0000-4000-8000-000000000001", "updateTime": "2026-10-01T09:00:05.000000000Z"}
        """#
    }

    /// A project with these triggers (file name → describe JSON), and deploy.sh run for real against it with
    /// the custom layout's schema (messages at rooms/{roomId}/posts/{postId}, tokenCleanup on
    /// users/{userId}/devices/{tokenId}) in database `chat` at nam5.
    struct Deployment {
        let status: Int32
        let out: String
        let stderr: String
        let calls: [String]

        func index(_ prefix: String) -> Int? { calls.firstIndex { $0.hasPrefix(prefix) } }
    }

    /// - elsewhere: full names of triggers in other locations.
    static func deploy(triggers: [String: String], elsewhere: [String] = [], refusingUpdates: Bool = false) async throws -> Deployment {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gcloud-\(UUID().uuidString)")
        let bin = folder.appendingPathComponent("bin")
        let triggerFolder = folder.appendingPathComponent("triggers")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: triggerFolder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        func write(_ text: String, to file: URL) throws { try Data(text.utf8).write(to: file) }
        try write("", to: folder.appendingPathComponent("accept-others"))
        if refusingUpdates { try write("", to: folder.appendingPathComponent("refuse-updates")) }
        try write(
            #"{"lifecycleState": "ACTIVE", "projectId": "team-chat", "projectNumber": "123456789012"}"#,
            to: folder.appendingPathComponent("projects-describe.json"))
        for (file, text) in triggers { try write(text, to: triggerFolder.appendingPathComponent(file)) }
        try write(elsewhere.map { $0 + "\n" }.joined(), to: folder.appendingPathComponent("triggers-elsewhere"))
        try FileManager.default.copyItem(at: TestPaths.fixture("gcloud-standin/gcloud"), to: bin.appendingPathComponent("gcloud"))
        try write("#!/bin/sh\nexit 0\n", to: bin.appendingPathComponent("curl"))
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: bin.appendingPathComponent("curl").path)

        var environment = ProcessInfo.processInfo.environment
        environment["GCLOUD_STANDIN"] = folder.path
        environment["PATH"] = "\(bin.path):/usr/bin:/bin"
        environment["HERALD"] = TestPaths.executable("herald").path
        environment["HERALD_RENDER_DIR"] = folder.appendingPathComponent("rendered").path
        let run = try await ProcessRunner.run(
            URL(fileURLWithPath: "/bin/bash"),
            [
                TestPaths.packageRoot.appendingPathComponent("Infra/deploy.sh").path, "team-chat", "europe-west1", "--schema",
                TestPaths.fixture("custom-layout/schema.json").path, "--firestore-location", "nam5", "--database", "chat",
            ], environment: environment)
        let calls = (try? String(contentsOf: folder.appendingPathComponent("calls.log"), encoding: .utf8)) ?? ""
        return Deployment(status: run.status, out: run.stdoutText, stderr: run.stderr, calls: calls.split(separator: "\n").map(String.init))
    }

    static let posts = "rooms/{roomId}/posts/{postId}"

    @Test(arguments: [false, true])
    func existingTriggersAreComparedAndUpdatedReplacedOrLeft(refusingUpdates: Bool) async throws {
        // Deployed before with tokens in the user documents, onReadReceipt on every write, and (unless
        // Eventarc refuses updates here) the deletions' trigger on the default database.
        var triggers = [
            "herald-onmessagecreated.json": Self.described("herald-onmessagecreated", type: "created", pattern: Self.posts),
            "herald-onreadreceipt.json": Self.described("herald-onreadreceipt", type: "written", pattern: Self.posts),
            "herald-tokencleanup.json": Self.described("herald-tokencleanup", type: "written", pattern: "users/{userId}"),
        ]
        if !refusingUpdates {
            triggers["herald-onreadreceipt-deleted.json"] = Self.described(
                "herald-onreadreceipt-deleted", type: "deleted", pattern: Self.posts, database: "(default)")
        }
        // Herald's triggers the schema does not name (a kind onReadReceipt once took; the old location of a
        // database), and another app's.
        triggers["herald-onreadreceipt-updated.json"] = Self.described("herald-onreadreceipt-updated", type: "updated", pattern: Self.posts)
        triggers["orders-on-write.json"] = Self.described("orders-on-write", type: "written", pattern: "orders/{orderId}")
        let run = try await Self.deploy(
            triggers: triggers, elsewhere: ["projects/team-chat/locations/eur3/triggers/herald-onmessagecreated"], refusingUpdates: refusingUpdates)
        let (out, calls) = (run.out, run.calls)
        #expect(run.status == 0, "\(run.stderr)\n\(out.suffix(3000))")

        // As the schema asks: left as it is.
        #expect(
            out.contains(
                "= exists: herald-onmessagecreated (database=chat document=\(Self.posts) (match-path-pattern) type=google.cloud.firestore.document.v1.created"
            ), "\(out)")
        #expect(run.index("eventarc triggers update herald-onmessagecreated ") == nil && run.index("eventarc triggers create herald-onmessagecreated ") == nil)

        // Moved: updated in place, with every setting, on the new path.
        let update = try #require(run.index("eventarc triggers update herald-tokencleanup "), "\(calls)")
        #expect(calls[update].contains("--event-filters-path-pattern=document=users/{userId}/devices/{tokenId} "), "\(calls[update])")
        #expect(
            calls[update].contains("--event-filters=type=google.cloud.firestore.document.v1.written ")
                && calls[update].contains("--event-filters=database=chat ")
                && calls[update].contains("--location=nam5 ") && calls[update].contains("--destination-run-service=herald-tokencleanup ")
                && calls[update].contains("--service-account=herald-trigger@team-chat.iam.gserviceaccount.com"), "\(calls[update])")
        #expect(out.contains("# herald-tokencleanup changed (was: database=chat document=users/{userId} (match-path-pattern) type="), "\(out)")
        if refusingUpdates {
            // Refused: deleted and created again on the new path.
            let deleted = try #require(run.index("eventarc triggers delete herald-tokencleanup "), "\(calls)")
            let created = try #require(run.index("eventarc triggers create herald-tokencleanup "), "\(calls)")
            #expect(update < deleted && deleted < created && calls[created].contains("document=users/{userId}/devices/{tokenId} "))
            #expect(out.contains("# Eventarc did not update herald-tokencleanup: deleted and created again"), "\(out)")
        } else {
            #expect(run.index("eventarc triggers delete herald-tokencleanup ") == nil, "a moved path needs no new trigger")
        }

        // Another event type, or another database: deleted and created again.
        var replaced = ["herald-onreadreceipt": "updated"]
        if !refusingUpdates { replaced["herald-onreadreceipt-deleted"] = "deleted" }
        for (name, kind) in replaced {
            let deleted = try #require(run.index("eventarc triggers delete \(name) "), "\(calls)")
            let created = try #require(run.index("eventarc triggers create \(name) "))
            #expect(deleted < created && calls[created].contains("--event-filters=type=google.cloud.firestore.document.v1.\(kind) "), "\(calls[created])")
            #expect(calls[created].contains("--event-filters=database=chat "), "\(calls[created])")
            #expect(out.contains("# \(name) has another event type or database (was: "), "\(out)")
        }
        #expect(run.index("eventarc triggers update herald-onreadreceipt") == nil, "neither is updated in place")
        if refusingUpdates {
            // Missing: created.
            #expect(
                run.index("eventarc triggers create herald-onreadreceipt-deleted ") != nil
                    && run.index("eventarc triggers delete herald-onreadreceipt-deleted ") == nil)
        }
        // Left, and named with the command that deletes each.
        let strays = out.split(separator: "\n").filter { $0.hasPrefix("! Eventarc trigger ") }
        #expect(
            strays.count == 2
                && Set(strays) == [
                    "! Eventarc trigger herald-onreadreceipt-updated in nam5 is not one this schema deploys, and still delivers its events: delete it with gcloud eventarc triggers delete herald-onreadreceipt-updated --location=nam5 --project=team-chat",
                    "! Eventarc trigger herald-onmessagecreated in eur3 is not one this schema deploys, and still delivers its events: delete it with gcloud eventarc triggers delete herald-onmessagecreated --location=eur3 --project=team-chat",
                ], "\(out)")
        #expect(run.index("eventarc triggers delete herald-onreadreceipt-updated ") == nil && run.index("eventarc triggers delete orders-on-write") == nil)
        // Each trigger's subscription gets the dead letters, whichever way the trigger came to be.
        for name in ["herald-onmessagecreated", "herald-onreadreceipt", "herald-onreadreceipt-deleted", "herald-tokencleanup"] {
            #expect(run.index("pubsub subscriptions update projects/p/subscriptions/eventarc-\(name)-sub --dead-letter-topic=") != nil, "\(name)")
        }
    }

    /// A trigger that cannot be read (no permission, Eventarc down) is not taken for a missing one: the
    /// deployment stops with gcloud's reason instead of creating it, and a deployment run again goes on.
    @Test func aTriggerThatCannotBeReadStopsTheDeployment() async throws {
        let run = try await Self.deploy(triggers: [
            "herald-onmessagecreated.error":
                "ERROR: (gcloud.eventarc.triggers.describe) PERMISSION_DENIED: Permission 'eventarc.triggers.get' denied on 'projects/team-chat/locations/nam5/triggers/herald-onmessagecreated'\n"
        ])
        #expect(run.status == 1, "\(run.out.suffix(2000))")
        #expect(
            run.stderr.contains("error: cannot read Eventarc trigger herald-onmessagecreated: ERROR: (gcloud.eventarc.triggers.describe) PERMISSION_DENIED"),
            "\(run.stderr)")
        #expect(run.index("eventarc triggers create herald-onmessagecreated ") == nil, "\(run.calls)")
    }
}
