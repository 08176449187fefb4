import ArgumentParser
import ChatFunctions
import ChatSchemaTools
import FirestoreModel
import Foundation
import HeraldCore
import WireFormats

/// `herald schema`: the way in for a team's own data model (docs/schema.md).
struct SchemaCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema",
        abstract: "Fit Herald to your app's data model: show a preset as a schema file, infer one from your data, check your data against one.",
        discussion: "docs/schema.md lists every key, what each preset calls it, who writes it and what Herald does with it.",
        subcommands: [Show.self, Infer.self, Check.self, Deployment.self])

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a preset (or a schema file, resolved) as a complete schema file: every key, each with a comment.",
            discussion: Schema.presetSummaries.map { "\($0.name): \($0.summary)" }.joined(separator: "\n"))

        @Argument(help: "default, prd000, prd001, prd004, or a schema file.") var schema = "default"

        func run() throws {
            let loaded: Schema
            do { loaded = try Schema.named(schema) } catch { throw ValidationError("\(error)") }
            print(loaded.fileText, terminator: "")
        }
    }

    struct Infer: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Propose a schema file from your app's data, each key with the evidence it rests on.",
            discussion: """
                --from takes a herald export (`herald export DIR`), Google's emulator's export, documents as .jsonl or .json, \
                or HOST:PORT of a running Firestore emulator or herald dev (FIRESTORE_EMULATOR_HOST by default). \
                What the data cannot decide is left out, with a comment naming the choices.
                """)

        @Option(help: ArgumentHelp("Where the data is: a directory or file, or HOST:PORT.", valueName: "path|host:port")) var from: String?
        @Option(help: "The project whose documents to read (an emulator's; default: GOOGLE_CLOUD_PROJECT, or what herald dev serves).")
        var project: String?
        @Option(name: .shortAndLong, help: ArgumentHelp("Write the schema file here instead of standard output.", valueName: "file"))
        var output: String?

        func run() async throws {
            let data = try await AppDataReading.read(from: from, project: project)
            let proposal: SchemaProposal
            do { proposal = try SchemaInference.propose(from: data) } catch { throw ValidationError("cannot propose a schema: \(error)") }
            // What is proposed is checked as a schema file would be: a proposal that could not be loaded is never printed as one.
            do { _ = try proposal.schema() } catch {
                throw ValidationError("the data suggests a layout Herald cannot serve: \(error)\n\(proposal.text)")
            }
            if let output {
                try Data(proposal.text.utf8).write(to: URL(fileURLWithPath: output))
                FileHandle.standardError.write(Data("wrote \(output): \(proposal.entries.count) keys decided, \(proposal.undecided.count) left open\n".utf8))
            } else {
                print(proposal.text, terminator: "")
            }
            for open in proposal.undecided { FileHandle.standardError.write(Data("not decided: \(open.key): \(open.reason)\n".utf8)) }
        }
    }

    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check your app's data against a schema: every misfit document by path, and onMessageCreated in dry run on the newest messages.",
            discussion: "Exits 1 when a document does not fit. Nothing is written or sent.")

        @Argument(help: "A schema file, or a preset.") var schema: String
        @Option(help: ArgumentHelp("Where the data is: a directory or file, or HOST:PORT.", valueName: "path|host:port")) var from: String?
        @Option(help: "The project whose documents to read (an emulator's).") var project: String?
        @Option(help: "How many of the newest messages to run in dry run.") var messages = 10

        func validate() throws {
            guard (0...1000).contains(messages) else { throw ValidationError("--messages must be 0 to 1000") }
        }

        func run() async throws {
            let loaded: Schema
            do { loaded = try Schema.named(schema) } catch { throw ValidationError("\(error)") }
            let data = try await AppDataReading.read(from: from, project: project)
            let report = SchemaFit.check(loaded, against: data, newestMessages: messages)
            print(report.text, terminator: "")
            if !report.misfits.isEmpty { throw ExitCode(1) }
        }
    }

    /// What Infra/deploy.sh deploys for a schema, derived from it: the value HERALD_SCHEMA gets, each
    /// function's Eventarc triggers, and the Firestore indexes the functions' queries need.
    struct Deployment: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write what deploy.sh needs for a schema into DIR: schema.value (HERALD_SCHEMA), triggers.sh and firestore.indexes.json.",
            discussion: "Infra/deploy.sh runs it; a schema file with an error is refused here, before anything is built or deployed.")

        @Argument(help: "A preset or a schema file.") var schema: String
        @Option(help: ArgumentHelp("The folder to write into.", valueName: "dir")) var output: String
        @Option(help: "The ledger collection (HERALD_LEDGER_COLLECTION).") var ledgerCollection = "_herald/events/ledger"

        func run() throws {
            let files: [(String, String)]
            do { files = try DeploymentFiles.files(schema: schema, ledgerCollection: ledgerCollection) } catch { throw ValidationError("\(error)") }
            try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
            for (name, text) in files { try Data(text.utf8).write(to: URL(fileURLWithPath: output).appendingPathComponent(name)) }
        }
    }
}

/// The deployment a schema implies, from the code's own declarations.
enum DeploymentFiles {
    static func files(
        schema nameOrPath: String, ledgerCollection: String, functions: [FunctionDeclaration] = FunctionCatalog.all
    ) throws -> [(String, String)] {
        let loaded = try Schema.named(nameOrPath)
        // A preset goes by name; a file as its complete, compact JSON (every key resolved: what runs is what was checked).
        let value: String
        if Schema.presets[nameOrPath] != nil {
            value = nameOrPath
        } else {
            value = JSONValue.object(Dictionary(uniqueKeysWithValues: Schema.keys.map { ($0.name, $0.json(in: loaded)) })).serialized()
        }
        var triggers = ["# Eventarc triggers for \(nameOrPath): trigger FUNCTION EVENT-TYPE PATTERN [SUFFIX]"]
        for function in functions {
            for trigger in try InfraFiles.triggers(function, schema: nameOrPath) {
                let quoted = "'" + trigger.pattern.replacingOccurrences(of: "'", with: "'\\''") + "'"
                triggers.append("trigger \(function.name) \(trigger.kind) \(quoted)\(trigger.suffix.map { " \($0)" } ?? "")")
            }
        }
        return [
            ("schema.value", value + "\n"), ("triggers.sh", triggers.joined(separator: "\n") + "\n"),
            ("firestore.indexes.json", loaded.firestoreIndexes(ledgerCollection: ledgerCollection).serialized(pretty: true) + "\n"),
        ]
    }
}
