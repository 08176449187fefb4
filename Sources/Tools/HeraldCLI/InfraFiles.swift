import ArgumentParser
import ChatFunctions
import FirestoreEvents
import Foundation
import HeraldCore
import HeraldRuntime

/// The files `FunctionCatalog.all` decides, written from it: Package.swift's list of executables, each
/// function's executable (`Functions/NAME/main.swift`), its Cloud Run manifest (`Infra/cloudrun/NAME.yaml`), the lists
/// deploy.sh, build-images.sh and the benchmarks work through (`Infra/functions.sh`: which functions,
/// which push, who calls each, the scheduler's jobs), the containers
/// (`Infra/compose.yaml`), and the schema's reference (`docs/schema.md`, from `Schema.keys`). Adding a function is its type, one line in the catalog, and `swift run herald infra`.
enum InfraFiles {
    /// Every file, by its path under the package's root.
    static func all(root: URL, functions: [FunctionDeclaration] = FunctionCatalog.all) throws -> [(path: String, text: String)] {
        let containers = try String(contentsOf: root.appendingPathComponent("Infra/cloudrun/containers.yaml.part"), encoding: .utf8)
        let package = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        return try [("Package.swift", try packageManifest(package, names: functions.map(\.name)))]
            + functions.flatMap { function in
                [
                    ("Functions/\(function.name)/main.swift", executable(function)),
                    ("Infra/cloudrun/\(function.name).yaml", try manifest(function, containers: containers)),
                ]
            } + [
                ("Infra/functions.sh", try deployLists(functions)), ("Infra/compose.yaml", compose(functions)),
                ("docs/schema.md", SchemaDocument.text()),
            ]
    }

    /// Package.swift with its list of function executables (`let functionNames = [...]`, on one line or
    /// several) as the catalog says: on one line while it fits swift-format's 160 columns, else one a line.
    static func packageManifest(_ text: String, names functionNames: [String]) throws -> String {
        let prefix = "let functionNames = ["
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let start = lines.firstIndex(where: { $0.hasPrefix(prefix) }),
            let end = lines[start...].firstIndex(where: { $0.trimmingCharacters(in: .whitespaces).hasSuffix("]") })
        else {
            throw ValidationError("Package.swift has no list \"\(prefix)…]\" for herald infra to write the functions into")
        }
        let names = functionNames.map { "\"\($0)\"" }
        let oneLine = prefix + names.joined(separator: ", ") + "]"
        lines.replaceSubrange(start...end, with: oneLine.count <= 160 ? [oneLine] : [prefix] + names.map { "    \($0)," } + ["]"])
        return lines.joined(separator: "\n")
    }

    static func executable(_ function: FunctionDeclaration) -> String {
        """
        // The \(function.name) executable. Written by `swift run herald infra` from FunctionCatalog.all.
        // Serves the function on the host for its kind (HeraldRuntime/Serving/FunctionHosts.swift).
        import ChatFunctions
        import HeraldRuntime

        await FunctionCommand<\(String(describing: function.type))>.main()

        """
    }

    /// Eventarc's triggers for the function in `schema`: one per event type (a second type needs a
    /// second trigger, named with the type), none when only Cloud Scheduler runs it.
    static func triggers(_ function: FunctionDeclaration, schema: String) throws -> [(kind: String, pattern: String, suffix: String?)] {
        guard let trigger = try function.trigger(settings: FunctionSettings.reading(schema: schema)) else { return [] }
        if trigger.kinds.contains(.written) { return [("written", trigger.pattern, nil)] }
        let kinds = [DocumentChange.Kind.created, .updated, .deleted].filter(trigger.kinds.contains)
        return kinds.enumerated().map { index, kind in (kind.rawValue, trigger.pattern, index == 0 ? nil : kind.rawValue) }
    }

    /// Who calls the function: Eventarc's account for its triggers, Cloud Scheduler's for its job.
    static func callers(_ function: FunctionDeclaration) throws -> [String] {
        (try triggers(function, schema: "default").isEmpty ? [] : ["$TRIGGER_SA"]) + (function.schedule == nil ? [] : ["$SCHEDULER_SA"])
    }

