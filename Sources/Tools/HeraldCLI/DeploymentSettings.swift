import ArgumentParser
import ChatFunctions
import HeraldCore
import HeraldRuntime

/// The settings an operator gives a deployment (`herald deploy --set NAME=VALUE`, `--unset NAME`).
/// Each goes into the manifests of the functions that read it: a function's own (its type's
/// `settings`) to that function, the runtime's (`RuntimeConfiguration.operatorSettings`) to every one. A
/// name no function reads, one the deployment sets itself, and a value the function would refuse at
/// start are refused here, before anything is built. deploy.sh keeps, at a redeploy, the settings the
/// deployed services carry.
enum DeploymentSettings {
    /// Settings the deployment sets itself, each with what chooses it.
    static let owned: [String: String] = [
        "HERALD_SCHEMA": "--schema", "FIRESTORE_DATABASE": "--database", "HERALD_LEDGER_COLLECTION": "--ledger-collection",
        "GOOGLE_CLOUD_PROJECT": "the PROJECT argument", "GCLOUD_PROJECT": "the PROJECT argument", "HERALD_EXPO_PUSH": "--expo",
        "HERALD_EXPO_ACCESS_TOKEN": "--expo-access-token-secret", "HERALD_APNS_KEY": "--apns-key-file or --apns-key-secret",
        "HERALD_APNS_KEY_ID": "--apns-key-id", "HERALD_APNS_TEAM_ID": "--apns-team-id", "HERALD_APNS_TOPIC": "--apns-topic",
        "HERALD_APNS_ENVIRONMENT": "--apns-environment",
    ]

    /// What each function may be given: its own settings, then the runtime's.
    static func settable(by function: FunctionDeclaration) -> [String] { function.settings + RuntimeConfiguration.operatorSettings }

    /// The functions that read `name`.
    static func functions(reading name: String, in functions: [FunctionDeclaration] = FunctionCatalog.all) -> [FunctionDeclaration] {
        functions.filter { settable(by: $0).contains(name) }
    }

    /// `--set` entries as name and value, each checked as the functions that read it would check it at
    /// start; `--unset` names checked likewise. The first problem is thrown, naming the setting.
    static func check(set entries: [String], unset: [String]) throws -> [(name: String, value: String)] {
        var settings: [(name: String, value: String)] = []
        for entry in entries {
            guard let equals = entry.firstIndex(of: "=") else { throw ValidationError("--set takes NAME=VALUE, not \"\(entry)\"") }
            let (name, value) = (String(entry[..<equals]), String(entry[entry.index(after: equals)...]))
            try checkName(name, flag: "--set")
            guard !settings.contains(where: { $0.name == name }) else { throw ValidationError("--set \(name) is given twice") }
            guard !value.contains(where: \.isNewline), value.utf8.count <= 4096 else {
                throw ValidationError("--set \(name): a value is one line of at most 4,096 bytes")
            }
            try checkValue(name, value)
            settings.append((name, value))
        }
        for name in unset {
            try checkName(name, flag: "--unset")
            if settings.contains(where: { $0.name == name }) { throw ValidationError("\(name) is both --set and --unset") }
        }
        return settings
    }

    static func checkName(_ name: String, flag: String) throws {
        if let chooser = owned[name] { throw ValidationError("\(flag) \(name): the deployment sets it; use \(chooser)") }
        guard !functions(reading: name).isEmpty else {
            let known = Set(FunctionCatalog.all.flatMap(settable(by:))).sorted()
            throw ValidationError("\(flag) \(name): no function reads it; the settings a deployment takes are \(known.joined(separator: ", "))")
        }
    }

    /// The value as each function that reads it would take it at start.
    static func checkValue(_ name: String, _ value: String) throws {
        if RuntimeConfiguration.operatorSettings.contains(name) {
            do { _ = try RuntimeConfiguration(environment: [name: value]) } catch {
                if let problem = error.problems.first(where: { $0.contains(name) }) { throw ValidationError("--set \(name): \(problem)") }
            }
            return
        }
        for function in functions(reading: name) {
            do { _ = try function.type.init(settings: FunctionSettings(environment: [name: value])) } catch {
                throw ValidationError("--set \(name) for \(function.name): \(error)")
            }
        }
    }
}
