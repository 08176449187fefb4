import FirestoreModel
import HeraldCore
import SystemAccess

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
        let bytes: [UInt8]
        do { bytes = try LocalFile.read(schema, limit: Self.maximumSchemaFileBytes) } catch {
            throw SettingsError("cannot read schema file \(error)")
        }
        do { schemaFile = try JSONValue(parsing: bytes) } catch { throw SettingsError("schema file \(schema): \(error)") }
    }
}
