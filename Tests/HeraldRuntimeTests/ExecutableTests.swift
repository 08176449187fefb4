import ChatFunctions
import FirestoreEvents
import FirestoreModel
import Foundation
import GoogleClients
import HeraldCore
import HeraldRuntime
import HeraldTesting
import Testing
import WireFormats

#if canImport(Glibc)
import Glibc
#endif

/// The built executables, run as a user or Cloud Run would run them.
@Suite(.serialized) struct ExecutableTests {
    static let documents = TestPaths.fixture("default/documents.json").path

    @Test func sigtermWhileABodyIsArrivingStillAnswersItAndExitsZero() async throws {
        let server = try await ServingProcess.start("onMessageCreated", arguments: ["--documents", Self.documents])
        let fixture = try Fixture.request(from: Array(Data(contentsOf: TestPaths.fixture("default/message-created.binary-protobuf.json"))))
        let (interim, response) = try await offThePool {
            let connection = try RawHTTPConnection(port: server.port)
            var head = "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: \(fixture.body.count)\r\nExpect: 100-continue\r\n"
            for (name, value) in fixture.headers { head += "\(name): \(value)\r\n" }
            try connection.send(head + "\r\n")
            // SIGTERM once the server has read the head: the request is under way, not a connection yet to be read.
            let continued = connection.read(until: "100 Continue", timeout: 30)
            let half = fixture.body.count / 2
            try connection.send(Array(fixture.body[..<half]))
            server.signal(SIGTERM)
            usleep(300_000)
            try connection.send(Array(fixture.body[half...]))
            return (continued, connection.readAll())
        }
        #expect(interim.contains("100 Continue"), "\(interim)")
        #expect(response.hasPrefix("HTTP/1.1 200"), "\(response)")
        #expect(response.contains("\"eventId\":\"default-evt-1\""))
        let (status, output) = try await server.waitForExit()
        #expect(status == 0, "\(output)")
        #expect(output.contains("stopped"))
    }