    /// The service around `containers` (Infra/cloudrun/containers.yaml.part: the function and its collector, the same for every function).
    static func manifest(_ function: FunctionDeclaration, containers: String) throws -> String {
        let service = "herald-" + function.name.lowercased()
        var runs = [""] + (try triggers(function, schema: "default").map { "Eventarc: \($0.pattern) \($0.kind)" })
        if let schedule = function.schedule { runs.append("Cloud Scheduler: \(schedule.cron), POST \(schedule.path)") }
        let deployment = function.deployment
        return """
            # Cloud Run service for \(function.name): \(function.summary)
            # Runs on (the default schema's paths):\(runs.joined(separator: "\n#   "))
            # Written by `swift run herald infra` from FunctionCatalog.all; rendered by Infra/deploy.sh (PROJECT_ID,
            # IMAGE: this function's own, by digest, SCHEMA, SERVICE_URL, CALLER_ACCOUNTS) and applied with
            # `gcloud run services replace`.
            apiVersion: serving.knative.dev/v1
            kind: Service
            metadata:
              name: \(service)
              labels:
                app: herald
                herald-function: \(function.name.lowercased())
              annotations:
                # Only Google's own callers (Eventarc, Cloud Scheduler) and the VPC reach it.
                run.googleapis.com/ingress: internal
            spec:
              template:
                metadata:
                  annotations:
                    autoscaling.knative.dev/minScale: "0"
                    autoscaling.knative.dev/maxScale: "\(deployment.maximumInstances)"
                    run.googleapis.com/startup-cpu-boost: "true"
                    # CPU between requests too: the collector beside the function exports spans and scrapes
                    # metrics on its own schedule, which a throttled CPU would stall until the next request.
                    run.googleapis.com/cpu-throttling: "false"
                spec:
                  containerConcurrency: \(deployment.concurrency)
                  timeoutSeconds: \(deployment.timeoutSeconds)
                  serviceAccountName: \(service)@PROJECT_ID.iam.gserviceaccount.com
                  containers:
            \(containers)
            """
    }

