import ArgumentParser
import ChatFunctions
import Foundation
import HeraldCore
import HeraldRuntime
import WireFormats

@main
struct Herald: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "Herald's developer command line.",
        discussion: "`herald function NAME [serve|invoke] …` runs one function, as its own executable would.",
        subcommands: [
            Dev.self, Send.self, Export.self, SchemaCommand.self, Indexes.self, Infra.self, Deploy.self, DeadLetters.self, Function.self, Version.self,
        ]
    )

    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "function" {
            // The function's own command line takes over after its name; without one, this command's help.
            let rest = Array(arguments.dropFirst())
            if rest.isEmpty || ["-h", "--help", "help"].contains(rest[0]) {
                print(helpMessage(for: Function.self))
                Foundation.exit(rest.isEmpty ? 64 : 0)
            }
            await runFunction(rest)
        }
        do {
            var command = try parseAsRoot(arguments)
            if var asyncCommand = command as? any AsyncParsableCommand { try await asyncCommand.run() } else { try command.run() }
        } catch {
            exit(withError: error)
        }
    }

    /// `herald function onMessageCreated serve …`: how `herald dev` starts each function from this one binary.
    static func runFunction(_ arguments: [String]) async -> Never {
        let rest = Array(arguments.dropFirst())
        // Started by `herald dev`: go when it goes, even if it was killed without a chance to stop us.
        if let parent = ProcessInfo.processInfo.environment["HERALD_DEV_PARENT"].flatMap(Int32.init) {
            Task.detached {
                while getppid() == parent { try? await Task.sleep(for: .seconds(1)) }
                Foundation.exit(0)
            }
        }
        guard let declaration = arguments.first.flatMap(FunctionCatalog.named) else {
            exit(withError: ValidationError("herald function takes one of \(FunctionCatalog.names.joined(separator: ", "))"))
        }
        await declaration.run(arguments: rest)
    }
}

/// `herald function NAME …`, as `herald --help` lists it: `Herald.main` hands the arguments after the
/// name to the function's own command line, so this type only describes it.
struct Function: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run one function as its own executable would: herald function NAME [serve|invoke|sweep] [options].",
        discussion:
            "NAME is one of \(FunctionCatalog.names.joined(separator: ", ")). `herald function NAME --help` lists its subcommands and the settings it reads."
    )

    @Argument(help: "The function's name, then its subcommand and options.")
    var arguments: [String] = []
}

struct Version: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print Herald's version.")
    func run() { print("herald \(HeraldVersion.current)") }
}

struct Indexes: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the firestore.indexes.json a schema needs (deploy.sh derives the same through `herald schema deployment`).")

    @Option(name: .long, help: "Schema preset or schema JSON file.")
    var schema = "default"

    @Option(name: .long, help: "The ledger collection (HERALD_LEDGER_COLLECTION).")
    var ledgerCollection = "_herald/events/ledger"

    func run() throws {
        let loaded: Schema
        do { loaded = try Schema.named(schema) } catch { throw ValidationError("\(error)") }
        print(loaded.firestoreIndexes(ledgerCollection: ledgerCollection).serialized(pretty: true))
    }
}

extension Schema {
    /// A preset, or a schema file read from disk (the functions get the file's contents from the runtime).
    static func named(_ nameOrPath: String) throws -> Schema { try Schema.load(FunctionSettings.reading(schema: nameOrPath)) }
}
