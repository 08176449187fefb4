import AsyncHTTPClient
import ChatDemo
import ChatFunctions
import FirestoreModel
import Foundation
import GoogleClients
import HeraldHTTPClient
import HeraldTesting
import LocalCloud
import NIOCore
import NIOHTTP1
import Supervision
import Testing
import WireFormats

@testable import HeraldCLI

/// `herald dev` as a newcomer runs it: the real binary, every function as a separate process,
/// the demo world and two messages; then the state it left is checked document by document. Once
/// with the embedded Firestore, once with Google's emulator behind `--firestore`.
@Suite(.serialized) struct HeraldDevEndToEndTests {
    @Test(arguments: FirestoreBackend.allCases)
    func aMessageBecomesDenormalizedFieldsAndPushesToEveryOtherDevice(backend: FirestoreBackend) async throws {
        switch backend {
        case .herald: try await Self.check(external: nil)
        case .google: _ = try await backend.run { host in try await Self.check(external: host) }
        }
    }

    static func check(external: String?) async throws {
        let directory = NSTemporaryDirectory() + "herald-dev-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try await ProcessRunner.run(
            TestPaths.executable("herald"),
            [
                "dev", "--data", directory, "--port", "0", "--project", "e2e", "--seed", "demo",
                "--send", "alice→family: Dinner at 6pm", "--send", "bob→alice-bob: Running late 🏃", "--exit-when-idle",
            ] + (external.map { ["--firestore", $0] } ?? []))
        #expect(run.status == 0, "herald dev failed: \(run.stderr.suffix(2000))")
        let log = run.stdoutText
        #expect(log.contains("push    → \(DemoWorld.carolsPhone) (Expo): \"Family • Alice: Dinner at 6pm\""), "live log:\n\(log)")
        #expect(log.contains("onMessageCreated  applied"))
        #expect(!log.contains("could not be delivered"))

