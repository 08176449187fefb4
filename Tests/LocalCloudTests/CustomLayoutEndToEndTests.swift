import AsyncHTTPClient
import ChatFunctions
import FirestoreModel
import Foundation
import GoogleClients
import HeraldHTTPClient
import HeraldTesting
import Testing
import WireFormats

/// A team's own layout, end to end as a user meets it: `herald schema infer` on an export of their data
/// proposes the mapping; `herald dev --schema` on that file pushes the right text to the right devices
/// with exact counts; `herald schema check` names the misfits; the deployment's dry run puts the
/// triggers on their paths in their database's location.
@Suite(.serialized) struct CustomLayoutEndToEndTests {
    static let export = TestPaths.fixture("custom-layout/export").path

    static func herald(_ arguments: [String]) async throws -> ProcessResult {
        try await ProcessRunner.run(TestPaths.executable("herald"), arguments)
    }

    @Test func inferredFromAnExportThenServedByHeraldDev() async throws {
        let scratch = try Scratch.directory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let schemaFile = scratch.appendingPathComponent("my-schema.json").path
        let infer = try await Self.herald(["schema", "infer", "--from", Self.export, "--output", schemaFile])
        #expect(infer.status == 0, "\(infer.stderr)")
        let proposed = try JSONValue(parsing: try String(contentsOfFile: schemaFile, encoding: .utf8))
        let team = try JSONValue(parsing: try String(contentsOf: TestPaths.fixture("custom-layout/schema.json"), encoding: .utf8))
        for (key, value) in team.objectValue ?? [:] where !key.hasPrefix("//") {
            #expect(proposed[key] == value, "\(key): \(String(describing: proposed[key])) proposed, \(value) expected")
        }

        // herald dev on the proposed file and the team's data.
        let dev = try await RunningDev.start(["--schema", schemaFile, "--import", Self.export])
        defer { dev.kill() }
        let db = FirestoreClient(project: "e2e", endpoint: dev.base, credentials: EmulatorCredentials(), httpClient: .shared)
        // Room 1 is a group ("Team 0": u1 Ann, u2 Ben, u3 Cleo, u6 Fay). Ann posts.
        let post = try db.name("rooms/r1/posts/p100")
        _ = try await db.commit([
            Write(
                .update(
                    post, fields: ["authorId": .string("u1"), "body": .string("Standup in 5"), "sentAt": .timestamp(.now()), "contentType": .string("text")],
                    mask: nil), precondition: .exists(false))
        ])
        try await dev.waitUntilIdle()
        let pushes = try await dev.pushes().compactMap { $0["message"] }.filter { $0["data"]?["messageId"] == "p100" }
        // Ben and Fay have two devices each, Cleo one: five pushes, each once, none to Ann.
        let devices = { (user: String, count: Int) in (0..<count).map { "\(user)dev\($0)x7Qk:APA91b" } }
        let expected = devices("u2", 2) + devices("u3", 1) + devices("u6", 2)
        #expect(pushes.count == 5, "\(pushes)")
        for prefix in expected {
            let push = pushes.filter { $0["token"]?.stringValue?.hasPrefix(prefix) == true }
            #expect(push.count == 1, "\(prefix): \(push)")
            #expect(push.first?["notification"]?["body"] == "Team 0 • Ann: Standup in 5", "\(push)")
            #expect(push.first?["apns"]?["payload"]?["aps"]?["badge"] == .number("1"), "\(push)")
        }
        let room = try #require(try await db.get(try db.name("rooms/r1")))
        #expect(room["unreadCounts"] == .map(["u1": .integer(0), "u2": .integer(1), "u3": .integer(1), "u6": .integer(1)]), "\(room)")
        #expect(room["lastMessage"]?.mapValue?["text"] == .string("Standup in 5"))
        // The team's badges (`badgeCount` on each user document) moved to `badges/{userId}` with their first
        // count; Ann's, not counted, is still where it was.
        var layout = try #require(Schema.presets["default"])
        layout.badgeField = "badgeCount"
        for (user, badge) in [("u1", 0), ("u2", 1), ("u3", 1), ("u6", 1)] {
            #expect(try await db.storedBadge(of: user, schema: layout) == .integer(Int64(badge)), "\(user)")
            #expect(try await db.get(try db.name("users/\(user)"))?["badgeCount"] == (user == "u1" ? .integer(0) : nil), "\(user)")
        }

        // Ben reads it (seenBy): his count and badge come down, once.
        _ = try await db.commit([Write(.update(post, fields: ["seenBy": .array([.string("u2")])], mask: [FieldPath("seenBy")]))])
        try await dev.waitUntilIdle()
        #expect(try await db.get(try db.name("rooms/r1"))?["unreadCounts"]?.mapValue?["u2"] == .integer(0))
        #expect(try await db.storedBadge(of: "u2", schema: layout) == .integer(0))
    }