    /// The local cloud and every function as containers (podman-compose), each function on its own image.
    static func compose(_ functions: [FunctionDeclaration]) -> String {
        let host = { (function: FunctionDeclaration) in function.name.lowercased() }
        var lines = [
            "# The local cloud and the functions as containers, wired as `herald dev` wires its processes: the cloud",
            "# delivers Firestore events and scheduler calls (with identity tokens) to the function containers, which",
            "# reach Firestore, FCM and their tokens through the cloud's metadata server. Each function runs its own",
            "# image (its executable alone); the cloud runs the herald image. Written by `swift run herald infra`.",
            "#   Infra/build-images.sh --from-host        # localhost/herald-onmessagecreated:latest, …, localhost/herald:latest",
            "#   podman-compose -f Infra/compose.yaml up",
            "#   curl -X POST localhost:8787/herald/scheduler/jobs/presence-sweep:run",
            "x-function: &function",
            "  depends_on: [cloud]",
            "  restart: on-failure",
            "",
            "x-environment: &environment",
            "  GOOGLE_CLOUD_PROJECT: herald-local",
            "  GCE_METADATA_HOST: cloud:8787",
            "  FIRESTORE_ENDPOINT: http://cloud:8787",
            "  FCM_ENDPOINT: http://cloud:8787",
            "  HERALD_SCHEMA: default",
            "  HERALD_OIDC_JWKS_URL: http://cloud:8787/herald/oidc/jwks",
            "  # The local cloud's account is the only caller (its delivery and scheduler), as Eventarc's and Cloud Scheduler's are in Google Cloud.",
            "  HERALD_ALLOWED_CALLERS: herald-functions@herald-local.iam.gserviceaccount.com",
            "  LOG_FORMAT: json",
            "  # Spans to the local cloud, which shows them under each event in its console (as Cloud Trace would).",
            "  OTEL_EXPORTER_OTLP_ENDPOINT: http://cloud:8787/herald/otlp",
            "",
            "services:",
            "  cloud:",
            "    image: localhost/herald:latest",
            "    command:",
            "      - dev",
            "      - --host=0.0.0.0",
            "      - --allow-host=cloud",
            "      # The function containers call the token, metadata, FCM and trace endpoints from the compose network;",
            "      # nothing else reaches it (the port is published on this machine's loopback only).",
            "      - --admin-from=0.0.0.0/0",
            "      - --port=8787",
            "      - --ephemeral",
            "      - --project=herald-local",
            "      - --seed=demo",
        ]
        lines += functions.map { "      - --function=\($0.name)=http://\(host($0)):8080/" }
        lines += [
            "    # Published on this machine only: any device on the network could otherwise write documents and register triggers.",
            "    ports: [\"127.0.0.1:8787:8787\"]",
        ]
        for function in functions {
            lines += [
                "", "  \(host(function)):", "    <<: *function", "    image: localhost/herald-\(host(function)):latest", "    environment:",
                "      <<: *environment", "      HERALD_REQUIRE_OIDC_AUDIENCE: http://\(host(function)):8080/",
            ]
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func deployLists(_ functions: [FunctionDeclaration]) throws -> String {
        var lines = [
            "# Herald's functions as FunctionCatalog.all (Sources/Chat/ChatFunctions/FunctionCatalog.swift) declares them, for",
            "# deploy.sh, build-images.sh and the benchmarks. Written by `swift run herald infra`; InfraTests fails when",
            "# this file and the catalog differ.",
            "# shellcheck shell=bash disable=SC2034",
            "FUNCTIONS=(\(functions.map(\.name).joined(separator: " ")))",
            "PUSHING=(\(functions.filter(\.sendsPushes).map(\.name).joined(separator: " ")))",
            "# Who calls each function: run.invoker for them, and the function checks their identity tokens too.",
            "callers_of() {",
            "  case \"$1\" in",
        ]
        for function in functions { lines.append("    \(function.name)) echo \"\(try callers(function).joined(separator: ","))\" ;;") }
        lines += [
            "  esac", "}",
            "# The settings `herald deploy --set NAME=VALUE` may give each function: its own, then the runtime's.",
            "settings_of() {",
            "  case \"$1\" in",
        ]
        for function in functions { lines.append("    \(function.name)) echo \"\(DeploymentSettings.settable(by: function).joined(separator: " "))\" ;;") }
        lines += [
            "  esac", "}",
            "# Each schema's Eventarc triggers are derived from its own paths: `herald schema deployment SCHEMA` writes them.",
            "# Cloud Scheduler's jobs: job NAME CRON FUNCTION PATH ATTEMPT-DEADLINE.", "herald_jobs() {",
        ]
        for function in functions {
            guard let schedule = function.schedule else { continue }
            lines.append("  job herald-\(schedule.job) '\(schedule.cron)' \(function.name) \(schedule.path) \(schedule.deadlineSeconds)s")
        }
        lines.append("}")
        return lines.joined(separator: "\n") + "\n"
    }

}

struct Infra: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write each function's executable, Cloud Run manifest, deploy.sh's lists and compose.yaml from FunctionCatalog.all.",
        discussion: "Run it in the package after adding a function to the catalog. --check writes nothing and fails when a file differs.")

    @Flag(name: .long, help: "Write nothing; list the files that differ from what the catalog says, and fail if any does.")
    var check = false

    @Option(name: .long, help: ArgumentHelp("The package's folder (default: the current one).", valueName: "folder"))
    var packagePath = "."

    func run() throws {
        let root = URL(fileURLWithPath: packagePath)
        guard FileManager.default.fileExists(atPath: root.appendingPathComponent("Package.swift").path) else {
            throw ValidationError("\(root.path) holds no Package.swift: run it in Herald's package, or pass --package-path")
        }
        var differing: [String] = []
        for (path, text) in try InfraFiles.all(root: root) {
            let url = root.appendingPathComponent(path)
            guard (try? String(contentsOf: url, encoding: .utf8)) != text else { continue }
            differing.append(path)
            if !check {
                try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try Data(text.utf8).write(to: url, options: .atomic)
            }
        }
        if check {
            guard differing.isEmpty else {
                throw ValidationError("differs from FunctionCatalog.all: \(differing.joined(separator: ", ")) (run `swift run herald infra`)")
            }
            print("every generated file matches FunctionCatalog.all")
        } else {
            print(differing.isEmpty ? "nothing to write" : "wrote \(differing.joined(separator: ", "))")
        }
    }
}
