import FirestoreEvents
import FirestoreModel
import HeraldCore
import Logging
import SystemAccess
import WireFormats

/// `NAME sweep`: a scheduled function's pass, run once (for cron), and a report of it.
struct SweepCommand<Function: ScheduledFunction & ConfigurableFunction> {
    static var command: CommandLineArguments.Command {
        CommandLineArguments.Command(
            name: "sweep",
            abstract: "Run the scheduled pass once (for cron) and print a JSON report of what it found and changed.",
            discussion: """
                With --documents FILE it runs fully offline over a snapshot and lists the writes it would make. \
                Exit status: 0 done, 75 transient failure (run it again), 1 otherwise.
                """,
            options: SourceOptions.options + [
                .value("at", "time", "Sweep as if it were this time (RFC 3339), e.g. to replay a snapshot; default: now.")
            ])
    }

    var source: SourceOptions
    var at: String?

    init(_ options: CommandLineArguments) {
        source = SourceOptions(options)
        at = options["at"]
    }

    func run() async throws {
        let (configuration, logger) = try reportingCommandSetUp(Function.name)
        var date = Timestamp.now()
        if let at {
            guard let time = Timestamp(rfc3339: at) else {
                throw CommandLineArguments.UsageError("--at must be an RFC 3339 time such as 2026-11-20T09:02:00Z, not \"\(at)\"")
            }
            date = time
        }
        let (function, wiring) = try await source.setUp(Function.self, configuration: configuration, logger: logger)
        let sweeper = ScheduledFunctionHost(function, on: wiring, metrics: nil).sweeper
        do {
            let report = try await sweeper.run(at: date, logger: logger)
            await wiring.shutdown()
            print(report.json.serialized(pretty: true))
        } catch {
            await wiring.shutdown()
            let response = responseToFailure(error, logger: logger)
            print(response.body.serialized(pretty: true))
            throw ExitStatus(response.status == 503 || response.status == 429 ? 75 : 1)
        }
    }
}
