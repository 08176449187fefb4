import FirestoreModel
import HeraldCore
import HeraldHTTPServer
import Logging

/// How one kind of function is served and run, as hummingbird's `Application` and the Lambda runtime's
/// `LambdaRuntime<Handler>` are typed over their handler: the host of a function that takes events owns
/// decode → read → plan → execute → answer (`EventProcessor`), the host of a scheduled function its
/// sweep. `FunctionCommand` picks the host by the function's kind (`FunctionKindVisitor`), so no host
/// asks what its function can do.
public protocol FunctionHost: Sendable {
    associatedtype Function: HeraldFunction
    /// `POST /` and `POST /sweep`, the caller already checked.
    func respond(toPost request: HTTPServer.Request, on server: FunctionServer<Self>) async -> EventResponse
}

/// The way in: `FunctionCommand<F>.main()` (an executable's `main.swift`) asks the function's kind for
/// its host here, and `HostCommandLine<Host>` runs the subcommand (`serve` when none is named, as Cloud
/// Run starts it); `serve` starts a `FunctionServer`, which checks each request (identity, size) and
/// hands `POST /` to the host's `respond(toPost:)`.
struct HostOfKind: FunctionKindVisitor {
    let arguments: [String]

    func eventFunction<Function: EventFunction & ConfigurableFunction>(_: Function.Type) -> @Sendable () async -> Never {
        { [arguments] in await HostCommandLine<EventFunctionHost<Function>>.run(arguments: arguments) }
    }

    func scheduledFunction<Function: ScheduledFunction & ConfigurableFunction>(_: Function.Type) -> @Sendable () async -> Never {
        { [arguments] in await HostCommandLine<ScheduledFunctionHost<Function>>.run(arguments: arguments) }
    }

    func eventAndScheduledFunction<Function: EventFunction & ScheduledFunction & ConfigurableFunction>(
        _: Function.Type
    ) -> @Sendable () async -> Never {
        { [arguments] in await HostCommandLine<EventAndScheduledFunctionHost<Function>>.run(arguments: arguments) }
    }
}

/// A host's command line: `serve` (every host's) and these.
protocol CommandLineHost: FunctionHost where Function: ConfigurableFunction {
    init(_ function: Function, on platform: FunctionPlatform, metrics: RuntimeMetrics?)
    /// Its subcommands besides `serve`: `invoke` for events, `sweep` for a schedule.
    static var subcommands: [CommandLineArguments.Command] { get }
    /// Runs one of `subcommands`.
    static func run(_ subcommand: String, options: CommandLineArguments) async throws
}

/// The host of a function that takes events: `POST /` is one event; `invoke` runs one.
public struct EventFunctionHost<Function: EventFunction>: FunctionHost {
    public let processor: EventProcessor<Function>

    public init(processor: EventProcessor<Function>) { self.processor = processor }

    public init(_ function: Function, on platform: FunctionPlatform, metrics: RuntimeMetrics?) {
        // The gateway: the `ExactlyOnceExecutor` over Firestore and FCM (a snapshot's offline).
        processor = EventProcessor(function: function, gateway: platform.documents, project: platform.project, metrics: metrics)
    }

    public func respond(toPost request: HTTPServer.Request, on server: FunctionServer<Self>) async -> EventResponse {
        guard request.path == "/" else { return failure(404, "NOT_FOUND", "\(Function.name) does not run on a schedule") }
        return await handle(request, on: server)
    }

    /// One event, on any host's server (a host of both kinds hands its events here).
    func handle<Host>(_ request: HTTPServer.Request, on server: FunctionServer<Host>) async -> EventResponse {
        // Traced and counted by the server; the event is decoded by the processor.
        await server.handleEvent(request) { undecoded, logger in await processor.process(undecoded, logger: logger) }
    }
}

/// The host of a function that runs on a schedule: `POST /` and `POST /sweep` run it once, as does `sweep`.
public struct ScheduledFunctionHost<Function: ScheduledFunction>: FunctionHost {
    /// Over Firestore, or over a snapshot offline.
    let sweeper: any SweepRunning

    public init(_ function: Function, on platform: FunctionPlatform, metrics: RuntimeMetrics?) {
        switch platform.sweeping {
        case .snapshot(let documents): sweeper = SnapshotSweeper(function: function, documents: documents)
        case .google(let firestore, let pushes, let ledger, let dryRun):
            sweeper = SweepRunner(function: function, firestore: firestore, pushes: pushes, ledgerCollection: ledger, dryRun: dryRun)
        }
    }

    public func respond(toPost request: HTTPServer.Request, on server: FunctionServer<Self>) async -> EventResponse {
        await sweep(request, on: server)
    }

    /// One scheduled run, on any host's server (a host of both kinds hands `POST /sweep` here).
    func sweep<Host>(_ request: HTTPServer.Request, on server: FunctionServer<Host>) async -> EventResponse {
        await server.tracedSweep(request) { logger in try await sweeper.run(at: .now(), logger: logger) }
    }
}

/// The host of a function that takes events and runs on a schedule: `POST /` is an event, `POST /sweep`
/// a scheduled run.
public struct EventAndScheduledFunctionHost<Function: EventFunction & ScheduledFunction>: FunctionHost {
    let events: EventFunctionHost<Function>
    let schedule: ScheduledFunctionHost<Function>

    public init(_ function: Function, on platform: FunctionPlatform, metrics: RuntimeMetrics?) {
        events = EventFunctionHost(function, on: platform, metrics: metrics)
        schedule = ScheduledFunctionHost(function, on: platform, metrics: metrics)
    }

    public func respond(toPost request: HTTPServer.Request, on server: FunctionServer<Self>) async -> EventResponse {
        request.path == "/sweep" ? await schedule.sweep(request, on: server) : await events.handle(request, on: server)
    }
}

extension EventFunctionHost: CommandLineHost where Function: ConfigurableFunction {
    static var subcommands: [CommandLineArguments.Command] { [InvokeCommand<Function>.command] }

    static func run(_ subcommand: String, options: CommandLineArguments) async throws {
        try await InvokeCommand<Function>(options).run()
    }
}

extension ScheduledFunctionHost: CommandLineHost where Function: ConfigurableFunction {
    static var subcommands: [CommandLineArguments.Command] { [SweepCommand<Function>.command] }

    static func run(_ subcommand: String, options: CommandLineArguments) async throws {
        try await SweepCommand<Function>(options).run()
    }
}

extension EventAndScheduledFunctionHost: CommandLineHost where Function: ConfigurableFunction {
    static var subcommands: [CommandLineArguments.Command] {
        EventFunctionHost<Function>.subcommands + ScheduledFunctionHost<Function>.subcommands
    }

    static func run(_ subcommand: String, options: CommandLineArguments) async throws {
        if subcommand == SweepCommand<Function>.command.name {
            try await ScheduledFunctionHost<Function>.run(subcommand, options: options)
        } else {
            try await EventFunctionHost<Function>.run(subcommand, options: options)
        }
    }
}