        // Open what it left behind, as a restarted `herald dev` would.
        var options = LocalCloudOptions.testing
        options.dataDirectory = directory
        options.project = "e2e"
        try await withLocalCloud(options) { local in
            let db =
                external.map { FirestoreClient(project: "e2e", endpoint: "http://\($0)", credentials: EmulatorCredentials(), httpClient: .shared) }
                ?? local.firestore(project: "e2e")
            let family = try #require(try await db.get(try db.name("conversations/family")))
            #expect(family.value(at: ["lastMessage", "text"]) == .string("Dinner at 6pm"))
            #expect(family.value(at: ["lastMessage", "senderId"]) == .string("alice"))
            #expect(family["unreadCount"] == .map(["alice": .integer(0), "bob": .integer(1), "carol": .integer(1)]))
            let direct = try #require(try await db.get(try db.name("conversations/alice-bob")))
            #expect(direct["unreadCount"] == .map(["alice": .integer(1), "bob": .integer(0)]))
            // Alice has one unread (Bob's), Bob one (Alice's in the group), Carol one.
            for (user, badge) in [("alice", 1), ("bob", 1), ("carol", 1)] {
                #expect(try await db.storedBadge(of: user, schema: Schema.presets["default"]!) == .integer(Int64(badge)), "badge of \(user)")
            }
            let messages = try await db.runQuery(StructuredQuery(collectionID: "messages", allDescendants: true))
            #expect(messages.count == 2)
            #expect(messages.allSatisfy { $0["status"] == .string("sent") })

            // Each device through its own service: Carol's phone through Expo, Bob's iPad through APNs.
            let pushes = try await DevicePush.all(at: local.baseURL)
            #expect(pushes.map(\.token).sorted() == [DemoWorld.bobsIPad, DemoWorld.carolsPhone, "tok-alice-phone", "tok-bob-phone"])
            let toCarol = try #require(pushes.first { $0.token == DemoWorld.carolsPhone })
            #expect(toCarol.service == .expo && toCarol.body == "Family • Alice: Dinner at 6pm" && toCarol.badge == 1, "\(toCarol)")
            let toIPad = try #require(pushes.first { $0.token == DemoWorld.bobsIPad })
            #expect(toIPad.service == .apns && toIPad.body == "Family • Alice: Dinner at 6pm" && toIPad.badge == 1, "\(toIPad)")
            let toAlice = try #require(pushes.first { $0.token == "tok-alice-phone" })
            #expect(toAlice.body == "Bob: Running late 🏃")
            #expect(try await local.cloud.deliveries(state: "dead").isEmpty)

            // The functions exported their spans to the local cloud: the message's event, with its calls under it.
            let delivery = try #require(
                try await local.cloud.deliveries(state: nil).first {
                    $0["trigger"]?.stringValue == "onMessageCreated" && $0["document"]?.stringValue?.hasPrefix("conversations/family/") == true
                })
            let trace = try #require(delivery["traceId"]?.stringValue, "\(delivery)")
            let spans =
                try JSONValue(parsing: Array(try await HTTPClient.shared.get("\(local.baseURL)/herald/traces/\(trace)").body.utf8))["spans"]?.arrayValue ?? []
            let event = try #require(spans.first { $0["kind"] == "server" }, "no spans for \(trace): \(spans)")
            #expect(event["name"] == "onMessageCreated event")
            #expect(spans.filter { $0["kind"] == "client" && $0["parentSpanId"] == event["spanId"] }.count >= 4, "\(spans)")
        }
    }

    /// Every schema preset through `herald dev`: a group message and a 1:1 message, then a reader opens
    /// each conversation; counts, badges, statuses and pushes as the PRDs describe.
    @Test(arguments: ["default", "prd000", "prd001", "prd004"])
    func everyPresetSendsAndReads(preset: String) async throws {
        let schema = try #require(Schema.presets[preset])
        let directory = NSTemporaryDirectory() + "herald-preset-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try await ProcessRunner.run(
            TestPaths.executable("herald"),
            [
                "dev", "--data", directory, "--port", "0", "--project", "e2e", "--schema", preset, "--seed", "demo",
                "--send", "alice→family: Dinner at 6pm", "--send", "bob→alice-bob: Running late",
                "--read", "bob→family", "--read", "alice→alice-bob", "--exit-when-idle",
            ])
        #expect(run.status == 0, "herald dev failed: \(run.stderr.suffix(2000))")
        var options = LocalCloudOptions.testing
        options.dataDirectory = directory
        options.project = "e2e"
        try await withLocalCloud(options) { local in
            let db = local.firestore(project: "e2e")
            let family = try #require(try await db.get(try db.name("\(schema.conversationCollection)/family")))
            #expect(family[schema.unreadCountField] == .map(["alice": .integer(0), "bob": .integer(0), "carol": .integer(1)]), "\(preset)")
            let direct = try #require(try await db.get(try db.name("\(schema.conversationCollection)/alice-bob")))
            #expect(direct[schema.unreadCountField] == .map(["alice": .integer(0), "bob": .integer(0)]), "\(preset)")
            for (user, badge) in [("alice", 0), ("bob", 0), ("carol", 1)] {
                #expect(
                    try await db.storedBadge(of: user, schema: schema) == .integer(Int64(badge)),
                    "\(preset): badge of \(user)")
            }
            // 1:1: read once Alice read it. Group: still sent, Carol has not read it.
            let world = DemoWorld(schema: schema, project: "e2e")
            for (conversation, status) in [("alice-bob", "read"), ("family", "sent")] {
                let (parent, query) = try world.messagesQuery(in: conversation)
                let messages = try await db.runQuery(query, parent: parent)
                #expect(messages.count == 1 && messages.first?[schema.statusField] == .string(status), "\(preset) \(conversation)")
            }
            if case .map(let field) = schema.lastMessage {
                #expect(direct.value(at: [field, "status"]) == .string("read"), "\(preset): the chat list shows the tick")
            }
            let tokens = { (id: String) in
                let all = DemoWorld.people.first { $0.id == id }!.tokens
                if schema.tokens.layout is SingleTokenField { return [all[0]] }
                return all
            }
            let records = try await DevicePush.all(at: local.baseURL)
            let notified = records.filter { !$0.isSilent }.map(\.token).sorted()
            #expect(notified == (tokens("bob") + tokens("carol") + tokens("alice")).sorted(), "\(preset)")
            let silent = records.filter(\.isSilent)
            #expect(silent.map(\.token).sorted() == (tokens("bob") + tokens("alice")).sorted(), "\(preset)")
            #expect(silent.allSatisfy { $0.badge == 0 })
            let summary = records.first { $0.token == tokens("carol")[0] }?.data["summary"]
            #expect(summary == PresetText(preset).line("Alice", "Family", "Dinner at 6pm"), "\(preset)")
        }
    }

    /// The demo's "Book club": Dave muted it, Erin is in quiet hours (mentions allowed). A plain message
    /// alerts only Bob; a message that mentions both breaks through Dave's mute and Erin's quiet hours.
    /// Every body the FCM sink recorded conforms to FCM v1's published schema.
    @Test(arguments: ["default", "prd000", "prd001", "prd004"])
    func mutedAndQuietMembersGetOnlyTheirBadgeUnlessMentioned(preset: String) async throws {
        let python = try await PythonReference.forTest(importing: "googleapiclient")
        let directory = NSTemporaryDirectory() + "herald-mute-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try await ProcessRunner.run(
            TestPaths.executable("herald"),
            [
                "dev", "--data", directory, "--port", "0", "--project", "e2e", "--schema", preset, "--seed", "demo",
                "--send", "alice→book-club: Who has read chapter 3?", "--exit-when-idle",
            ])
        #expect(run.status == 0, "herald dev failed: \(run.stderr.suffix(2000))")
        let second = try await ProcessRunner.run(
            TestPaths.executable("herald"),
            [
                "dev", "--data", directory, "--port", "0", "--project", "e2e", "--schema", preset,
                "--send", "bob→book-club: @Dave and @erin, your turn to host", "--exit-when-idle",
            ])
        #expect(second.status == 0, "herald dev failed: \(second.stderr.suffix(2000))")
        var options = LocalCloudOptions.testing
        options.dataDirectory = directory
        options.project = "e2e"
        try await withLocalCloud(options) { local in
            let pushes = try await DevicePush.all(at: local.baseURL)
            func seen(_ token: String) -> [String] {
                pushes.filter { $0.token == token }.map { push in push.data["summary"].map { "alert: \($0)" } ?? "silent: \(push.data["reason"] ?? "?")" }
            }
            let text = PresetText(preset)
            let question = "alert: " + text.line("Alice", "Book club", "Who has read chapter 3?")
            let turn = "@Dave and @erin, your turn to host"
            #expect(seen("tok-bob-phone") == [question], "\(preset)")
            #expect(seen("tok-dave-phone") == ["silent: muted", "alert: " + text.line("Bob", "Book club", mention: true, turn)], "\(preset)")
            #expect(seen("tok-erin-phone") == ["silent: quiet-hours", "alert: " + text.line("Bob", "Book club", mention: true, turn)], "\(preset)")
            #expect(seen("tok-alice-phone") == ["alert: " + text.line("Bob", "Book club", turn)], "\(preset)")
            #expect(seen(DemoWorld.carolsPhone).isEmpty)
            // Silenced or not, every recipient's badge counts the message.
            let dave = pushes.filter { $0.token == "tok-dave-phone" }.map(\.badge)
            #expect(dave == [1, 2], "\(preset)")
            // What FCM's sink took conforms to FCM v1's published schema (the others' bodies are checked by their stand-ins).
            let records = try await local.cloud.fcm.messages()

            let checks = JSONValue.array(records.map { ["api": "fcm", "schema": "SendMessageRequest", "body": ["message": $0.message]] })
            let result = try await ProcessRunner.run(
                python,
                [
                    TestPaths.packageRoot.appendingPathComponent("Tests/Python/google_api_reference.py").path,
                    "discovery",
                ], stdin: Data(checks.serialized().utf8))
            #expect(result.status == 0, "\(result.stderr)")
            let errors = try JSONValue(parsing: result.stdout).arrayValue?.flatMap { $0.arrayValue ?? [] } ?? [.string("no answer")]
            // FCM's records only: Bob's iPad (APNs) and Carol's phone (Expo) are carried by the others.
            let bobsDevices = 1
            #expect(
                records.count == bobsDevices + 5 && errors.isEmpty,
                "\(records.count) pushes; \(errors); the second run said:\n\(second.stdoutText.suffix(3000))\n\(second.stderr.suffix(2000))")
        }
    }

    /// A Firebase user's settings: the project and schema come from GOOGLE_CLOUD_PROJECT and
    /// HERALD_SCHEMA when no option names them, for the local cloud and its functions alike (before,
    /// the functions read `herald-local` and skipped every message written to the user's project).
    @Test func projectAndSchemaComeFromTheEnvironment() async throws {
        let directory = NSTemporaryDirectory() + "herald-env-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var environment = FunctionUnderTest.cleanEnvironment()
        environment["GOOGLE_CLOUD_PROJECT"] = "my-app"
        environment["HERALD_SCHEMA"] = "prd004"
        let run = try await ProcessRunner.run(
            TestPaths.executable("herald"),
            [
                "dev", "--data", directory, "--port", "0", "--seed", "demo", "--send", "alice→family: Dinner at 6pm", "--exit-when-idle",
            ], environment: environment)
        #expect(run.status == 0, "herald dev failed: \(run.stderr.suffix(2000))")
        let log = run.stdoutText
        #expect(log.contains("(project my-app, schema prd004"), "\(log.prefix(1500))")
        #expect(log.contains("project from GOOGLE_CLOUD_PROJECT, schema from HERALD_SCHEMA"))
        #expect(log.contains("onMessageCreated  applied") && log.contains("push    → tok-"), "\(log.suffix(2000))")

        // An option wins over the variables; GCLOUD_PROJECT is the older name; an empty variable is not a setting.
        let variables = ["GOOGLE_CLOUD_PROJECT": " ", "GCLOUD_PROJECT": "old-name"]
        #expect(
            Dev.choose("p", flag: "--project", variables: ["GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT"], default: "herald-local", environment: variables)
                == .init(value: "p", source: "--project"))
        #expect(
            Dev.choose(nil, flag: "--project", variables: ["GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT"], default: "herald-local", environment: variables)
                == .init(value: "old-name", source: "GCLOUD_PROJECT"))
        #expect(
            Dev.choose(nil, flag: "--schema", variables: ["HERALD_SCHEMA"], default: "default", environment: [:]) == .init(value: "default", source: "default"))
    }

    /// Firebase's "single project mode": a client writing to another project than the one herald dev
    /// serves (whose functions would find nothing there) is told at once, by name, not served silently.
    @Test func requestsForAnotherProjectAreRefusedNamingTheOneServed() async throws {
        let dev = try await RunningDev.start([])
        defer { dev.kill() }
        let served = try await dev.app.get(try dev.app.name("users/nobody"))
        #expect(served == nil)
        let other = FirestoreClient(project: "my-app", endpoint: dev.base, credentials: EmulatorCredentials(), httpClient: .shared)
        do {
            _ = try await other.commit([Write(.update(try other.name("chats/c1"), fields: ["x": .integer(1)], mask: nil))])
            Issue.record("a write to another project was served")
        } catch {
            let text = "\(error)"
            #expect(text.contains("400") || text.contains("FAILED_PRECONDITION"), "\(text)")
            #expect(text.contains("serves project \"e2e\" only") && text.contains("--project my-app"), "\(text)")
        }
        var request = HTTPClientRequest(url: "\(dev.base)/v1/projects/my-app/messages:send")
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/json")
        request.body = .bytes(Array(#"{"message": {"token": "t", "data": {"a": "b"}}}"#.utf8))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        #expect(response.status.code == 400)
    }

    /// Also while a client holds a connection open without having sent a byte (its protocol still
    /// unknown: HTTP/1.1 or gRPC), which the chaos suite's clients leave behind.
    @Test func ctrlCStopsTheFunctionsAndTheCloudCleanly() async throws {
        let dev = try await RunningDev.start([])
        defer { dev.kill() }
        let silent = try RawHTTPConnection(port: Int(dev.base.split(separator: ":").last ?? "") ?? 0)
        let started = ContinuousClock.now
        let status = try await dev.stop()
        #expect(ContinuousClock.now - started < .seconds(15), "a silent connection held up the stop")
        _ = silent
        #expect(status == 0, "herald dev did not stop cleanly within 30 s of SIGINT: \(dev.output.suffix(1500))")
        let log = dev.output
        for name in ["onMessageCreated", "onReadReceipt", "presenceSweeper", "tokenCleanup"] {
            #expect(log.contains("\(name) stopped"), "\(name) was not stopped: \(log.suffix(1500))")
        }
    }

    /// Ctrl-C at a terminal reaches the whole process group: herald dev and every function at once.
    /// The functions stop, and none is started again as if it had crashed.
    @Test func ctrlCToTheWholeProcessGroupRestartsNothing() async throws {
        let dev = try await RunningDev.start(["--seed", "demo"])
        defer { dev.kill() }
        let children = ChildProcesses.of(dev.process.pid)
        let functions = children.map(\.pid)
        #expect(functions.count == 4, "herald dev's function processes: \(functions)")
        // What runs is what deploys: each function's own executable (Functions/NAME), not herald in another role.
        for child in children {
            let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(child.pid)/exe")) ?? ""
            #expect(
                FunctionCatalog.names.contains(URL(fileURLWithPath: executable).lastPathComponent) && child.commandLine.contains(" serve --host 127.0.0.1"),
                "\(executable): \(child.commandLine)")
        }
        for pid in functions { kill(pid, SIGINT) }
        let output = { dev.output.suffix(1500) }
        #expect(try await dev.stop() == 0, "\(output())")  // herald dev's own SIGINT, at once
        #expect(!dev.output.contains("starting it again"), "\(output())")
    }
}

/// A group alert's one line (`data.summary`) as each preset writes it (docs/notifications.md).
struct PresetText {
    let preset: String
    init(_ preset: String) { self.preset = preset }

    func line(_ sender: String, _ group: String, mention: Bool = false, _ text: String) -> String {
        if preset == "default" { return "\(group) • \(sender)\(mention ? " mentioned you" : ""): \(text)" }
        return "\(sender) \(mention ? "mentioned you in" : "in") \(group): \(text)"
    }
}
