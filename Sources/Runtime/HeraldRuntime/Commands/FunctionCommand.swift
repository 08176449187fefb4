import FirestoreEvents
import FirestoreModel
import GoogleClients
import HeraldCore
import HeraldHTTPClient
import HeraldHTTPServer
import Logging
import Telemetry
import WireFormats

#if canImport(Glibc)
import Glibc
import SystemAccess
#endif

/// The command line of every function executable: `NAME serve` (the default), `NAME invoke` for a
/// function that takes events, `NAME sweep` for one that runs on a schedule, each on the host for the
/// function's kind (`FunctionHost`).
public enum FunctionCommand<Function: ConfigurableFunction> {
    /// The executable's entry point (the first line of its `main.swift`). Swift's tasks then run on the
    /// NIO event loops that serve the requests, not on a pool of their own: a request's work starts on
    /// the thread that read it, without handing over between threads twice per request. On the main
    /// actor, where `main.swift` starts, so that it installs them before any task needs a thread (the
    /// default executor would start one of its own for this call).
    @MainActor public static func main() async -> Never {
        EventLoopExecutor.install()
        guard await EventLoopExecutor.tasksRunOnEventLoops() else {
            writeToStandardError(
                "Error: Swift's tasks do not run on the event loops: the runtime did not take the executor hook "
                    + "(swift_task_enqueueGlobal_hook). This toolchain's concurrency runtime differs from the one Herald was written for.")
            Glibc.exit(70)
        }
        exitWithParent()
        await run()
    }

    /// Started by `herald dev` (`HERALD_DEV_PARENT`): go when it goes, even if it was killed without a
    /// chance to stop this process (Cloud Run has no such parent, and sets no such variable).
    static func exitWithParent() {
        guard let text = getenv("HERALD_DEV_PARENT").map({ String(cString: $0) }), let parent = Int32(text), parent > 1 else { return }
        Task.detached {
            while getppid() == parent { try? await Task.sleep(for: .seconds(1)) }
            Glibc.exit(0)
        }
    }

    /// Runs the subcommand `arguments` name (the process's own by default) and exits with its status.
    public static func run(arguments: [String]? = nil) async -> Never {
        await Function.visitKind(HostOfKind(arguments: arguments ?? Array(CommandLine.arguments.dropFirst())))()
    }
}

/// The command line of one host.
enum HostCommandLine<Host: CommandLineHost> {
    typealias Function = Host.Function

    static var discussion: String {
        """
        Configuration comes from the environment: GOOGLE_CLOUD_PROJECT, GOOGLE_APPLICATION_CREDENTIALS, \
        FIRESTORE_EMULATOR_HOST, FIRESTORE_DATABASE (default "(default)"), FCM_ENDPOINT, HERALD_SCHEMA \
        (default, prd000, prd001, prd004, or a schema JSON file), HERALD_REQUIRE_OIDC_AUDIENCE and \
        HERALD_OIDC_JWKS_URL (callers must send an OIDC identity token for this audience), HERALD_ALLOWED_CALLERS \
        (service-account emails allowed to call), HERALD_ALLOW_UNAUTHENTICATED (serve a non-loopback address without \
        identity checks, where the platform checks callers), HERALD_API_TIMEOUT, HERALD_PUSH_LEASE, LOG_LEVEL, \
        LOG_FORMAT (json or text), PORT.\(Function.settings.isEmpty ? "" : " \(Function.name) also reads \(Function.settings.joined(separator: ", ")).")
        """
    }

    static var commands: [CommandLineArguments.Command] { [ServeCommand<Host>.command] + Host.subcommands }

