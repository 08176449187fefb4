import FirestoreEvents
import FirestoreModel
import HeraldCore

/// The other two functions' triggers. Their plans are not written yet: until they are, each plan
/// skips with a reason that says so, and the runtime reports it like any other skip.
public struct OnReadReceipt: ConfigurableFunction {
    public static let name = "onReadReceipt"
    public static let summary = "On a message update: advance its status and bring unread counts and badges down."
    public let schema: Schema
    public init(settings: FunctionSettings) throws { schema = try Schema.load(settings.schema) }
    public var trigger: Trigger { Trigger(pattern: schema.messagePattern, kinds: [.updated]) }
    public func documentsToRead(for change: DocumentChange, alreadyRead: DocumentsRead) -> [DocumentName] { [] }
    public func plan(for change: DocumentChange, documents: DocumentsRead) -> Plan { .skip(notYetImplemented) }
}

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
