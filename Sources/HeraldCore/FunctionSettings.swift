/// What a function is told about its deployment when it is built.
public struct FunctionSettings: Sendable, Hashable {
    /// A built-in schema preset name or a path to a schema JSON file.
    public var schema: String
    public var database: String

    public init(schema: String = "default", database: String = "(default)") {
        self.schema = schema
        self.database = database
    }
}

/// A function that can be built from its settings; what the runtime's commands need.
public protocol ConfigurableFunction: EventFunction {
    init(settings: FunctionSettings) throws
}