    /// The same data read from a running Firestore: herald dev's and Google's emulator over REST
    /// (FIRESTORE_EMULATOR_HOST's HOST:PORT), and Google's emulator's own export.
    @Test func inferredFromARunningFirestoreAndFromGooglesExport() async throws {
        func proposed(_ from: String, project: String? = nil) async throws -> JSONValue {
            let run = try await ProcessRunner.run(
                TestPaths.executable("herald"), ["schema", "infer", "--from", from] + (project.map { ["--project", $0] } ?? []))
            #expect(run.status == 0, "\(from): \(run.stderr)")
            return try JSONValue(parsing: run.stdout)
        }
        func expectTheLayout(_ proposal: JSONValue, _ source: String) {
            #expect(proposal["messagePattern"] == "rooms/{roomId}/posts/{postId}", "\(source): \(proposal)")
            #expect(proposal["senderIDField"] == "authorId" && proposal["tokens"] == ["subcollection": "devices"], "\(source): \(proposal)")
            #expect(proposal["badgeField"] == "badgeCount" && proposal["memberFields"] == ["participantIds"], "\(source)")
        }
        let dev = try await RunningDev.start(["--no-functions", "--import", Self.export])
        defer { dev.kill() }
        expectTheLayout(try await proposed(String(dev.base.dropFirst("http://".count))), "herald dev")

        guard GoogleFirestoreEmulator.isInstalled else {
            try skipTest("Google's Firestore emulator is not installed at \(GoogleFirestoreEmulator.launcher): herald dev's REST was read")
        }
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let documents = try String(contentsOf: TestPaths.fixture("custom-layout/export/documents.jsonl"), encoding: .utf8).split(separator: "\n")
            .compactMap { try FirestoreJSON.document(from: try JSONValue(parsing: String($0))) }
        try await GoogleFirestoreEmulator.run { host in
            let google = FirestoreClient(project: "team", endpoint: "http://\(host)", credentials: EmulatorCredentials(), httpClient: .shared)
            _ = try await google.commitInBatches(
                try documents.map { Write(.update(try DocumentName(project: "team", segments: $0.name.segments), fields: $0.fields, mask: nil)) })
            expectTheLayout(try await proposed(host, project: "team"), "Google's emulator")
            let answer = try await HTTPClient.shared.post(
                "http://\(host)/emulator/v1/projects/team:export", headers: ["content-type": "application/json"],
                body: Array(#"{"database":"projects/team/databases/(default)","export_directory":"\#(directory.path)"}"#.utf8))
            #expect(answer.status == 200, "\(answer.body)")
        }
        expectTheLayout(try await proposed(directory.path), "Google's emulator's export")
    }

    @Test func checkNamesEveryMisfitAndExitsOne() async throws {
        let check = try await Self.herald([
            "schema", "check", TestPaths.fixture("custom-layout/schema.json").path, "--from", TestPaths.fixture("custom-layout/misfits").path,
        ])
        #expect(check.status == 1, "\(check.stdoutText)\(check.stderr)")
        let planted = try JSONValue(parsing: try String(contentsOf: TestPaths.fixture("custom-layout/misfits.json"), encoding: .utf8))
        for (path, problem) in planted.objectValue ?? [:] {
            let lines = check.stdoutText.split(separator: "\n").filter { $0.hasPrefix("  \(path): ") }
            #expect(lines.contains { $0.contains(problem.stringValue ?? "?") }, "\(path) in\n\(check.stdoutText)")
        }
        let clean = try await Self.herald(["schema", "check", TestPaths.fixture("custom-layout/schema.json").path, "--from", Self.export])
        #expect(clean.status == 0 && clean.stdoutText.contains("every document read fits the schema"), "\(clean.stdoutText)")
    }

    /// The deployment of the team's file: triggers on their paths in the database's location, the index
    /// their presence query needs, the collection-group index of their token documents, and the schema
    /// itself in every function's manifest.
    @Test func theDeploymentDryRunFollowsTheSchemaFile() async throws {
        let rendered = FileManager.default.temporaryDirectory.appendingPathComponent("herald-render-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: rendered) }
        var environment = ProcessInfo.processInfo.environment
        environment["HERALD_RENDER_DIR"] = rendered.path
        environment["HERALD"] = TestPaths.executable("herald").path
        let run = try await ProcessRunner.run(
            URL(fileURLWithPath: "/bin/bash"),
            [
                TestPaths.packageRoot.appendingPathComponent("Infra/deploy.sh").path, "team-chat", "europe-west1", "--schema",
                TestPaths.fixture("custom-layout/schema.json").path, "--firestore-location", "nam5", "--database", "chat", "--dry-run",
            ], environment: environment)
        #expect(run.status == 0, "\(run.stderr)")
        let commands = run.stdoutText.split(separator: "\n").filter { $0.hasPrefix("+ ") }.map(String.init)
        for (name, kind, pattern) in [
            ("herald-onmessagecreated", "created", #"rooms/\{roomId\}/posts/\{postId\}"#),
            ("herald-onreadreceipt", "updated", #"rooms/\{roomId\}/posts/\{postId\}"#),
            ("herald-onreadreceipt-deleted", "deleted", #"rooms/\{roomId\}/posts/\{postId\}"#),
            ("herald-tokencleanup", "written", #"users/\{userId\}/devices/\{tokenId\}"#),
        ] {
            let create = try #require(commands.first { $0.contains("eventarc triggers create \(name) ") }, "\(name)")
            #expect(create.contains("--location=nam5 ") && create.contains("--destination-run-region=europe-west1 "), "\(create)")
            #expect(create.contains("--event-filters=type=google.cloud.firestore.document.v1.\(kind) ") && create.contains("--event-filters=database=chat "))
            #expect(create.contains("--event-filters-path-pattern=document=\(pattern) "), "\(create)")
        }
        #expect(
            run.stdoutText.contains(
                "# Firestore database chat in nam5: the Eventarc triggers go there; the Cloud Run services and Cloud Scheduler jobs in europe-west1"))
        let index = try #require(commands.first { $0.contains("indexes composite create") })
        #expect(index.contains("--database=chat") && index.contains("field-path=isOnline") && index.contains("field-path=lastActiveAt"), "\(index)")
        for field in ["tokensUpdatedAt", "token"] {
            #expect(commands.contains { $0.contains("collectionGroups/devices/fields/\(field)\\?") && $0.contains("COLLECTION_GROUP") }, "\(field)")
        }
        #expect(!commands.contains { $0.contains("print-access-token)") && !$0.contains("$(gcloud auth print-access-token)") }, "no token printed")
        // Every function gets the schema file's JSON and the database.
        let manifest = try String(contentsOf: rendered.appendingPathComponent("onMessageCreated.yaml"), encoding: .utf8)
        let line = try #require(manifest.split(separator: "\n").first { $0.contains("value: '{") })
        let json = try JSONValue(parsing: String(line.drop { $0 != "'" }.dropFirst().dropLast()).replacingOccurrences(of: "''", with: "'"))
        #expect(json["messagePattern"] == "rooms/{roomId}/posts/{postId}" && json["tokens"] == ["subcollection": "devices"])
        #expect(manifest.contains("- name: FIRESTORE_DATABASE\n              value: 'chat'"), "\(manifest)")

        // A schema file with an error stops the deployment before any command.
        let broken = FileManager.default.temporaryDirectory.appendingPathComponent("broken-\(UUID().uuidString).json")
        try Data(#"{"messagePattern": "rooms/{id}/posts/{id}"}"#.utf8).write(to: broken)
        defer { try? FileManager.default.removeItem(at: broken) }
        let refused = try await ProcessRunner.run(
            URL(fileURLWithPath: "/bin/bash"),
            [TestPaths.packageRoot.appendingPathComponent("Infra/deploy.sh").path, "team-chat", "europe-west1", "--schema", broken.path, "--dry-run"],
            environment: environment)
        #expect(refused.status == 2 && refused.stderr.contains("wildcard {id} appears twice"), "\(refused.stderr)")
        #expect(!refused.stdoutText.contains("+ "), "nothing ran")
    }
}
