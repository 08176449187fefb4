import FirestoreModel
import HeraldCore
import SystemAccess
import WireFormats
import ZoneInfo

extension FunctionSettings {
    /// A schema file larger than this is not one (a real one is a few kilobytes).
    static let maximumSchemaFileBytes = 64 * 1024

    /// Settings for `schema`, with its file read when it names one (a preset names none).
    public static func reading(
        schema: String, database: String = "(default)", environment: [String: String] = [:],
        timeZones: TimeZones = .utcOnly
    ) throws(SettingsError) -> FunctionSettings {
        var settings = FunctionSettings(schema: schema, database: database, environment: environment, timeZones: timeZones)
        try settings.readSchemaFile()
        return settings
    }

    /// Reads the file `schema` names, when it names one (a path, or a `.json` name), into `schemaFile`;
    /// a value that starts with `{` is the file's JSON itself (how `herald deploy` hands a schema file to
    /// Cloud Run: an environment value, so every image serves any schema).
    public mutating func readSchemaFile() throws(SettingsError) {
        if schema.hasPrefix("{") {
            guard schema.utf8.count <= Self.maximumSchemaFileBytes else {
                throw SettingsError("HERALD_SCHEMA holds \(schema.utf8.count) bytes of JSON; a schema file is at most \(Self.maximumSchemaFileBytes)")
            }
            do { schemaFile = try JSONValue(parsing: Array(schema.utf8), refusingRepeated: { !Self.isSchemaComment($0) }) } catch {
                throw SettingsError("HERALD_SCHEMA's JSON: \(error)")
            }
            schema = "HERALD_SCHEMA"
            return
        }
        guard schema.hasSuffix(".json") || schema.contains("/") else { return }
        let bytes: [UInt8]
        do { bytes = try LocalFile.read(schema, limit: Self.maximumSchemaFileBytes) } catch {
            throw SettingsError("cannot read schema file \(error)")
        }
        do { schemaFile = try JSONValue(parsing: bytes, refusingRepeated: { !Self.isSchemaComment($0) }) } catch {
            throw SettingsError("schema file \(schema): \(error)")
        }
    }
}