    /// Runs the subcommand `arguments` name and exits with its status.
    static func run(arguments: [String]) async -> Never {
        var arguments = arguments
        let asksForHelp = arguments.first == "help" || arguments.contains { $0 == "-h" || $0 == "--help" }
        let named = arguments.first.flatMap { $0.hasPrefix("-") ? nil : $0 }
        // `serve`, the default, is every function's: its options are read without listing the other
        // subcommands, which would be work before the port opens.
        var command = ServeCommand<Host>.command
        if asksForHelp || (named != nil && named != "serve") {
            let commands = commands
            let rootHelp = CommandLineArguments.help(name: Function.name, abstract: Function.summary, discussion: discussion, commands: commands)
            if arguments.first == "help" {
                arguments.removeFirst()
                guard let name = arguments.first else { finish(printing: rootHelp, status: 0) }
                guard let command = commands.first(where: { $0.name == name }) else { finish(usage: "unknown subcommand '\(name)'", help: rootHelp) }
                finish(printing: CommandLineArguments.help(name: Function.name, command: command), status: 0)
            }
            if let named {
                guard let found = commands.first(where: { $0.name == named }) else { finish(usage: "unknown subcommand '\(named)'", help: rootHelp) }
                command = found
            } else {
                finish(printing: rootHelp, status: 0)
            }
            if asksForHelp { finish(printing: CommandLineArguments.help(name: Function.name, command: command), status: 0) }
        }
        if named != nil { arguments.removeFirst() }
        do {
            let options = try CommandLineArguments(arguments, for: command)
            if command.name == ServeCommand<Host>.command.name {
                try await ServeCommand<Host>(options).run()
            } else {
                try await Host.run(command.name, options: options)
            }
            Glibc.exit(0)
        } catch let error as CommandLineArguments.UsageError {
            finish(usage: error.description, help: "\(Function.name) \(command.name)")
        } catch let error as ExitStatus {
            Glibc.exit(error.status)
        } catch {
            writeToStandardError("Error: \(error)")
            Glibc.exit(1)
        }
    }

    static func finish(printing text: String, status: Int32) -> Never {
        print(text)
        exit(status)
    }

    static func finish(usage message: String, help: String) -> Never {
        let command = help.hasPrefix("OVERVIEW") ? Function.name : help
        writeToStandardError("Error: \(message)\nUsage: see '\(command) --help'.")
        Glibc.exit(64)
    }
}

/// Ends the process with this status, the reason already said.
struct ExitStatus: Error {
    var status: Int32
    init(_ status: Int32) { self.status = status }
}

/// Options shared by `serve`, `invoke` and `sweep`: where documents come from, and whether anything is written.
struct SourceOptions {
    static let options: [CommandLineArguments.Option] = [
        .value("documents", "file", "A JSON snapshot of the documents the function may read; runs fully offline."),
        .flag("dry-run", "Read from the configured Firestore, but write and send nothing: only report the plan."),
        .value("schema", "schema", "Schema preset (default, prd000, prd001, prd004) or schema JSON file; overrides HERALD_SCHEMA."),
    ]

    var documents: String?
    var dryRun: Bool
    var schema: String?

    init(_ options: CommandLineArguments) {
        documents = options["documents"]
        dryRun = options.has("dry-run")
        schema = options["schema"]
    }

    /// The function and the platform these options name (call `shutdown` on it when done).
    func setUp<Function: ConfigurableFunction>(
        _: Function.Type, configuration: RuntimeConfiguration, logger: Logger,
        eventDocument: FirestoreDocument? = nil, metrics: RuntimeMetrics? = nil
    ) async throws -> (Function, FunctionPlatform) {
        do {
            return try await FunctionPlatform.assemble(
                Function.self, schema: schema, configuration: configuration,
                source: documents.map { .snapshot(path: $0, eventDocument: eventDocument) } ?? .google(dryRun: dryRun),
                logger: logger, metrics: metrics)
        } catch let error as FunctionPlatform.SettingsError {
            throw CommandLineArguments.UsageError(error.description)
        }
    }
}

/// One line on standard error (logs of `invoke` and `sweep`, whose standard output is their report).
func writeToStandardError(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
}

/// The configuration and logger of a command whose standard output is its report (`invoke`, `sweep`):
/// its logs go to standard error, as text.
func reportingCommandSetUp(_ function: String) throws -> (RuntimeConfiguration, Logger) {
    var configuration = try loadConfiguration()
    configuration.logFormat = .text
    return (configuration, Logger.herald(function, configuration: configuration, sink: LineSink { line in writeToStandardError(line) }))
}

func loadConfiguration() throws -> RuntimeConfiguration {
    do {
        return try RuntimeConfiguration(environment: ProcessEnvironment.current(), stdoutIsTerminal: isatty(STDOUT_FILENO) == 1)
    } catch {
        throw CommandLineArguments.UsageError(error.description)
    }
}

struct ServeCommand<Host: CommandLineHost> {
    typealias Function = Host.Function

    static var command: CommandLineArguments.Command {
        CommandLineArguments.Command(
            name: "serve",
            abstract: "Serve POST / (one Firestore event per request, or a scheduled run), POST /sweep and GET /healthz over HTTP.",
            discussion: """
                Answers 2xx once the event's effects are done (or nothing needs doing), 400 with a JSON reason \
                for a request that can never succeed, 503/429 for a transient failure so the trigger retries, \
                401 when HERALD_REQUIRE_OIDC_AUDIENCE is set and the caller's identity token does not verify. \
                SIGTERM stops accepting, finishes the requests in flight, and exits 0.
                """,
            options: [
                .value("port", "port", "Port to listen on (default: $PORT, else 8080)."),
                .value("host", "host", "Address to bind (default: 0.0.0.0)."),
            ] + SourceOptions.options)
    }

