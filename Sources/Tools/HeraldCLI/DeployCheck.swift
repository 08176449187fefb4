import ArgumentParser
import FirestoreModel
import Foundation
import WireFormats

/// `herald deploy --check PROJECT REGION`: what a deployment needs of the project and of this machine,
/// read through gcloud before anything is built, each missing piece with the command that fixes it.
/// Every deployment runs it first and stops on a fatal finding.
struct DeployCheck {
    struct Finding: Equatable {
        enum Level: String, Comparable {
            case ready = "ok"
            /// deploy.sh takes care of it (an API it enables).
            case handled = "will do"
            case warning = "check"
            case fatal = "missing"
            static func < (a: Level, b: Level) -> Bool { order.firstIndex(of: a)! < order.firstIndex(of: b)! }
            static let order: [Level] = [.ready, .handled, .warning, .fatal]
        }
        var level: Level
        var what: String
        var fix: String?
    }

    var project: String
    var region: String
    var database: String
    var firestoreLocation: String?
    var repository: String?
    /// Secret Manager secrets the deployment names (the Expo access token's, an APNs key's): they must exist.
    var secrets: [String] = []
    /// Runs gcloud (or any tool) with arguments: its exit status and standard output and error.
    var run: @Sendable ([String]) async -> (status: Int32, stdout: String, stderr: String)

    /// The APIs deploy.sh enables (step 1) and the ones this checks for.
    static let apis = [
        "run.googleapis.com", "eventarc.googleapis.com", "firestore.googleapis.com", "fcm.googleapis.com", "cloudscheduler.googleapis.com",
        "pubsub.googleapis.com", "secretmanager.googleapis.com", "monitoring.googleapis.com", "cloudtrace.googleapis.com",
        "artifactregistry.googleapis.com",
    ]

    /// Roles that together let an account run deploy.sh (roles/owner covers them all).
    static let deployerRoles = [
        "roles/run.admin", "roles/iam.serviceAccountAdmin", "roles/iam.serviceAccountUser", "roles/resourcemanager.projectIamAdmin",
        "roles/eventarc.admin", "roles/pubsub.admin", "roles/cloudscheduler.admin", "roles/datastore.indexAdmin", "roles/artifactregistry.admin",
        "roles/secretmanager.admin", "roles/monitoring.editor", "roles/serviceusage.serviceUsageAdmin",
    ]

    func gcloud(_ arguments: [String]) async -> (status: Int32, stdout: String, stderr: String) {
        await run(["gcloud"] + arguments + ["--project=\(project)", "--format=json"])
    }

