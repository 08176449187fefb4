import FirestoreEvents
import FirestoreModel
import HeraldCore

/// presenceSweeper's trigger. Its plan is not written yet: until it is, the plan skips with a
/// reason that says so, and the runtime reports it like any other skip.
public struct PresenceSweeper: ConfigurableFunction {
    public static let name = "presenceSweeper"
    public static let summary = "Mark users offline whose presence heartbeat has gone stale."
    public let schema: Schema
    public init(settings: FunctionSettings) throws { schema = try Schema.load(settings.schema) }
    public var trigger: Trigger { Trigger(pattern: schema.userPattern, kinds: [.written]) }
    public func documentsToRead(for change: DocumentChange, alreadyRead: DocumentsRead) -> [DocumentName] { [] }
    public func plan(for change: DocumentChange, documents: DocumentsRead) -> Plan { .skip(notYetImplemented) }
}

let notYetImplemented = "this build has the runtime only: the function's behaviour is not implemented yet"
