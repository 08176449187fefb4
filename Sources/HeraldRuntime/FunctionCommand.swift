import ArgumentParser
import AsyncHTTPClient
import FirestoreEvents
import FirestoreModel
import GoogleClients
import HeraldCore
import Logging

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// The command line of every function executable: `NAME serve` (the default), `NAME invoke` for a
/// function that takes events, `NAME sweep` for one that runs on a schedule.
public struct FunctionCommand<Function: ConfigurableFunction>: AsyncParsableCommand {
    public static var configuration: CommandConfiguration {
        var subcommands: [any ParsableCommand.Type] = [ServeCommand<Function>.self]
        if Function.self is any EventFunction.Type { subcommands.append(InvokeCommand<Function>.self) }
        if Function.self is any ScheduledFunction.Type { subcommands.append(SweepCommand<Function>.self) }
        return CommandConfiguration(
            commandName: Function.name,
            abstract: Function.summary,
            discussion: """
                Configuration comes from the environment: GOOGLE_CLOUD_PROJECT, GOOGLE_APPLICATION_CREDENTIALS, \
                FIRESTORE_EMULATOR_HOST, FIRESTORE_DATABASE (default "(default)"), FCM_ENDPOINT, HERALD_SCHEMA \
                (default, prd000, prd001, prd004, or a schema JSON file), HERALD_REQUIRE_OIDC_AUDIENCE and \
                HERALD_OIDC_JWKS_URL (callers must send an OIDC identity token for this audience), HERALD_ALLOWED_CALLERS \
                (service-account emails allowed to call), HERALD_ALLOW_UNAUTHENTICATED (serve a non-loopback address without \
                identity checks, where the platform checks callers), HERALD_API_TIMEOUT, HERALD_PUSH_LEASE, LOG_LEVEL, \
                LOG_FORMAT (json or text), PORT.\(Function.settings.isEmpty ? "" : " \(Function.name) also reads \(Function.settings.joined(separator: ", ")).")
                """,
            subcommands: subcommands,
            defaultSubcommand: ServeCommand<Function>.self
        )
    }

    public init() {}
}

/// Options shared by `serve` and `invoke`: where documents come from, and whether anything is written.
struct SourceOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("A JSON snapshot of the documents the function may read; runs fully offline.", valueName: "file"))
    var documents: String?

    @Flag(name: .long, help: "Read from the configured Firestore, but write and send nothing: only report the plan.")
    var dryRun = false

    @Option(
        name: .long, help: ArgumentHelp("Schema preset (default, prd000, prd001, prd004) or schema JSON file; overrides HERALD_SCHEMA.", valueName: "schema"))
    var schema: String?

    /// The function assembled on the documents these options name (call `shutdown` on it when done).
    func setUp<Function: ConfigurableFunction>(
        _: Function.Type, configuration: RuntimeConfiguration, logger: Logger,
        eventDocument: FirestoreDocument? = nil, metrics: RuntimeMetrics? = nil
    ) async throws -> FunctionRuntime {
        do {
            return try await FunctionRuntime.assemble(
                Function.self, schema: schema, configuration: configuration,
                source: documents.map { .snapshot(path: $0, eventDocument: eventDocument) } ?? .google(dryRun: dryRun),
                logger: logger, metrics: metrics)
        } catch let error as FunctionRuntime.SettingsError {
            throw ValidationError(error.description)
        }
    }
}

/// One line on standard error (logs of `invoke` and `sweep`, whose standard output is their report).
func writeToStandardError(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
}

func loadConfiguration() throws -> RuntimeConfiguration {
    do {
        return try RuntimeConfiguration(environment: ProcessInfo.processInfo.environment, stdoutIsTerminal: isatty(STDOUT_FILENO) == 1)
    } catch {
        throw ValidationError(error.description)
    }
}

