import ArgumentParser
import AsyncHTTPClient
import Foundation
import GoogleClients
import FirestoreEvents
import FirestoreModel
import HeraldCore
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// The command line of every function executable: `NAME serve` (the default) and `NAME invoke`.
public struct FunctionCommand<Function: ConfigurableFunction>: AsyncParsableCommand {
    public static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: Function.name,
            abstract: Function.summary,
            discussion: """
                Configuration comes from the environment: GOOGLE_CLOUD_PROJECT, GOOGLE_APPLICATION_CREDENTIALS, \
                FIRESTORE_EMULATOR_HOST, FIRESTORE_DATABASE (default "(default)"), FCM_ENDPOINT, HERALD_SCHEMA \
                (default, prd000, prd001, prd004, or a schema JSON file), LOG_LEVEL, LOG_FORMAT (json or text), PORT.
                """,
            subcommands: [ServeCommand<Function>.self, InvokeCommand<Function>.self],
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

    @Option(name: .long, help: ArgumentHelp("Schema preset (default, prd000, prd001, prd004) or schema JSON file; overrides HERALD_SCHEMA.", valueName: "schema"))
    var schema: String?

    /// The function, wired to its documents: a snapshot file (offline), or Firestore and FCM found through
    /// Application Default Credentials. Call `shutdown` on the result when done.
    /// - eventDocument: with a snapshot, the event's own document as the event carries it, for a snapshot
    ///   that does not hold it (functions read the changed document as it is now).
    func setUp<Function: ConfigurableFunction>(_: Function.Type, configuration: RuntimeConfiguration, logger: Logger,
                                               eventDocument: FirestoreDocument? = nil) async throws -> Wiring<Function> {
        let settings = FunctionSettings(schema: schema ?? configuration.schema, database: configuration.database)
        let function: Function
        do { function = try Function(settings: settings) } catch { throw ValidationError("\(error)") }
        if let documents {
            var gateway = try SnapshotGateway(contentsOf: URL(fileURLWithPath: documents))
            if let eventDocument, gateway.documents[eventDocument.name] == nil { gateway = SnapshotGateway(documents: Array(gateway.documents.values) + [eventDocument]) }
            return Wiring(processor: EventProcessor(function: function, gateway: gateway, project: configuration.project), clients: [])
        }
        let credentials: ApplicationDefaultCredentials
        do {
            credentials = try await ApplicationDefaultCredentials.resolve(environment: ProcessInfo.processInfo.environment, httpClient: .shared)
        } catch {
            throw ValidationError("no Firestore to read (pass --documents FILE to run offline): \(error)")
        }
        let firestore = FirestoreClient(project: credentials.project, database: configuration.database,
                                        endpoint: credentials.firestoreEndpoint, credentials: credentials.firestore, httpClient: .shared)
        let lanes = FCMClient.makeHTTPClients(maximumInFlight: 256)
        let fcm = FCMClient(project: credentials.project, endpoint: configuration.fcmEndpoint?.absoluteString ?? FCMClient.productionEndpoint,
                            credentials: credentials.messaging, httpClients: lanes)
        let gateway = FirestoreGateway(firestore: firestore, fcm: fcm, functionName: Function.name, dryRun: dryRun, logger: logger,
                                       ledgerCollection: configuration.ledgerCollection)
        return Wiring(processor: EventProcessor(function: function, gateway: gateway, project: credentials.project), clients: lanes)
    }
}

/// A processor and the HTTP clients it owns.
struct Wiring<Function: EventFunction>: Sendable {
    let processor: EventProcessor<Function>
    let clients: [HTTPClient]
    func shutdown() async {
        for client in clients { try? await client.shutdown() }
    }
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
            abstract: "Serve POST / (one Firestore event per request) and GET /healthz over HTTP.",
            discussion: """
                Answers 2xx once the event's effects are done (or nothing needs doing), 400 with a JSON reason \
                for a request that can never succeed, 503/429 for a transient failure so the trigger retries. \
                SIGTERM stops accepting, finishes the events in flight, and exits 0.
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
        let logger = Logger.herald(Function.name, configuration: configuration)
        let wiring = try await source.setUp(Function.self, configuration: configuration, logger: logger)
        let server = FunctionServer(processor: wiring.processor, logger: logger)
        let port = self.port ?? configuration.port
        let app = server.application(host: host, port: port) { bound in
            logger.info("\(Function.name) listening on \(host):\(bound)")
        }
        do { try await app.runService() } catch {
            await wiring.shutdown()
            throw error
        }
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
        let logger = Logger.herald(Function.name, configuration: configuration, sink: LineSink { line in
            FileHandle.standardError.write(Data((line + "\n").utf8))
        })
        let request: EventRequest
        do {
            request = try Fixture.request(from: Array(Data(contentsOf: URL(fileURLWithPath: event))))
        } catch let error as FixtureError {
            throw Self.badFixture("bad fixture \(event): \(error)")
        } catch {
            throw Self.badFixture("cannot read the event fixture \(event): \(error.localizedDescription)")
        }
        let wiring = try await source.setUp(Function.self, configuration: configuration, logger: logger,
                                            eventDocument: (try? EventDecoder.decode(request))?.change.newDocument)
        let result = await wiring.processor.process(request, logger: logger)
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
        FileHandle.standardError.write(Data("error: \(message)\n".utf8))
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