    func findings() async -> [Finding] {
        var found: [Finding] = []
        // This machine's tools.
        for (tool, fix) in [
            ("gcloud", "install the Google Cloud CLI: https://cloud.google.com/sdk/docs/install"), ("buildah", "apt-get install buildah"),
            ("jq", "apt-get install jq"), ("curl", "apt-get install curl"),
        ] {
            let present = await run(["sh", "-c", "command -v \(tool)"]).status == 0
            found.append(.init(level: present ? .ready : .fatal, what: "\(tool) on this machine", fix: present ? nil : fix))
        }
        guard found.first?.level == .ready else { return found }
        let alpha = await run(["gcloud", "alpha", "monitoring", "policies", "list", "--help"]).status == 0
        found.append(
            .init(
                level: alpha ? .ready : .fatal, what: "gcloud's alpha commands (alerting policies)",
                fix: alpha ? nil : "gcloud components install alpha (Debian's package: apt-get install google-cloud-cli-alpha)"))
        let account = await run(["gcloud", "config", "get-value", "account"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !account.isEmpty else {
            found.append(.init(level: .fatal, what: "a gcloud account signed in", fix: "gcloud auth login"))
            return found
        }
        found.append(.init(level: .ready, what: "signed in to gcloud as \(account)"))
        let described = await gcloud(["projects", "describe", project])
        guard described.status == 0 else {
            found.append(
                .init(
                    level: .fatal, what: "project \(project): \(Self.reason(described.stderr))",
                    fix: "check the id (gcloud projects list), or create it: gcloud projects create \(project)"))
            return found
        }
        found += await firestore()
        found += await services()
        found += await roles(of: account)
        found += await artifactRegistry()
        for secret in secrets {
            let described = await gcloud(["secrets", "describe", secret])
            found.append(
                described.status == 0
                    ? .init(level: .ready, what: "secret \(secret)")
                    : .init(
                        level: .fatal, what: "secret \(secret): \(Self.reason(described.stderr))",
                        fix: "gcloud secrets create \(Self.shellWord(secret)) --data-file=FILE --project=\(project) (FILE holding the token or the .p8 key)"))
        }
        return found
    }

    /// The database: it exists, in Native mode, and where it is (the triggers go there).
    func firestore() async -> [Finding] {
        let describe = await gcloud(["firestore", "databases", "describe", "--database=\(database)"])
        guard describe.status == 0, let json = try? JSONValue(parsing: Array(describe.stdout.utf8)) else {
            return [
                .init(
                    level: .fatal, what: "Firestore database \(database): \(Self.reason(describe.stderr))",
                    fix:
                        "gcloud firestore databases create --database=\(Self.shellWord(database)) --location=\(firestoreLocation ?? "nam5") --type=firestore-native --project=\(project)"
                )
            ]
        }
        var found: [Finding] = []
        let type = json["type"]?.stringValue ?? "unknown"
        if type == "FIRESTORE_NATIVE" {
            found.append(.init(level: .ready, what: "Firestore database \(database) in Native mode"))
        } else {
            found.append(
                .init(
                    level: .fatal,
                    what:
                        "Firestore database \(database) is in \(type == "DATASTORE_MODE" ? "Datastore mode" : type), not Native mode: it sends no Firestore events",
                    fix: "use another database in Native mode (gcloud firestore databases create --database=chat --type=firestore-native …) and --database"))
        }
        let location = json["locationId"]?.stringValue ?? "?"
        if let given = firestoreLocation, given != location {
            found.append(
                .init(
                    level: .fatal, what: "--firestore-location \(given), but database \(database) is in \(location)",
                    fix: "drop --firestore-location, or give --firestore-location \(location)"))
        } else if location != region {
            found.append(
                .init(
                    level: .ready,
                    what: "database \(database) is in \(location): its Eventarc triggers go to \(location), the services and jobs to \(region)"))
        } else {
            found.append(.init(level: .ready, what: "database \(database) is in \(location), with the functions"))
        }
        return found
    }

    func services() async -> [Finding] {
        let list = await gcloud(["services", "list", "--enabled"])
        guard list.status == 0, let json = try? JSONValue(parsing: Array(list.stdout.utf8)) else {
            return [
                .init(
                    level: .warning, what: "cannot list the enabled APIs: \(Self.reason(list.stderr))",
                    fix: "gcloud services enable serviceusage.googleapis.com --project=\(project)")
            ]
        }
        let enabled = Set(
            (json.arrayValue ?? []).compactMap { $0["config"]?["name"]?.stringValue ?? $0["name"]?.stringValue?.split(separator: "/").last.map(String.init) })
        var found: [Finding] = []
        let missing = Self.apis.filter { !enabled.contains($0) }
        if missing.isEmpty {
            found.append(.init(level: .ready, what: "every API the deployment uses is enabled"))
        } else {
            found.append(
                .init(
                    level: .handled, what: "APIs not enabled yet (the deployment enables them): \(missing.joined(separator: ", "))",
                    fix: "gcloud services enable \(missing.joined(separator: " ")) --project=\(project)"))
        }
        if enabled.contains("firebase.googleapis.com") {
            found.append(.init(level: .ready, what: "the project is a Firebase project (FCM can reach its apps)"))
        } else {
            found.append(
                .init(
                    level: .warning, what: "the project is not a Firebase project: FCM sends to apps registered in Firebase only",
                    fix: "firebase projects:addfirebase \(project) (or add the project in the Firebase console)"))
        }
        return found
    }

    func roles(of account: String) async -> [Finding] {
        let policy = await gcloud(["projects", "get-iam-policy", project])
        guard policy.status == 0, let json = try? JSONValue(parsing: Array(policy.stdout.utf8)) else {
            return [.init(level: .warning, what: "cannot read the project's IAM policy: \(Self.reason(policy.stderr))", fix: nil)]
        }
        let members = ["user:\(account)", "serviceAccount:\(account)"]
        let held = Set(
            (json["bindings"]?.arrayValue ?? []).filter { binding in
                binding["members"]?.arrayValue?.contains { members.contains($0.stringValue ?? "") } == true
            }.compactMap { $0["role"]?.stringValue })
        if held.contains("roles/owner") { return [.init(level: .ready, what: "\(account) is an owner of \(project)")] }
        let lacking = Self.deployerRoles.filter { !held.contains($0) }
        if lacking.isEmpty { return [.init(level: .ready, what: "\(account) holds every role the deployment needs")] }
        return [
            .init(
                level: .warning,
                what: "\(account) holds none of these directly (a group may grant them): \(lacking.joined(separator: ", "))",
                fix: lacking.map { "gcloud projects add-iam-policy-binding \(project) --member=user:\(account) --role=\($0)" }.joined(separator: "\n      "))
        ]
    }

    func artifactRegistry() async -> [Finding] {
        if let repository, !repository.hasSuffix(".pkg.dev/\(project)/herald") {
            return [.init(level: .ready, what: "images go to \(repository) (not checked)")]
        }
        let describe = await gcloud(["artifacts", "repositories", "describe", "herald", "--location=\(region)"])
        if describe.status == 0 { return [.init(level: .ready, what: "Artifact Registry repository herald in \(region)")] }
        return [
            .init(
                level: .handled, what: "no Artifact Registry repository herald in \(region) yet (the deployment creates it)",
                fix: "gcloud artifacts repositories create herald --repository-format=docker --location=\(region) --project=\(project)")
        ]
    }

    /// gcloud's one-line reason (`ERROR: (gcloud.x) NOT_FOUND: …`), without its prefix.
    static func reason(_ stderr: String) -> String {
        let line = stderr.split(separator: "\n").first { $0.hasPrefix("ERROR:") }.map(String.init) ?? stderr.split(separator: "\n").first.map(String.init) ?? ""
        let trimmed = line.replacingOccurrences(of: #"^ERROR: \([^)]*\) "#, with: "", options: .regularExpression)
        return trimmed.isEmpty ? "gcloud failed" : String(trimmed.prefix(300))
    }

    static func shellWord(_ word: String) -> String { word.contains("(") ? "'\(word)'" : word }

    static func report(_ findings: [Finding]) -> String {
        findings.map { finding in
            "\(finding.level == .ready ? "✓" : finding.level == .fatal ? "✗" : "!") \(finding.what)" + (finding.fix.map { "\n    fix: \($0)" } ?? "")
        }.joined(separator: "\n")
    }

    /// A subprocess through /usr/bin/env, its output collected.
    static func runTool(_ arguments: [String]) async -> (status: Int32, stdout: String, stderr: String) {
        await Task.detached {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = arguments
            let out = Pipe()
            let err = Pipe()
            process.standardOutput = out
            process.standardError = err
            process.standardInput = FileHandle.nullDevice
            do { try process.run() } catch { return (127, "", "\(error)") }
            // Both pipes drained at once: a tool that fills one while the other is read would wait forever.
            let stderrReading = Task.detached { err.fileHandleForReading.readDataToEndOfFile() }
            let stdout = out.fileHandleForReading.readDataToEndOfFile()
            let stderr = await stderrReading.value
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
        }.value
    }
}
