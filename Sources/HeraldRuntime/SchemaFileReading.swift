import FirestoreModel
import HeraldCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension FunctionSettings {
    /// A schema file larger than this is not one.
    static let maximumSchemaFileBytes = 1 << 20

    /// Settings for `schema`, with its file read when it names one (a preset names none).
    public static func reading(
        schema: String, database: String = "(default)", environment: [String: String] = [:],
        timeZones: TimeZones = .utcOnly
    ) throws(SettingsError) -> FunctionSettings {
        var settings = FunctionSettings(schema: schema, database: database, environment: environment, timeZones: timeZones)
        try settings.readSchemaFile()
        return settings
    }

    /// Reads the file `schema` names, when it names one (a path, or a `.json` name), into `schemaFile`.
    public mutating func readSchemaFile() throws(SettingsError) {
        guard schema.hasSuffix(".json") || schema.contains("/") else { return }
        let bytes: Data
        do { bytes = try Data(contentsOf: URL(fileURLWithPath: schema)) } catch { throw SettingsError("cannot read schema file \(schema): \(error)") }
        guard bytes.count <= Self.maximumSchemaFileBytes else {
            throw SettingsError("schema file \(schema) is \(bytes.count) bytes; a schema is at most \(Self.maximumSchemaFileBytes)")
        }
        do { schemaFile = try JSONValue(parsing: bytes) } catch { throw SettingsError("schema file \(schema): \(error)") }
    }
}
