import AsyncHTTPClient
import ChatDemo
import FirestoreModel
import Foundation
import HeraldTesting
import NIOCore
import NIOHTTP1
import Testing
import WireFormats

/// Every command in a fenced shell block of README.md and docs/ runs as written, and does what the text
/// around it says. Each command belongs to one check below (`everyCommandHasItsCheck` fails for a
/// command nobody runs). Commands run through `/bin/sh` as a reader would paste them, with three
/// changes a test needs: `swift run NAME` is the executable the suite built (a second `swift run` would
/// build again while the suite holds the build folder), a command that starts a server gets its own
/// free port instead of 8787 or 8080 (so the suite never collides with a `herald dev` already running),
/// and placeholders (`YOUR_PROJECT_ID`, `MESSAGE_ID`) get real values.
@Suite struct DocumentedCommandsTests {
    enum Check: String, CaseIterable, Sendable {
        case demo, invokeInDev, sendInDev, testCommand, pythonReferences, format, deployDryRun, deployForReal, eventFormats, emulator, webApp
        case infra, chaosSoak, schema, deploySchema, deadLetters, macContainer
    }

    /// Which check runs a command: (document, a fragment of the command, check). The first match wins.
    static let owners: [(document: String, fragment: String, check: Check)] = [
        ("README.md", "swift run herald dev --seed demo --send", .demo),
        ("README.md", "swift test", .testCommand),
        ("docs/contributing.md", "pip install -r Tests/Python/requirements.txt", .pythonReferences),
        ("docs/architecture.md", "swift format format", .format),
        ("docs/deploying.md", "herald deploy my-project europe-west1 --dry-run", .deployDryRun),
        ("docs/deploying.md", "--firestore-location nam5 --dry-run", .deploySchema),
        ("docs/deploying.md", "swift run herald dead-letters", .deadLetters),
        ("docs/schema.md", "swift run herald schema", .schema),
        ("docs/local-cloud.md", "docker ", .macContainer),
        ("docs/deploying.md", "swift run herald deploy", .deployForReal),
        ("docs/event-formats.md", "swift run ", .eventFormats),
        ("docs/local-cloud.md", "swift run herald function onMessageCreated invoke", .invokeInDev),
        ("docs/local-cloud.md", "swift run herald send", .sendInDev),
        ("docs/functions.md", "swift run herald infra", .infra),
        ("docs/deploying.md", "swift run herald infra", .infra),
        ("docs/schema.md", "swift run herald infra", .infra),
        ("docs/testing.md", "swift run herald-bench chaos", .chaosSoak),
        ("docs/local-cloud.md", "cloud_firestore_emulator", .emulator),
        ("docs/local-cloud.md", "swift run herald dev --seed demo --firestore", .emulator),
        ("docs/web-apps.md", "swift run herald dev --seed demo --project", .webApp),
    ]

    static func commands(_ check: Check) throws -> [DocumentedCommand] {
        let commands = try DocumentedCommand.all().filter { owner(of: $0) == check }
        try #require(!commands.isEmpty, "the docs no longer have a command for \(check): change its entry in `owners`")
        return commands
    }

    static func owner(of command: DocumentedCommand) -> Check? {
        owners.first { command.document == $0.document && command.text.contains($0.fragment) }?.check
    }