struct ServeCommand<Function: ConfigurableFunction>: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: "serve",
            abstract: "Serve POST / (one Firestore event per request, or a scheduled run), POST /sweep and GET /healthz over HTTP.",
            discussion: """
                Answers 2xx once the event's effects are done (or nothing needs doing), 400 with a JSON reason \
                for a request that can never succeed, 503/429 for a transient failure so the trigger retries, \
                401 when HERALD_REQUIRE_OIDC_AUDIENCE is set and the caller's identity token does not verify. \
                SIGTERM stops accepting, finishes the requests in flight, and exits 0.
                """
        )
    }

    @Option(name: .long, help: "Port to listen on (default: $PORT, else 8080).")
    var port: Int?

    @Option(name: .long, help: "Address to bind.")
    var host = "0.0.0.0"

    @OptionGroup var source: SourceOptions

    func run() async throws {
        let configuration = try loadConfiguration()
        if configuration.requiredAudience == nil, !configuration.allowUnauthenticated, !RuntimeConfiguration.isLoopback(host) {
            throw ValidationError(
                """
                refusing to serve \(Function.name) on \(host) to anyone who can reach it: set HERALD_REQUIRE_OIDC_AUDIENCE (the service's \
                URL) and HERALD_ALLOWED_CALLERS (the trigger's and scheduler's service accounts), or HERALD_ALLOW_UNAUTHENTICATED=1 where \
                the platform checks callers itself (Cloud Run IAM), or --host 127.0.0.1
                """)
        }
        let logger = Logger.herald(Function.name, configuration: configuration)
        let metrics = configuration.metricsEnabled ? RuntimeMetrics(function: Function.name) : nil
        let wiring = try await source.setUp(Function.self, configuration: configuration, logger: logger, metrics: metrics)
        let identity = configuration.requiredAudience.map { audience in
            IdentityTokenVerifier(
                audience: audience, jwksURL: configuration.oidcJWKSURL ?? IdentityTokenVerifier.googleJWKS,
                allowedCallers: configuration.allowedCallers, httpClient: .shared)
        }
        let exporter = configuration.traceExport.map {
            TraceExporter(recorder: SpanRecorder(sampler: $0.sampler), settings: $0, service: Function.name, logger: logger)
        }
        let server = FunctionServer(
            name: Function.name, events: wiring.events, sweeper: wiring.sweeper, identity: identity, logger: logger,
            metrics: metrics, spans: exporter?.recorder)
        let port = self.port ?? configuration.port
        let app = server.application(host: host, port: port) { bound in
            logger.info("\(Function.name) listening on \(host):\(bound)")
        }
        do {
            try await withThrowingDiscardingTaskGroup { group in
                if let exporter { group.addTask { await exporter.run() } }
                if let metricsPort = configuration.metricsPort {
                    let metricsApp = server.metricsApplication(port: metricsPort)
                    group.addTask { try await metricsApp.run() }
                    logger.info("metrics for a collector in this instance at http://127.0.0.1:\(metricsPort)/metrics")
                }
                try await app.runService()
                group.cancelAll()
            }
        } catch {
            await wiring.shutdown()
            throw error
        }
        // The last spans (of the requests that finished as it stopped), outside the cancelled loop.
        await exporter?.export()
        await wiring.shutdown()
        logger.info("\(Function.name) stopped")
    }
}

