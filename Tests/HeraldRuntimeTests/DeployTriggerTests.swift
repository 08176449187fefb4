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

    @Test func existingTriggersAreComparedAndUpdatedReplacedOrLeft() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gcloud-\(UUID().uuidString)")
        let bin = folder.appendingPathComponent("bin")
        let triggers = folder.appendingPathComponent("triggers")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: triggers, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        func write(_ name: String, _ text: String, in directory: URL? = nil) throws {
            try Data(text.utf8).write(to: (directory ?? folder).appendingPathComponent(name))
        }
        try write("accept-others", "")
        try write("projects-describe.json", #"{"lifecycleState": "ACTIVE", "projectId": "team-chat", "projectNumber": "123456789012"}"#)
        // The custom layout's schema wants messages at rooms/{roomId}/posts/{postId} and tokenCleanup on
        // users/{userId}/devices/{tokenId}. The project was deployed before with tokens in the user documents.
        let posts = "rooms/{roomId}/posts/{postId}"
        try write("herald-onmessagecreated.json", Self.described("herald-onmessagecreated", type: "created", pattern: posts), in: triggers)
        try write("herald-onreadreceipt.json", Self.described("herald-onreadreceipt", type: "written", pattern: posts), in: triggers)
        try write("herald-tokencleanup.json", Self.described("herald-tokencleanup", type: "written", pattern: "users/{userId}"), in: triggers)
        try FileManager.default.copyItem(at: TestPaths.fixture("gcloud-standin/gcloud"), to: bin.appendingPathComponent("gcloud"))
        try Data("#!/bin/sh\nexit 0\n".utf8).write(to: bin.appendingPathComponent("curl"))
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
        let out = run.stdoutText
        #expect(run.status == 0, "\(run.stderr)\n\(out.suffix(3000))")
        let calls = try String(contentsOf: folder.appendingPathComponent("calls.log"), encoding: .utf8).split(separator: "\n").map(String.init)
        func index(_ prefix: String) -> Int? { calls.firstIndex { $0.hasPrefix(prefix) } }

        // As the schema asks: left as it is.
        #expect(out.contains("= exists: herald-onmessagecreated (database=chat document=\(posts) type=google.cloud.firestore.document.v1.created"), "\(out)")
        #expect(index("eventarc triggers update herald-onmessagecreated ") == nil && index("eventarc triggers create herald-onmessagecreated ") == nil)

        // Moved: updated in place, with every setting, on the new path.
        let update = try #require(calls.first { $0.hasPrefix("eventarc triggers update herald-tokencleanup ") }, "\(calls)")
        #expect(update.contains("--event-filters-path-pattern=document=users/{userId}/devices/{tokenId} "), "\(update)")
        #expect(
            update.contains("--event-filters=type=google.cloud.firestore.document.v1.written ") && update.contains("--event-filters=database=chat ")
                && update.contains("--location=nam5 ") && update.contains("--destination-run-service=herald-tokencleanup ")
                && update.contains("--service-account=herald-trigger@team-chat.iam.gserviceaccount.com"), "\(update)")
        #expect(out.contains("# herald-tokencleanup changed (was: database=chat document=users/{userId} type="), "\(out)")
        #expect(index("eventarc triggers delete herald-tokencleanup ") == nil, "a moved path needs no new trigger")

        // Another event type: not updated but deleted and created again.
        let deleted = try #require(index("eventarc triggers delete herald-onreadreceipt "), "\(calls)")
        let created = try #require(index("eventarc triggers create herald-onreadreceipt "))
        #expect(deleted < created && calls[created].contains("--event-filters=type=google.cloud.firestore.document.v1.updated "), "\(calls[created])")
        #expect(out.contains("# herald-onreadreceipt delivers another event type: deleted and created again"), "\(out)")

        // Missing: created.
        #expect(index("eventarc triggers create herald-onreadreceipt-deleted ") != nil)
        // Each trigger's subscription gets the dead letters, whichever way the trigger came to be.
        for name in ["herald-onmessagecreated", "herald-onreadreceipt", "herald-onreadreceipt-deleted", "herald-tokencleanup"] {
            #expect(index("pubsub subscriptions update projects/p/subscriptions/eventarc-\(name)-sub --dead-letter-topic=") != nil, "\(name)")
        }
    }
}