    @Test func everyCommandHasItsCheck() throws {
        let commands = try DocumentedCommand.all()
        #expect(commands.count >= 15, "\(commands)")
        for command in commands { #expect(Self.owner(of: command) != nil, "nothing runs \(command): give it a check here") }
        for check in Check.allCases { #expect(commands.contains { Self.owner(of: $0) == check }, "no documented command is left for \(check)") }
        #expect(try DocumentedCommand.unlabelledShellBlocks().isEmpty, "fence these blocks as ```sh, so they are run")
    }

    /// README: the demo seeds, sends, pushes "Family • Alice: Dinner at 6pm" to Bob's phone and iPad and to
    /// Carol, serves the console, stops on Ctrl-C, and a second run says it kept the first's data.
    /// docs/local-cloud.md's `herald function … invoke --dry-run` runs against it, on the message just sent.
    @Test func theReadmesDemoRunsAndKeepsItsState() async throws {
        let command = try #require(try Self.commands(.demo).first)
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let dev = try await Background.startDev(command.shell(), in: directory)
        defer { dev.terminate() }
        try await dev.waitFor { _ in (try? await dev.pushes().count) == 3 }
        let pushes = try await dev.pushes()
        #expect(Set(pushes.compactMap { $0["message"]?["token"]?.stringValue }) == ["tok-bob-phone", DemoWorld.bobsIPad, DemoWorld.carolsPhone])
        for push in pushes { #expect(push["message"]?["notification"]?["body"] == "Family • Alice: Dinner at 6pm", "\(push)") }
        #expect(dev.output.components(separatedBy: "\"Family • Alice: Dinner at 6pm\" badge 1").count - 1 == 3, "\(dev.output)")
        let console = try await HTTPClient.shared.send("GET", "\(dev.base)/", headers: ["accept": "text/html"])
        #expect(console.status == 200 && console.body.contains("<html"), "the console: \(console.status)")

        try await Self.invokeTheSentMessage(dev)
        try await Self.sendFromAnotherShell(dev)

        #expect(try await dev.interrupt() == 0, "Ctrl-C: \(dev.output.suffix(1000))")
        let again = try await Background.startDev(command.shell(), in: directory)
        defer { again.terminate() }
        try await again.waitFor { $0.contains("seed    demo world:") }
        #expect(again.output.contains("data    .herald/: kept from an earlier run"), "\(again.output.prefix(1500))")
        #expect(again.output.contains("--fresh"))
        #expect(try await again.interrupt() == 0)
    }

    /// docs/local-cloud.md: `herald function onMessageCreated invoke --document … --dry-run` plans the
    /// message as Eventarc's event would have it, and writes nothing.
    static func invokeTheSentMessage(_ dev: Background) async throws {
        let command = try #require(try commands(.invokeInDev).first)
        let project = "projects/herald-local/databases/(default)/documents"
        let listed = try JSONValue(parsing: Array(try await HTTPClient.shared.get("\(dev.base)/v1/\(project)/conversations/family/messages").body.utf8))
        let names = listed["documents"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
        let message = try #require(names.first?.split(separator: "/").last.map(String.init), "\(listed)")
        let bobBefore = try await HTTPClient.shared.get("\(dev.base)/v1/\(project)/users/bob").body

        let result = try await Shell.run(command.shell(["8787": dev.port, "MESSAGE_ID": message]))
        #expect(result.status == 0, "\(command): \(result.stderr)")
        let report = try JSONValue(parsing: result.stdout)
        #expect(report["dryRun"] == true)
        #expect(report["outcome"]?["status"] == "applied", "\(result.stdoutText.prefix(1000))")
        #expect(report["pushes"]?.arrayValue?.count == 3)
        #expect(try await HTTPClient.shared.get("\(dev.base)/v1/\(project)/users/bob").body == bobBefore, "a dry run wrote Bob's document")
    }

    /// docs/local-cloud.md: `herald send 'bob→family: On my way'` while the demo runs (given the demo's
    /// address, which the docs' 8787 stands for): Alice's and Carol's phones are alerted.
    static func sendFromAnotherShell(_ dev: Background) async throws {
        let command = try #require(try commands(.sendInDev).first)
        let result = try await Shell.run(command.shell() + " --url \(dev.base)")
        #expect(result.status == 0, "\(command): \(result.stderr)")
        try await dev.waitFor { _ in
            let bodies = (try? await dev.pushes())?.compactMap { $0["message"]?["notification"]?["body"]?.stringValue } ?? []
            return bodies.filter { $0 == "Family • Bob: On my way" }.count == 2
        }
        let tokens = try await dev.pushes().filter { $0["message"]?["notification"]?["body"] == "Family • Bob: On my way" }
            .compactMap { $0["message"]?["token"]?.stringValue }
        #expect(Set(tokens) == ["tok-alice-phone", DemoWorld.carolsPhone])
    }

    /// docs/functions.md and docs/deploying.md: `herald infra`, in the package, finds every generated
    /// file as the catalog says (a change to the catalog without it fails InfraTests too).
    @Test func theInfraCommandHasNothingToWrite() async throws {
        for command in try Self.commands(.infra) {
            let result = try await Shell.run(command.shell(), in: TestPaths.packageRoot)
            #expect(result.status == 0, "\(command): \(result.stderr)")
            #expect(result.stdoutText.contains("nothing to write"), "\(command): \(result.stdoutText)")
        }
    }

    /// docs/testing.md: the chaos soak runs for many minutes on a release build; ChaosTests runs the same
    /// world at CI size in this suite.
    @Test func theChaosSoakIsChaosTestsAtLength() throws {
        let soak = try #require(try Self.commands(.chaosSoak).first)
        try skipTest("`\(soak.text)` is the soak (many minutes, a release build): ChaosTests runs its CI-sized form")
    }

    /// README: CI runs the test command, after making the references' virtual environment with the
    /// README's own line (so a clean clone runs both as written before every landing). Running either
    /// here would be the suite within itself, or remaking the environment the other tests are using.
    @Test(arguments: [Check.testCommand, .pythonReferences])
    func ciRunsTheReadmesSetupAndTestCommands(check: Check) throws {
        let command = try #require(try Self.commands(check).first)
        let ci = try String(contentsOf: TestPaths.packageRoot.appendingPathComponent(".ci/run"), encoding: .utf8)
        let lines = ci.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("#") && !$0.isEmpty }
        #expect(lines.contains(command.text), ".ci/run does not run `\(command.text)`")
        if check == .testCommand { #expect(lines.last == command.text, "the README's test command is not the last thing CI does") }
    }

    /// docs/architecture.md: the formatter command, run on a copy of the tree, changes nothing.
    @Test func theFormatCommandLeavesTheTreeAsItIs() async throws {
        let command = try #require(try Self.commands(.format).first)
        let copy = try Scratch.directory()
        defer { try? FileManager.default.removeItem(at: copy) }
        let root = TestPaths.packageRoot
        let paths = ["Sources", "Tests", "Functions", "Benchmarks", "Fuzz", "Package.swift", ".swift-format"]
        for path in paths { try FileManager.default.copyItem(at: root.appendingPathComponent(path), to: copy.appendingPathComponent(path)) }
        let result = try await Shell.run(command.text, in: copy)
        #expect(result.status == 0, "\(result.stderr.prefix(2000))")
        var compared = 0
        for folder in paths.dropLast(2) {
            let original = root.appendingPathComponent(folder)
            for case let file as String in FileManager.default.enumerator(atPath: original.path) ?? .init() where file.hasSuffix(".swift") {
                compared += 1
                let formatted = try Data(contentsOf: copy.appendingPathComponent(folder).appendingPathComponent(file))
                #expect(formatted == (try Data(contentsOf: original.appendingPathComponent(file))), "\(folder)/\(file) is not formatted")
            }
        }
        #expect(compared > 100)
    }

    /// docs/deploying.md: the dry run prints every step and runs none.
    @Test func theDeployDryRunPrintsItsFourSteps() async throws {
        let command = try #require(try Self.commands(.deployDryRun).first)
        let result = try await Shell.run(command.shell(), in: TestPaths.packageRoot)
        #expect(result.status == 0, "\(result.stderr)")
        let output = result.stdoutText + result.stderr
        for step in 1...4 { #expect(output.contains("[\(step)/4]"), "\(output.prefix(1000))") }
        #expect(output.contains("dry run: nothing runs"))
    }

    /// docs/schema.md: show prints a preset as a file, infer writes one from the fixture export that
    /// check then finds every document fitting (run where a reader would: beside their own file).
    @Test func theSchemaCommandsRunAsTheGuideSays() async throws {
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createSymbolicLink(
            at: directory.appendingPathComponent("Tests"), withDestinationURL: TestPaths.packageRoot.appendingPathComponent("Tests"))
        let commands = try Self.commands(.schema)
        #expect(commands.count == 3, "\(commands)")
        var outputs: [String] = []
        for command in commands {
            let result = try await Shell.run(command.shell(), in: directory)
            outputs.append(result.stdoutText)
            #expect(result.status == 0, "\(command): \(result.stdoutText) \(result.stderr)")
        }
        #expect(outputs[0].contains(#""messagePattern": "chats/{chatID}/messages/{messageID}""#), "\(outputs[0])")
        let written = try String(contentsOf: directory.appendingPathComponent("my-schema.json"), encoding: .utf8)
        #expect(written.contains(#""messagePattern": "rooms/{roomId}/posts/{postId}""#) && written.contains(#""senderIDField": "authorId""#), "\(written)")
        #expect(outputs[2].contains("every document read fits the schema") && outputs[2].contains("push to u"), "\(outputs[2])")
    }

    /// docs/deploying.md: a schema file's dry run puts the triggers on its paths in the database's location.
    @Test func theSchemaFileDeploymentDryRunShowsWhereEachPartGoes() async throws {
        let command = try #require(try Self.commands(.deploySchema).first)
        let result = try await Shell.run(command.shell(), in: TestPaths.packageRoot)
        #expect(result.status == 0, "\(result.stderr)")
        let output = result.stdoutText
        #expect(
            output.contains("Firestore database (default) in nam5: Eventarc triggers there; services, images and jobs in europe-west1"), "\(output.prefix(800))"
        )
        #expect(output.contains(#"--location=nam5 --destination-run-service=herald-onmessagecreated"#))
        #expect(output.contains(#"--event-filters-path-pattern=document=rooms/\{roomId\}/posts/\{postId\}"#))
    }

    /// docs/deploying.md: the dead-letter commands as written, against Google's Pub/Sub emulator
    /// (PUBSUB_EMULATOR_HOST) holding an empty `herald-dead-letters`: DeadLettersTests replays real ones.
    @Test func theDeadLetterCommandsRunAsWritten() async throws {
        let commands = try Self.commands(.deadLetters)
        #expect(commands.count == 2 && commands[1].text.contains("--replay"), "\(commands)")
        guard GooglePubSubEmulator.isInstalled else { try skipTest("Google's Pub/Sub emulator is not installed at \(GooglePubSubEmulator.launcher)") }
        try await GooglePubSubEmulator.run { host in
            for (path, body) in [
                ("topics/herald-dead-letters", "{}"), ("subscriptions/herald-dead-letters", #"{"topic": "projects/my-project/topics/herald-dead-letters"}"#),
            ] {
                var request = HTTPClientRequest(url: "http://\(host)/v1/projects/my-project/\(path)")
                request.method = .PUT
                request.body = .bytes(ByteBuffer(string: body))
                request.headers.add(name: "content-type", value: "application/json")
                #expect(try await HTTPClient.shared.execute(request, timeout: .seconds(30)).status == .ok)
            }
            for command in commands {
                let result = try await Shell.run("PUBSUB_EMULATOR_HOST=\(host) " + command.shell(), in: TestPaths.packageRoot)
                #expect(
                    result.status == 0 && result.stdoutText == "no dead letters in herald-dead-letters\n", "\(command): \(result.stdoutText) \(result.stderr)")
            }
        }
    }

    /// docs/local-cloud.md's two lines for a Mac: no container engine runs here, so the build line is
    /// checked against the Containerfile it names, and the run line's `herald dev …` part (what the
    /// image runs) is run as written on a free port: the demo is served, and the console answers
    /// through this machine's network address, as the Mac's browser reaches it through the engine's bridge.
    @Test func theMacContainerLinesServeTheDemo() async throws {
        let commands = try Self.commands(.macContainer)
        #expect(commands.count == 2 && commands[0].text.hasPrefix("docker build -f Infra/Containerfile --build-arg PRODUCT=herald -t herald ."), "\(commands)")
        let containerfile = try String(contentsOf: TestPaths.packageRoot.appendingPathComponent("Infra/Containerfile"), encoding: .utf8)
        #expect(containerfile.contains("ARG PRODUCT") && containerfile.contains(#"ENTRYPOINT ["/usr/local/bin/app"]"#))
        let run = commands[1].text
        let image = try #require(run.range(of: " herald dev "), "\(run)")
        #expect(run.hasPrefix("docker run --rm -p 127.0.0.1:8787:8787 "), "published on the Mac's loopback only: \(run)")
        let devLine = "'\(TestPaths.executable("herald").path)' dev " + run[image.upperBound...].replacingOccurrences(of: "--port 8787", with: "--port 0")
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let dev = try await Background.startDev(devLine, in: directory)
        defer { dev.terminate() }
        try await dev.waitFor { _ in (try? await dev.pushes()) != nil }
        #expect(dev.output.contains("exposed on 0.0.0.0") && dev.output.contains("and 0.0.0.0/0"), "\(dev.output.prefix(1500))")
        if let address = NetworkExposureTests.networkAddress() {
            let console = try await HTTPClient.shared.send("GET", "http://\(address):\(dev.port)/", headers: ["accept": "text/html"])
            #expect(console.status == 200 && console.body.contains("<html"), "the console through the bridge: \(console.status)")
        }
    }

    /// docs/deploying.md: the deployment itself needs a Google project, its credentials and the
    /// network. It is the dry run's command without `--dry-run`, so the dry run shows its steps.
    @Test func theDeploymentIsTheDryRunForReal() throws {
        let real = try #require(try Self.commands(.deployForReal).first)
        let dry = try #require(try Self.commands(.deployDryRun).first)
        #expect(dry.text.replacingOccurrences(of: " --dry-run", with: "") == real.text)
        try skipTest("`\(real.text)` deploys to Google Cloud: no project, credentials or network here (its dry run is checked)")
    }

    /// docs/event-formats.md: each `invoke` applies its event, and the sweep writes.
    @Test func theEventFormatsExamplesApplyAsTheTextSays() async throws {
        for command in try Self.commands(.eventFormats) {
            let result = try await Shell.run(command.shell(), in: TestPaths.packageRoot)
            #expect(result.status == 0, "\(command): \(result.stderr)")
            let report = try JSONValue(parsing: result.stdout)
            if command.text.contains(" invoke ") {
                #expect(report["outcome"]?["status"] == "applied", "\(command): \(report["outcome"].map { "\($0)" } ?? "")")
            } else {
                let written = report["sweeps"]?.objectValue?.values.compactMap { $0["written"]?.int64Value }.reduce(0, +) ?? 0
                #expect(written > 0, "\(command): \(result.stdoutText.prefix(500))")
            }
        }
    }

    /// docs/web-apps.md: `--project` names the project the app's config has, and the demo is in it.
    @Test func aWebAppsProjectIsServed() async throws {
        let command = try #require(try Self.commands(.webApp).first)
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let dev = try await Background.startDev(command.shell(["YOUR_PROJECT_ID": "my-chat-app"]), in: directory)
        defer { dev.terminate() }
        try await dev.waitFor { $0.contains("seed    demo world:") }
        #expect(dev.output.contains("(project my-chat-app,"), "\(dev.output.prefix(1500))")
        let family = try await HTTPClient.shared.get("\(dev.base)/v1/projects/my-chat-app/databases/(default)/documents/conversations/family")
        #expect(family.status == 200, "\(family.body.prefix(500))")
        #expect(try await dev.interrupt() == 0)
    }

    /// docs/local-cloud.md: Google's emulator started with the launcher line, and `herald dev` on it,
    /// registers its triggers there and says the emulator sends each write's event.
    @Test func googlesEmulatorStartedAsWrittenSendsHeraldItsEvents() async throws {
        let commands = try Self.commands(.emulator)
        try #require(commands.count == 2)
        let gcloud = try await Shell.run("command -v gcloud && command -v java")
        if gcloud.status != 0 { try skipTest("gcloud or Java is not installed: the command starts gcloud's Firestore emulator") }
        let emulatorPort = String(try GoogleFirestoreEmulator.freePort())
        let devPort = String(try GoogleFirestoreEmulator.freePort())
        let directory = try Scratch.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let ports = ["8080": emulatorPort, "8787": devPort]
        try await GoogleFirestoreEmulator.takingTurn {
            let emulator = try await Background.start(commands[0].shell(ports), in: directory)
            defer { emulator.terminate() }
            try await emulator.waitFor(timeout: .seconds(90)) { _ in
                (try? await HTTPClient.shared.send("GET", "http://127.0.0.1:\(emulatorPort)/", timeout: .seconds(2)).body.hasPrefix("Ok")) == true
            }
            let dev = try await Background.startDev(commands[1].shell(ports) + " --port \(devPort)", in: directory)
            defer { dev.terminate() }
            try await dev.waitFor(timeout: .seconds(180)) { $0.contains("sends each write's event") || $0.contains("polling") }
            #expect(dev.output.contains("127.0.0.1:\(emulatorPort) sends each write's event"), "\(dev.output.prefix(2000))")
            #expect(try await dev.interrupt() == 0)
        }
    }
}