    /// Both event loops log a line per event to the same stdout (a pipe here, as on Cloud Run), each
    /// with its own write: no line is cut into or lost.
    @Test func logLinesStayWholeWhenEventsRunAtOnce() async throws {
        let server = try await ServingProcess.start("onMessageCreated", arguments: ["--documents", Self.documents])
        let fixture = try Fixture.request(from: Array(Data(contentsOf: TestPaths.fixture("default/message-created.binary-protobuf.json"))))
        var head = "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: \(fixture.body.count)\r\nConnection: close\r\n"
        for (name, value) in fixture.headers { head += "\(name): \(value)\r\n" }
        let request = Array((head + "\r\n").utf8) + fixture.body
        let (senders, each) = (8, 50)
        let answered = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<senders {
                group.addTask {
                    try await offThePool {
                        var ok = 0
                        for _ in 0..<each {
                            let connection = try RawHTTPConnection(port: server.port)
                            try connection.send(request)
                            if connection.readAll(timeout: 10).hasPrefix("HTTP/1.1 200") { ok += 1 }
                        }
                        return ok
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(answered == senders * each)
        server.signal(SIGTERM)
        let (status, output) = try await server.waitForExit()
        #expect(status == 0)
        let lines = output.split(separator: "\n")
        let broken = lines.filter { (try? JSONValue(parsing: String($0))) == nil }
        #expect(broken.isEmpty, "\(broken.prefix(3))")
        #expect(lines.filter { $0.contains("planned 4 writes") }.count == senders * each)
    }

    @Test func serveHonoursPORTAndAnswersHealthz() async throws {
        let wanted = try GoogleFirestoreEmulator.freePort()
        let probe = try await ServingProcess.start(
            "tokenCleanup", arguments: ["--documents", Self.documents], port: nil, environment: ["PORT": String(wanted)])
        #expect(probe.port == wanted)
        let answer = try await offThePool {
            let connection = try RawHTTPConnection(port: probe.port)
            try connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            return connection.readAll()
        }
        #expect(answer.hasPrefix("HTTP/1.1 200"))
        probe.signal(SIGTERM)
        #expect(try await probe.waitForExit().status == 0)
    }

    /// As Cloud Run and container runtimes run it: a user without privileges. A socket option only a
    /// privileged process may set (SO_DEBUG, where TCP_NODELAY was meant) once closed every connection there.
    @Test func serveAnswersAsAnUnprivilegedUser() async throws {
        guard getuid() != 0 || FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else {
            try skipTest("running as root without setpriv (util-linux) to drop the privileges")
        }
        let server = try await ServingProcess.start("onMessageCreated", arguments: ["--documents", Self.documents], unprivileged: true)
        defer { server.stop() }
        let answer = try await offThePool {
            let connection = try RawHTTPConnection(port: server.port)
            try connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            return connection.readAll(timeout: 5)
        }
        #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer)")
    }

    @Test(arguments: ["onMessageCreated", "onReadReceipt", "tokenCleanup"])
    func invokePrintsAReportForEveryPreset(_ function: String) async throws {
        for preset in ["default", "prd000", "prd001", "prd004"] {
            let result = try await ProcessRunner.run(
                TestPaths.executable(function),
                [
                    "invoke", "--event", TestPaths.fixture("\(preset)/message-created.binary-protobuf.json").path,
                    "--documents", TestPaths.fixture("\(preset)/documents.json").path, "--schema", preset,
                ])
            #expect(result.status == 0, "\(function) \(preset): \(result.stderr)")
            let report = try JSONValue(parsing: result.stdout)
            #expect(report["function"] == .string(function))
            #expect(report["event"]?["id"] == .string("\(preset)-evt-1"))
            #expect(report["event"]?["encoding"] == "cloudevent-binary-protobuf")
            // onMessageCreated plans for real; the others skip a message event: not their trigger.
            #expect(report["outcome"]?["status"] == (function == "onMessageCreated" ? "applied" : "skipped"))
            #expect(report["dryRun"] == true)
        }
    }

    @Test func invokeRefusesBadFixturesWithExitStatus2() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bad-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let cases: [(String, String)] = [
            ("not json at all", "not JSON"),
            (#"{"headers": {"content-type": "application/protobuf"}, "body": "%%%"}"#, "base64"),
            (#"{"context": {"eventId": "1"}}"#, "eventType"),
            (
                #"{"specversion": "1.0", "id": "x", "source": "//firestore.googleapis.com/projects/p/databases/d", "type": "nope", "time": "2026-11-20T09:00:00Z", "subject": "documents/a/b"}"#,
                "unknown event type"
            ),
        ]
        for (index, (content, fragment)) in cases.enumerated() {
            let file = dir.appendingPathComponent("bad-\(index).json")
            try content.write(to: file, atomically: true, encoding: .utf8)
            let result = try await ProcessRunner.run(TestPaths.executable("onMessageCreated"), ["invoke", "--event", file.path, "--documents", Self.documents])
            #expect(result.status == 2, "\(content): \(result.stderr)")
            #expect((result.stderr + result.stdoutText).contains(fragment), "\(result.stderr) \(result.stdoutText)")
        }
        let missing = try await ProcessRunner.run(
            TestPaths.executable("onMessageCreated"), ["invoke", "--event", "/nonexistent.json", "--documents", Self.documents])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("cannot read the event fixture"))
    }

    @Test func badConfigurationIsReportedAtStart() async throws {
        var env = ProcessInfo.processInfo.environment
        env["LOG_LEVEL"] = "loud"
        env["FCM_ENDPOINT"] = "not a url"
        env["HERALD_SCHEMA"] = "prd999"
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = "ftp://collector"
        env["OTEL_EXPORTER_OTLP_PROTOCOL"] = "grpc"
        env["OTEL_EXPORTER_OTLP_HEADERS"] = "api-key=sup3rsecret,broken"
        env["OTEL_TRACES_SAMPLER"] = "traceidratio"
        env["OTEL_TRACES_SAMPLER_ARG"] = "1.5"
        let result = try await ProcessRunner.run(
            TestPaths.executable("onMessageCreated"), ["invoke", "--event", "x", "--documents", Self.documents], environment: env)
        #expect(result.status != 0)
        #expect(result.stderr.contains("LOG_LEVEL"))
        #expect(result.stderr.contains("FCM_ENDPOINT"))
        #expect(result.stderr.contains("OTLP traces endpoint must be an http(s) URL"), "\(result.stderr)")
        #expect(result.stderr.contains("OTEL_EXPORTER_OTLP_PROTOCOL is grpc"))
        #expect(result.stderr.contains("OTEL_EXPORTER_OTLP_HEADERS must be key=value pairs") && !result.stderr.contains("sup3rsecret"))
        #expect(result.stderr.contains("OTEL_TRACES_SAMPLER must be"))
        for key in [
            "LOG_LEVEL", "FCM_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_TRACES_SAMPLER",
            "OTEL_TRACES_SAMPLER_ARG",
        ] {
            env[key] = nil
        }
        let fixture = TestPaths.fixture("default/message-created.legacy.json").path
        let schema = try await ProcessRunner.run(
            TestPaths.executable("onMessageCreated"), ["invoke", "--event", fixture, "--documents", Self.documents], environment: env)
        #expect(schema.stderr.contains("unknown schema \"prd999\""))
    }

    @Test func everyExecutableHasHelpThatNamesItsCommands() async throws {
        for (name, commands) in [
            ("onMessageCreated", ["invoke"]), ("onReadReceipt", ["invoke"]), ("presenceSweeper", ["sweep"]),
            ("tokenCleanup", ["invoke", "sweep"]),
        ] {
            let result = try await ProcessRunner.run(TestPaths.executable(name), ["--help"])
            #expect(result.status == 0)
            #expect(result.stdoutText.contains("serve (default)"), "\(name)")
            for command in commands { #expect(result.stdoutText.contains("  \(command) "), "\(name) \(command)") }
            #expect(result.stdoutText.contains("  invoke ") == commands.contains("invoke"), "\(name)")
        }
        let version = try await ProcessRunner.run(TestPaths.executable("herald"), ["version"])
        #expect(version.stdoutText.hasPrefix("herald \(HeraldVersion.current)"))
    }

    /// A command line that cannot run is refused before anything starts: exit status 64 (EX_USAGE) and the reason.
    @Test func commandLinesThatCannotRunAreRefusedWithTheReason() async throws {
        for (name, arguments, reason) in [
            ("onMessageCreated", ["serve", "--bogus"], "unknown option '--bogus'"),
            ("onMessageCreated", ["invoke"], "missing expected argument '--event <file>'"),
            ("onMessageCreated", ["--port", "eighty"], "'--port' must be a whole number"),
            ("onMessageCreated", ["serve", "--dry-run=yes"], "'--dry-run' takes no value"),
            ("onMessageCreated", ["serve", "extra"], "unexpected argument 'extra'"),
            ("presenceSweeper", ["invoke", "--event", "x"], "unknown subcommand 'invoke'"),
        ] {
            let result = try await ProcessRunner.run(TestPaths.executable(name), arguments)
            #expect(result.status == 64, "\(name) \(arguments)")
            #expect(result.stderr.contains(reason), "\(name) \(arguments): \(result.stderr)")
        }
        let help = try await ProcessRunner.run(TestPaths.executable("tokenCleanup"), ["help", "sweep"])
        #expect(help.status == 0 && help.stdoutText.contains("--at <time>"), "\(help.stdoutText)")
    }

    /// `presenceSweeper sweep` as cron runs it: one pass against Firestore, a JSON report, exit 0.
    @Test func sweepRunsOncePrintsCountsAndExits() async throws {
        try await withLocalCloud { cloud in
            let db = cloud.firestore(project: "cron")
            let stale = Timestamp.now().adding(.seconds(-600))
            _ = try await db.commit([
                Write(.update(try db.name("users/gone"), fields: ["online": .boolean(true), "heartbeatAt": .timestamp(stale)], mask: nil)),
                Write(
                    .update(
                        try db.name("users/here"), fields: ["online": .boolean(true), "heartbeatAt": .timestamp(Timestamp.now())], mask: nil)),
            ])
            var environment = ProcessInfo.processInfo.environment
            environment["FIRESTORE_EMULATOR_HOST"] = cloud.host
            environment["GOOGLE_CLOUD_PROJECT"] = "cron"
            let result = try await ProcessRunner.run(TestPaths.executable("presenceSweeper"), ["sweep"], environment: environment)
            #expect(result.status == 0, "\(result.stderr)")
            let report = try JSONValue(parsing: result.stdout)
            #expect(report["sweeps"]?["offline"]?["checked"] == 1 && report["sweeps"]?["offline"]?["written"] == 1, "\(result.stdoutText)")
            #expect(try await db.get(try db.name("users/gone"))?["lastSeen"] == .timestamp(stale))
            #expect(try await db.get(try db.name("users/here"))?["online"] == .boolean(true))
        }
    }

    /// The fixture sets run offline: a presence sweep over a snapshot at a fixed time, and a phone that
    /// changed accounts, for every preset that has them.
    @Test(arguments: ["default", "prd000", "prd001", "prd004"])
    func fixturesRunOffline(preset: String) async throws {
        let sweep = try await ProcessRunner.run(
            TestPaths.executable("presenceSweeper"),
            [
                "sweep", "--documents", TestPaths.fixture("\(preset)/presence.json").path, "--at", "2026-11-20T09:02:00Z", "--schema", preset,
            ])
        #expect(sweep.status == 0, "\(sweep.stderr)")
        let report = try JSONValue(parsing: sweep.stdout)
        // Gone goes offline (typing cleared with it), Quiet stops typing; Here and Away are left alone.
        #expect(report["sweeps"]?["offline"]?["written"] == 1 && report["sweeps"]?["typing"]?["written"] == 1, "\(preset): \(sweep.stdoutText)")
        let planned = report["planned"]?.arrayValue ?? []
        #expect(planned.compactMap { $0["update"]?["name"]?.stringValue?.split(separator: "/").last.map(String.init) } == ["gone", "quiet"])
        let schema = try #require(Schema.presets[preset])
        if let lastSeen = schema.lastSeenField {
            #expect(planned.first?["update"]?["fields"]?[lastSeen]?["timestampValue"] == "2026-11-20T09:00:00Z", "\(preset)")
        }

        let account = TestPaths.fixture("\(preset)/account-change.json")
        guard FileManager.default.fileExists(atPath: account.path) else { return }
        let invoke = try await ProcessRunner.run(
            TestPaths.executable("tokenCleanup"),
            [
                "invoke", "--event", TestPaths.fixture("\(preset)/user-written.binary-protobuf.json").path, "--documents", account.path, "--schema", preset,
            ])
        #expect(invoke.status == 0, "\(invoke.stderr)")
        let writes = try JSONValue(parsing: invoke.stdout)["writes"]?.arrayValue ?? []
        let previousOwner = preset == "prd004" ? "users/u9" : "users/dave"
        #expect(
            writes.contains { ($0["update"]?["name"] ?? $0["transform"]?["document"])?.stringValue?.hasSuffix(previousOwner) == true },
            "\(preset): the token leaves its previous owner: \(invoke.stdoutText)")
    }

    /// The indexes a deployment creates are derived from the schema (`herald indexes`, `herald schema
    /// deployment`): the presence query's composite index is the one its filters need.
    @Test(arguments: ["default", "prd000", "prd001", "prd004"])
    func derivedIndexesMatchTheQueries(preset: String) async throws {
        let printed = try await ProcessRunner.run(TestPaths.executable("herald"), ["indexes", "--schema", preset])
        #expect(printed.status == 0, "\(printed.stderr)")
        let declared = printed.stdout
        // The presence query: equality on the online field, range on the heartbeat, in one composite index.
        let schema = try #require(Schema.presets[preset])
        let query = PresenceSweeper(schema: schema).sweeps(at: Timestamp(seconds: 0))[0].query
        guard case .and(let filters) = query.filter else {
            Issue.record("expected a composite filter")
            return
        }
        let fields = filters.compactMap { if case .field(let path, _, _) = $0 { path.description } else { nil } }
        let index = try JSONValue(parsing: Array(declared))["indexes"]?.arrayValue?.first?["fields"]?.arrayValue?.compactMap { $0["fieldPath"]?.stringValue }
        #expect(index == fields)
    }
}