struct InvokeCommand<Function: ConfigurableFunction>: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: "invoke",
            abstract: "Run the function once on an event fixture and print a JSON report of its effects.",
            discussion: """
                The fixture is a structured CloudEvent JSON, a legacy (1st-gen) event JSON, or \
                {"headers": {...}, "body": ...} for a binary-mode CloudEvent (body as JSON, or base64 protobuf). \
                The report lists the event, the outcome (applied, skipped with a reason, or duplicate), the documents \
                read, the writes and the pushes.

                Exit status: 0 handled, 2 bad fixture or event, 75 transient failure.
                """
        )
    }

    @Option(name: .long, help: ArgumentHelp("The event fixture file.", valueName: "file"))
    var event: String

    @OptionGroup var source: SourceOptions

    func run() async throws {
        var configuration = try loadConfiguration()
        configuration.logFormat = .text
        // Logs go to stderr so stdout is only the report.
        let logger = Logger.herald(
            Function.name, configuration: configuration,
            sink: LineSink { line in
                writeToStandardError(line)
            })
        let request: EventRequest
        do {
            request = try Fixture.request(from: Array(Data(contentsOf: URL(fileURLWithPath: event))))
        } catch let error as FixtureError {
            throw Self.badFixture("bad fixture \(event): \(error)")
        } catch {
            throw Self.badFixture("cannot read the event fixture \(event): \(error)")
        }
        let wiring = try await source.setUp(
            Function.self, configuration: configuration, logger: logger,
            eventDocument: (try? EventDecoder.decode(request))?.change.newDocument)
        guard let events = wiring.events else { throw ValidationError("\(Function.name) takes no events") }
        let result = await events.process(request, logger: logger)
        await wiring.shutdown()
        let output = result.report?.json ?? result.body
        print(output.serialized(pretty: true))
        switch result.status {
        case 200..<300: return
        case 429, 503: throw ExitCode(75)
        case 400..<500: throw ExitCode(2)
        default: throw ExitCode(1)
        }
    }

    static func badFixture(_ message: String) -> ExitCode {
        writeToStandardError("error: \(message)")
        return ExitCode(2)
    }
}

extension FunctionCommand {
    /// The executable's entry point. (A generic command cannot be `@main`, and top-level code would
    /// pick ArgumentParser's synchronous `main()`.)
    public static func run(arguments: [String]? = nil) async -> Never {
        do {
            var command = try parseAsRoot(arguments)
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            Self.exit()
        } catch {
            Self.exit(withError: error)
        }
    }
}

struct SweepCommand<Function: ConfigurableFunction>: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: "sweep",
            abstract: "Run the scheduled pass once (for cron) and print a JSON report of what it found and changed.",
            discussion: """
                With --documents FILE it runs fully offline over a snapshot and lists the writes it would make. \
                Exit status: 0 done, 75 transient failure (run it again), 1 otherwise.
                """
        )
    }

    @OptionGroup var source: SourceOptions

    @Option(name: .long, help: ArgumentHelp("Sweep as if it were this time (RFC 3339), e.g. to replay a snapshot; default: now.", valueName: "time"))
    var at: String?

    func run() async throws {
        var configuration = try loadConfiguration()
        configuration.logFormat = .text
        let logger = Logger.herald(
            Function.name, configuration: configuration,
            sink: LineSink { line in
                writeToStandardError(line)
            })
        var date = Date()
        if let at {
            guard let time = Timestamp(rfc3339: at) else { throw ValidationError("--at must be an RFC 3339 time such as 2026-11-20T09:02:00Z, not \"\(at)\"") }
            date = time.date
        }
        let wiring = try await source.setUp(Function.self, configuration: configuration, logger: logger)
        guard let sweeper = wiring.sweeper else {
            await wiring.shutdown()
            throw ValidationError("\(Function.name) does not run on a schedule")
        }
        do {
            let report = try await sweeper.run(at: date, logger: logger)
            await wiring.shutdown()
            print(report.json.serialized(pretty: true))
        } catch {
            await wiring.shutdown()
            let response = responseToFailure(error, logger: logger)
            print(response.body.serialized(pretty: true))
            throw ExitCode(response.status == 503 || response.status == 429 ? 75 : 1)
        }
    }
}

extension FunctionDeclaration {
    /// Runs the function's command line (`serve`, `invoke`, `sweep`), as its own executable does.
    public func run(arguments: [String]) async -> Never { await type.runCommand(arguments: arguments) }
}

extension ConfigurableFunction {
    static func runCommand(arguments: [String]) async -> Never { await FunctionCommand<Self>.run(arguments: arguments) }
}
