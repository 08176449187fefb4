/// What is done with a function depends on its kind: one that takes events, one that runs on a
/// schedule, or one that does both (each kind has its own host in the runtime). A visitor has a method
/// for each kind, and `ConfigurableFunction.visitKind` calls the one for the function's kind, chosen
/// when the function's type is compiled.
public protocol FunctionKindVisitor {
    associatedtype Result
    func eventFunction<Function: EventFunction & ConfigurableFunction>(_: Function.Type) -> Result
    func scheduledFunction<Function: ScheduledFunction & ConfigurableFunction>(_: Function.Type) -> Result
    func eventAndScheduledFunction<Function: EventFunction & ScheduledFunction & ConfigurableFunction>(_: Function.Type) -> Result
}

// The compiler takes the most specific of these for each function type; a type of neither kind does
// not compile as a ConfigurableFunction.
extension ConfigurableFunction where Self: EventFunction {
    public static func visitKind<Visitor: FunctionKindVisitor>(_ visitor: Visitor) -> Visitor.Result { visitor.eventFunction(Self.self) }
}

extension ConfigurableFunction where Self: ScheduledFunction {
    public static func visitKind<Visitor: FunctionKindVisitor>(_ visitor: Visitor) -> Visitor.Result { visitor.scheduledFunction(Self.self) }
}

extension ConfigurableFunction where Self: EventFunction & ScheduledFunction {
    public static func visitKind<Visitor: FunctionKindVisitor>(_ visitor: Visitor) -> Visitor.Result {
        visitor.eventAndScheduledFunction(Self.self)
    }
}

/// The trigger of a function that takes events, built from its settings; nil for one that only runs
/// on a schedule.
struct TriggerOfKind: FunctionKindVisitor {
    typealias Result = ((FunctionSettings) throws -> Trigger)?
    func eventFunction<Function: EventFunction & ConfigurableFunction>(_: Function.Type) -> Result { { try Function(settings: $0).trigger } }
    func scheduledFunction<Function: ScheduledFunction & ConfigurableFunction>(_: Function.Type) -> Result { nil }
    func eventAndScheduledFunction<Function: EventFunction & ScheduledFunction & ConfigurableFunction>(_: Function.Type) -> Result {
        { try Function(settings: $0).trigger }
    }
}
