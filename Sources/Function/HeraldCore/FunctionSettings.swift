import FirestoreModel
import WireFormats
import ZoneInfo

/// What a function is told about its deployment when it is built.
public struct FunctionSettings: Sendable {
    /// A built-in schema preset name or a path to a schema JSON file.
    public var schema: String
    /// The schema file's JSON when `schema` names a file: the runtime reads it, so functions do no I/O.
    public var schemaFile: JSONValue?
    public var database: String
    /// The process environment, for a function's own knobs (e.g. `HERALD_PRESENCE_STALE_AFTER`).
    public var environment: [String: String]
    /// The IANA time zone database, for users' quiet hours.
    public var timeZones: TimeZones

    public init(
        schema: String = "default", schemaFile: JSONValue? = nil, database: String = "(default)", environment: [String: String] = [:],
        timeZones: TimeZones = .utcOnly
    ) {
        self.schema = schema
        self.schemaFile = schemaFile
        self.database = database
        self.environment = environment
        self.timeZones = timeZones
    }

    /// Whether a schema file's key is a comment (`"// …"`): skipped when read, and the only key a file may
    /// repeat (one per line of a comment).
    public static func isSchemaComment(_ key: String) -> Bool { key.hasPrefix("//") }

    /// Longer than any age a function compares, and small enough that no time computed from it leaves Firestore's range.
    public static let maximumSeconds: Int64 = 100 * 365 * 86_400

    /// A whole number of seconds from the environment, or `fallback` when unset; an error names a bad value.
    public func seconds(_ key: String, default fallback: Int64) throws(SettingsError) -> Int64 {
        guard let text = environment[key]?.trimmingWhitespace, !text.isEmpty else { return fallback }
        guard let value = Int64(text), value > 0, value <= Self.maximumSeconds else {
            throw SettingsError("\(key) must be a positive number of seconds, at most \(Self.maximumSeconds) (100 years), not \"\(text)\"")
        }
        return value
    }

    public func flag(_ key: String) throws(SettingsError) -> Bool {
        switch environment[key]?.trimmingWhitespace.lowercased() {
        case nil, "", "0", "false", "no": return false
        case "1", "true", "yes": return true
        case let other?: throw SettingsError("\(key) must be true or false, not \"\(other)\"")
        }
    }
}

public struct SettingsError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A function that can be built from its settings; what the runtime's commands need.
public protocol ConfigurableFunction: HeraldFunction {
    /// The environment variables this function reads besides the runtime's own (docs/configuration.md);
    /// `--help` lists them, and a test checks them against what the function reads.
    static var settings: [String] { get }
    init(settings: FunctionSettings) throws
    /// Hands the function's type to the visitor's method for its kind. Written for every function by
    /// the extensions in FunctionKind.swift, so the compiler, not a cast, tells the kinds apart.
    static func visitKind<Visitor: FunctionKindVisitor>(_ visitor: Visitor) -> Visitor.Result
}

extension ConfigurableFunction {
    public static var settings: [String] { [] }
}
