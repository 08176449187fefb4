import FirestoreEvents
import FirestoreModel
import HeraldCore
import Logging
import SystemAccess
import WireFormats

/// `NAME invoke`: one event, from a fixture or a document, and a report of what it did.
struct InvokeCommand<Function: EventFunction & ConfigurableFunction> {
    static var command: CommandLineArguments.Command {
        CommandLineArguments.Command(
            name: "invoke",
            abstract: "Run the function once on an event (a fixture file, or one built from a document) and print a JSON report of its effects.",
            discussion: """
                The fixture is a structured CloudEvent JSON, a legacy (1st-gen) event JSON, or \
                {"headers": {...}, "body": ...} for a binary-mode CloudEvent (body as JSON, or base64 protobuf). \
                With --document PATH instead, the event is the one Eventarc would send for that document as it is \
                now, in --documents or in the configured Firestore (e.g. herald dev, with FIRESTORE_EMULATOR_HOST). \
                The report lists the event, the outcome (applied, skipped with a reason, or duplicate), the documents \
                read, the writes and the pushes. Exit status: 0 handled, 2 bad fixture or event, 75 transient failure.
                """,
            options: [.value("event", "file", "The event fixture file.")] + DocumentEvent.options + SourceOptions.options)
    }

    var event: String?
    var document: DocumentEvent?
    var source: SourceOptions

    init(_ options: CommandLineArguments) throws(CommandLineArguments.UsageError) {
        document = try DocumentEvent(options)
        event = options["event"]
        if document == nil && event == nil { throw CommandLineArguments.UsageError("missing expected argument '--event <file>' (or '--document <path>')") }
        source = SourceOptions(options)
    }

    func run() async throws {
        let (configuration, logger) = try reportingCommandSetUp(Function.name)
        let fixture = try event.map(Self.request(fromFixture:))
        let (function, wiring) = try await source.setUp(
            Function.self, configuration: configuration, logger: logger,
            eventDocument: fixture.flatMap { try? EventDecoder.decode($0) }?.change.newDocument)
        let events = EventFunctionHost(function, on: wiring, metrics: nil).processor
        let request: EventRequest
        if let fixture {
            request = fixture
        } else {
            do {
                request = try await document!.request(reading: wiring.documents, project: wiring.project, database: configuration.database)
            } catch let failure as DocumentEvent.Failure {
                await wiring.shutdown()
                throw Self.badFixture(failure.description)
            } catch {
                await wiring.shutdown()
                throw error
            }
        }
        let result = await events.process(request, logger: logger)
        await wiring.shutdown()
        let output = result.report?.json ?? result.body
        print(output.serialized(pretty: true))
        switch result.status {
        case 200..<300: return
        case 429, 503: throw ExitStatus(75)
        case 400..<500: throw ExitStatus(2)
        default: throw ExitStatus(1)
        }
    }

    static func request(fromFixture path: String) throws -> EventRequest {
        do {
            return try Fixture.request(from: LocalFile.read(path))
        } catch let error as FixtureError {
            throw Self.badFixture("bad fixture \(path): \(error)")
        } catch {
            throw Self.badFixture("cannot read the event fixture \(path): \(error)")
        }
    }

    static func badFixture(_ message: String) -> ExitStatus {
        writeToStandardError("error: \(message)")
        return ExitStatus(2)
    }
}
