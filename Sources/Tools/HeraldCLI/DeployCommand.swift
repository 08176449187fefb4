import ArgumentParser
import ChatFunctions
import Foundation
import HeraldCore
import P256Signatures
import WireFormats

/// `herald deploy PROJECT REGION`: Firebase's one deploy command. It runs what docs/deploying.md
/// describes, in order, with progress: the Artifact Registry repository, the registry login, the
/// images (Infra/build-images.sh --push) and the deployment (Infra/deploy.sh). `--dry-run` prints
/// every step's commands and runs none.
struct Deploy: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Build the images, push them to Artifact Registry and deploy every function to Cloud Run (Infra/deploy.sh).",
        discussion: """
            Needs gcloud (signed in, with rights on PROJECT) and buildah. Run it from Herald's checkout. \
            Every step is idempotent: run it again after a change. --dry-run prints every command and runs none.
            """)

    @Argument(help: "The Google Cloud project id.")
    var project: String

    @Argument(help: "The region, e.g. europe-west1.")
    var region: String

    @Option(
        name: .long,
        help: "A schema preset (default, prd000, prd001, prd004) or your schema file (docs/schema.md); default: the deployed one, else default.")
    var schema: String?

    @Option(
        name: .long, help: ArgumentHelp("The Firestore database (default: the deployed one, else \"(default)\").", valueName: "database"))
    var database: String?

    @Option(
        name: .long,
        help: ArgumentHelp("The database's location (nam5, eur3, or a region; default: read from the project): the triggers go there.", valueName: "location"))
    var firestoreLocation: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Where the exactly-once ledger lives (default: _herald/events/ledger); its TTL policy covers every collection of its last name.",
            valueName: "path"))
    var ledgerCollection: String?

    @Option(name: .long, help: ArgumentHelp("Image repository (default: REGION-docker.pkg.dev/PROJECT/herald).", valueName: "repository"))
    var repository: String?

    @Option(name: .long, help: ArgumentHelp("A Cloud Monitoring channel for the alerts (projects/P/notificationChannels/ID).", valueName: "channel"))
    var notificationChannel: String?

    @Flag(name: .long, help: "Send Expo push tokens through Expo's push service (docs/configuration.md, push services).")
    var expo = false

    @Option(name: .long, help: ArgumentHelp("A Secret Manager secret holding the Expo project's push access token (implies --expo).", valueName: "secret"))
    var expoAccessTokenSecret: String?

    @Option(name: .long, help: ArgumentHelp("Apple's .p8 key for APNs: uploaded to the secret herald-apns-key.", valueName: "file"))
    var apnsKeyFile: String?

    @Option(name: .long, help: ArgumentHelp("A Secret Manager secret already holding the .p8 key (instead of --apns-key-file).", valueName: "secret"))
    var apnsKeySecret: String?

    @Option(name: .long, help: ArgumentHelp("The APNs key's id (10 characters).", valueName: "id"))
    var apnsKeyId: String?

    @Option(name: .long, help: ArgumentHelp("The Apple developer team's id (10 characters).", valueName: "id"))
    var apnsTeamId: String?

    @Option(name: .long, help: ArgumentHelp("The app's bundle id (apns-topic).", valueName: "bundle-id"))
    var apnsTopic: String?

    @Option(name: .long, help: ArgumentHelp("production (App Store and TestFlight builds) or sandbox (development builds).", valueName: "environment"))
    var apnsEnvironment: String?

    @Option(
        name: .customLong("set"),
        help: ArgumentHelp(
            "A function's setting (repeatable), e.g. HERALD_PRESENCE_STALE_AFTER=120: in the manifests of the functions that read it, and kept by later deploys.",
            valueName: "NAME=VALUE"))
    var settings: [String] = []

    @Option(name: .customLong("unset"), help: ArgumentHelp("A setting the deployed services carry, to remove (repeatable).", valueName: "NAME"))
    var unsetSettings: [String] = []

    @Flag(name: .long, help: "Build the executables on this machine (for machines that cannot pull a Swift base image).")
    var fromHost = false

    @Flag(name: .long, help: "Print every step's commands and run none.")
    var dryRun = false

    @Flag(name: .long, help: "Only check the project and this machine (gcloud, the database, APIs, FCM, roles, tools) and say what is missing.")
    var check = false

    @Option(name: .long, help: ArgumentHelp("The package's folder (default: the current one).", valueName: "folder"))
    var packagePath = "."

    func validate() throws {
        for (name, value) in [("PROJECT", project), ("REGION", region)]
        where value.isEmpty || value.contains(where: { !($0.isLowercase || $0.isNumber || $0 == "-") }) {
            throw ValidationError("\(name) must be lower-case letters, digits and dashes, not \"\(value)\"")
        }
        // A schema with an error is refused here, before anything is built.
        if let schema {
            do { _ = try Schema.named(schema) } catch { throw ValidationError("--schema \(schema): \(error)") }
        }
        if let database, database != "(default)",
            database.isEmpty || database.hasPrefix("-") || database.contains(where: { !($0.isLowercase || $0.isNumber || $0 == "-") })
        {
            throw ValidationError("--database must be a database id such as (default) or chat-eu, not \"\(database)\"")
        }
        if let firestoreLocation, firestoreLocation.isEmpty || firestoreLocation.contains(where: { !($0.isLowercase || $0.isNumber || $0 == "-") }) {
            throw ValidationError("--firestore-location must be a location such as nam5, eur3 or europe-west1, not \"\(firestoreLocation)\"")
        }
        try validatePushServices()
        _ = try DeploymentSettings.check(set: settings, unset: unsetSettings)
    }

    /// The APNs settings whole, each id Apple's form, and the key a P-256 key (read here, never printed).
    func validatePushServices() throws {
        for secret in [expoAccessTokenSecret, apnsKeySecret].compactMap({ $0 })
        where secret.isEmpty || !secret.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) {
            throw ValidationError("a secret's name is letters, digits, - and _, not \"\(secret)\"")
        }
        let apns: [(String, String?)] = [
            ("--apns-key-file or --apns-key-secret", apnsKeyFile ?? apnsKeySecret), ("--apns-key-id", apnsKeyId), ("--apns-team-id", apnsTeamId),
            ("--apns-topic", apnsTopic),
        ]
        guard apns.contains(where: { $0.1 != nil }) || apnsEnvironment != nil else { return }
        let missing = apns.filter { $0.1 == nil }.map(\.0)
        guard missing.isEmpty else { throw ValidationError("APNs needs \(missing.joined(separator: ", ")) as well") }
        if apnsKeyFile != nil && apnsKeySecret != nil { throw ValidationError("give --apns-key-file or --apns-key-secret, not both") }
        for id in [apnsKeyId, apnsTeamId].compactMap({ $0 }) where id.count != 10 || !id.allSatisfy({ $0.isASCII && ($0.isUppercase || $0.isNumber) }) {
            throw ValidationError("--apns-key-id and --apns-team-id are Apple's 10-character ids (capital letters and digits), not \"\(id)\"")
        }
        if let topic = apnsTopic, topic.isEmpty || !topic.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-") }) {
            throw ValidationError("--apns-topic must be the app's bundle id, not \"\(topic)\"")
        }
        if let environment = apnsEnvironment, !["production", "sandbox"].contains(environment) {
            throw ValidationError("--apns-environment must be production or sandbox, not \"\(environment)\"")
        }
        if let file = apnsKeyFile {
            guard let pem = try? String(contentsOfFile: file, encoding: .utf8) else { throw ValidationError("--apns-key-file \(file) cannot be read") }
            do { _ = try P256.PrivateKey(pem: pem) } catch { throw ValidationError("--apns-key-file \(file) is not an APNs key: \(error)") }
        }
    }

    /// The push services' options as deploy.sh takes them.
    var pushServiceArguments: [String] {
        var arguments: [String] = expo ? ["--expo"] : []
        for (flag, value) in [
            ("--expo-access-token-secret", expoAccessTokenSecret), ("--apns-key-file", apnsKeyFile.map { URL(fileURLWithPath: $0).standardizedFileURL.path }),
            ("--apns-key-secret", apnsKeySecret), ("--apns-key-id", apnsKeyId), ("--apns-team-id", apnsTeamId), ("--apns-topic", apnsTopic),
            ("--apns-environment", apnsEnvironment),
        ] {
            if let value { arguments += [flag, value] }
        }
        return arguments
    }

    /// A schema file as deploy.sh, run from the checkout, finds it; a preset by its name.
    var schemaArgument: String? {
        schema.map { Schema.presets[$0] != nil ? $0 : URL(fileURLWithPath: $0).standardizedFileURL.path }
    }

    /// One step: what it does, and the command that does it (run through bash so a script's own
    /// `--dry-run` can print its commands).
    struct Step {
        var title: String
        var command: [String]
        /// The step runs its own dry run (a script given `--dry-run`); otherwise a dry run only prints it.
        var printsItself = false
    }

    var repositoryPath: String { repository ?? "\(region)-docker.pkg.dev/\(project)/herald" }

    func steps() -> [Step] {
        let registryHost = String(repositoryPath.prefix { $0 != "/" })
        let repositoryName = repositoryPath.split(separator: "/").last.map(String.init) ?? "herald"
        let dry = dryRun ? ["--dry-run"] : []
        var deploy = ["bash", "Infra/deploy.sh", project, region, "--repository", repositoryPath]
        if let schemaArgument { deploy += ["--schema", schemaArgument] }
        if let database { deploy += ["--database", database] }
        if let firestoreLocation { deploy += ["--firestore-location", firestoreLocation] }
        if let ledgerCollection { deploy += ["--ledger-collection", ledgerCollection] }
        if let notificationChannel { deploy += ["--notification-channel", notificationChannel] }
        deploy += pushServiceArguments
        deploy += settings.flatMap { ["--set", $0] } + unsetSettings.flatMap { ["--unset", $0] }
        var steps = [
            Step(
                title: "Artifact Registry: the repository \(repositoryPath)",
                command: [
                    "bash", "-c",
                    "gcloud services enable artifactregistry.googleapis.com --project \"$0\" && "
                        + "{ gcloud artifacts repositories describe \"$1\" --location \"$2\" --project \"$0\" >/dev/null 2>&1 || "
                        + "gcloud artifacts repositories create \"$1\" --repository-format docker --location \"$2\" --project \"$0\"; }",
                    project, repositoryName, region,
                ])
        ]
        if repository != nil { steps.removeAll() }
        steps += [
            Step(
                title: "sign buildah in to \(registryHost) with gcloud's token",
                command: [
                    "bash", "-c",
                    "gcloud auth print-access-token | buildah --storage-driver vfs login --username oauth2accesstoken --password-stdin \"$0\"",
                    registryHost,
                ]),
            Step(
                title: "build the images and push them",
                command: ["bash", "Infra/build-images.sh"] + (fromHost ? ["--from-host"] : []) + ["--push", repositoryPath] + dry,
                printsItself: true),
            Step(title: "deploy to Cloud Run, Eventarc, Cloud Scheduler and Cloud Monitoring", command: deploy + dry, printsItself: true),
        ]
        return steps
    }

    func preflight(database: String) -> DeployCheck {
        DeployCheck(
            project: project, region: region, database: database, firestoreLocation: firestoreLocation, repository: repository,
            secrets: [expoAccessTokenSecret, apnsKeySecret].compactMap { $0 }, run: DeployCheck.runTool)
    }

    /// The database the deployed services use, which a redeploy without --database keeps (deploy.sh
    /// reads it the same way); nil before the first deploy or without gcloud.
    func deployedDatabase() async -> String? {
        let service = "herald-" + (FunctionCatalog.all.first?.name.lowercased() ?? "")
        let described = await DeployCheck.runTool([
            "gcloud", "run", "services", "describe", service, "--region=\(region)", "--project=\(project)", "--format=json",
        ])
        guard described.status == 0, let service = try? JSONValue(parsing: described.stdout) else { return nil }
        let containers = service["spec"]?["template"]?["spec"]?["containers"]?.arrayValue ?? []
        let env = containers.first { $0["name"] == "function" }?["env"]?.arrayValue ?? []
        return env.first { $0["name"] == "FIRESTORE_DATABASE" }?["value"]?.stringValue
    }

    func run() async throws {
        if check || !dryRun {
            var database = self.database ?? "(default)"
            if self.database == nil, let deployed = await deployedDatabase() { database = deployed }
            print("herald deploy --check → project \(project), region \(region), database \(database)")
            let findings = await preflight(database: database).findings()
            print(DeployCheck.report(findings))
            let fatal = findings.filter { $0.level == .fatal }
            if check {
                print(fatal.isEmpty ? "ready to deploy" : "not ready: \(fatal.count) missing")
                if !fatal.isEmpty { throw ExitCode(1) }
                return
            }
            guard fatal.isEmpty else {
                throw ValidationError("not deploying: \(fatal.count) missing (above, each with its fix); nothing was built or changed")
            }
        }
        let root = URL(fileURLWithPath: packagePath)
        guard FileManager.default.fileExists(atPath: root.appendingPathComponent("Infra/deploy.sh").path) else {
            throw ValidationError("no Infra/deploy.sh in \(root.standardizedFileURL.path): run herald deploy from Herald's checkout (or give --package-path)")
        }
        let steps = steps()
        print(
            "herald deploy → project \(project), region \(region), schema \(schema ?? "as deployed (default for a first deploy)"), images \(repositoryPath)\(dryRun ? " (dry run: nothing runs)" : "")"
        )
        print(
            "Firestore database \(database ?? "(default)") in \(firestoreLocation ?? "its own location (read from the project)"): Eventarc triggers there; services, images and jobs in \(region)"
        )
        for (index, step) in steps.enumerated() {
            print("[\(index + 1)/\(steps.count)] \(step.title)")
            if dryRun && !step.printsItself {
                print("+ " + step.command.map(Self.quoted).joined(separator: " "))
                continue
            }
            let status = try Self.run(step.command, in: root)
            guard status == 0 else {
                throw ValidationError(
                    "step \(index + 1) (\(step.title)) failed with exit status \(status); fix it and run herald deploy again (every step is idempotent)")
            }
        }
        fflush(nil)
        print(dryRun ? "dry run done: \(steps.count) steps printed" : "deployed: \(steps.count) steps done")
    }

    static func quoted(_ word: String) -> String {
        word.allSatisfy { $0.isLetter || $0.isNumber || "-_./:=@".contains($0) } ? word : "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// Runs a step with this process's standard output and error, and returns its exit status.
    static func run(_ command: [String], in directory: URL) throws -> Int32 {
        fflush(nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = command
        process.currentDirectoryURL = directory
        // deploy.sh derives the schema's triggers and indexes with this very executable.
        var environment = ProcessInfo.processInfo.environment
        environment["HERALD"] = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        process.environment = environment
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }
}