    var port: Int?
    var host: String
    var source: SourceOptions

    init(_ options: CommandLineArguments) throws(CommandLineArguments.UsageError) {
        port = try options.integer("port")
        host = options["host"] ?? "0.0.0.0"
        source = SourceOptions(options)
    }

    func run() async throws {
        let configuration = try loadConfiguration()
        if configuration.requiredAudience == nil, !configuration.allowUnauthenticated, !RuntimeConfiguration.isLoopback(host) {
            throw CommandLineArguments.UsageError(
                """
                refusing to serve \(Function.name) on \(host) to anyone who can reach it: set HERALD_REQUIRE_OIDC_AUDIENCE (the service's \
                URL) and HERALD_ALLOWED_CALLERS (the trigger's and scheduler's service accounts), or HERALD_ALLOW_UNAUTHENTICATED=1 where \
                the platform checks callers itself (Cloud Run IAM), or --host 127.0.0.1
                """)
        }
        if configuration.requiredAudience != nil, configuration.allowedCallers == nil, !configuration.anyCallerOfAudience,
            !RuntimeConfiguration.isLoopback(host)
        {
            // Any Google-signed token for the audience would do, from any project: anyone can mint one.
            throw CommandLineArguments.UsageError(
                """
                refusing to serve \(Function.name) on \(host) to any holder of a token for its audience: set HERALD_ALLOWED_CALLERS \
                (the trigger's and scheduler's service accounts), or HERALD_ALLOWED_CALLERS=* if any caller with such a token is meant
                """)
        }
        let logger = Logger.herald(Function.name, configuration: configuration)
        let metrics = configuration.metricsEnabled ? RuntimeMetrics(function: Function.name) : nil
        let (function, wiring) = try await source.setUp(Function.self, configuration: configuration, logger: logger, metrics: metrics)
        let identity = configuration.requiredAudience.map { audience in
            IdentityTokenVerifier(
                audience: audience, jwksURL: configuration.oidcJWKSURL ?? IdentityTokenVerifier.googleJWKS,
                allowedCallers: configuration.allowedCallers, httpClient: .shared)
        }
        let exporter = configuration.traceExport.map {
            TraceExporter(recorder: SpanRecorder(sampler: $0.sampler), settings: $0, service: Function.name, logger: logger)
        }
        let metricsExporter = metrics.flatMap { metrics in
            configuration.metricsExport.map { MetricsExporter(metrics: metrics, settings: $0, service: Function.name, logger: logger) }
        }
        let server = FunctionServer(
            host: Host(function, on: wiring, metrics: metrics), identity: identity, logger: logger, metrics: metrics, spans: exporter?.recorder)
        let port = self.port ?? configuration.port
        let stop = StopSignal()
        stop.listenForTermination()
        do {
            try await withThrowingDiscardingTaskGroup { group in
                if let exporter { group.addTask { await exporter.run() } }
                if let metricsExporter { group.addTask { await metricsExporter.run() } }
                if let metricsPort = configuration.metricsPort {
                    group.addTask { try await server.runMetrics(port: metricsPort, stop: stop) }
                    logger.info("metrics for a collector in this instance at http://127.0.0.1:\(metricsPort)/metrics")
                }
                try await server.run(host: host, port: port, stop: stop) { bound in
                    logger.info("\(Function.name) listening on \(host):\(bound)")
                }
                stop.fire()
                group.cancelAll()
            }
        } catch {
            stop.fire()
            await wiring.shutdown()
            throw error
        }
        // The last spans (of the requests that finished as it stopped), outside the cancelled loop.
        await exporter?.export()
        await metricsExporter?.export()
        await wiring.shutdown()
        logger.info("\(Function.name) stopped")
    }
}

extension FunctionDeclaration {
    /// Runs the function's command line (`serve`, `invoke`, `sweep`), as its own executable does.
    public func run(arguments: [String]) async -> Never { await type.runCommand(arguments: arguments) }
}

extension ConfigurableFunction {
    static func runCommand(arguments: [String]) async -> Never { await FunctionCommand<Self>.run(arguments: arguments) }
}
