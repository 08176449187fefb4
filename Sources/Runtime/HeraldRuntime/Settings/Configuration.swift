import GoogleClients
import HeraldHTTPClient
import Logging
import SystemAccess
import WireFormats

/// Everything a function reads from its environment, validated once at start.
public struct RuntimeConfiguration: Sendable {
    public enum LogFormat: String, Sendable { case json, text }

    public var project: String?
    public var credentialsFile: String?
    /// `HOST:PORT` of a Firestore emulator (or `herald dev`); Firestore calls go there with `Bearer owner`.
    public var firestoreEmulatorHost: String?
    /// Firestore's REST endpoint when it is not Google's, reached with the real credentials.
    public var firestoreEndpoint: String?
    public var database: String
    public var fcmEndpoint: String?
    /// A built-in preset name or a path to a schema JSON file.
    public var schema: String
    /// Where the exactly-once ledger documents live (`HERALD_LEDGER_COLLECTION`, a collection path).
    public var ledgerCollection: String
    /// When set, every request must carry an OIDC identity token for this audience (`HERALD_REQUIRE_OIDC_AUDIENCE`).
    public var requiredAudience: String?
    /// Where the identity tokens' keys are published (`HERALD_OIDC_JWKS_URL`; Google's by default).
    /// https only, but for `herald dev` (a loopback address, or the host that is also the metadata server).
    public var oidcJWKSURL: String?
    /// The callers allowed, by service-account email (`HERALD_ALLOWED_CALLERS`, comma-separated): the
    /// Eventarc trigger's and Cloud Scheduler's accounts. Needs `HERALD_REQUIRE_OIDC_AUDIENCE`.
    public var allowedCallers: Set<String>?
    /// `HERALD_ALLOWED_CALLERS=*`: every caller whose token is for the audience, meant so.
    public var anyCallerOfAudience = false
    /// `serve` on a non-loopback address without identity checks, said explicitly
    /// (`HERALD_ALLOW_UNAUTHENTICATED=1`): for a platform that checks callers itself (Cloud Run IAM).
    public var allowUnauthenticated: Bool
    /// How long one try of a call to a Google API may take (`HERALD_API_TIMEOUT`, seconds; 4 by default).
    /// A call is retried for 2 s at most; what still fails goes back to the trigger, which retries with
    /// its own backoff, so an outage is answered within seconds instead of holding every instance.
    /// (FCM sends are waited for longer, within the push lease: a late answer may still be a delivery.)
    public var apiTimeout: Duration
    /// How long a delivery that is sending pushes holds them before a redelivery may take over
    /// (`HERALD_PUSH_LEASE`, seconds; 60 by default, Cloud Run's request timeout). Keep it above the
    /// longest a send can take.
    public var pushLease: Double
    /// The whole environment, for the functions' own settings.
    public var environment: [String: String]
    public var logLevel: Logger.Level
    public var logFormat: LogFormat
    public var port: Int
    /// A second port, on 127.0.0.1 only, serving `GET /metrics` without an identity token
    /// (`HERALD_METRICS_PORT`): for a collector in the same instance (a Cloud Run sidecar), which
    /// cannot get one. Nothing outside the instance reaches it.
    public var metricsPort: Int?
    /// Whether `serve` counts anything (`HERALD_METRICS`, on by default; off: no `/metrics`).
    public var metricsEnabled = true
    /// Where spans are exported over OTLP, if anywhere (OpenTelemetry's `OTEL_EXPORTER_OTLP_*` variables).
    public var traceExport: TraceExportSettings?
    /// Where metrics are pushed over OTLP besides `/metrics`, when they are (`OTEL_METRICS_EXPORTER=otlp`).
    public var metricsExport: MetricsExportSettings?
    /// Expo's push service and APNs, for the tokens FCM cannot deliver (`HERALD_EXPO_*`, `HERALD_APNS_*`).
    public var pushServices = PushServiceSettings()

    /// The runtime's settings an operator chooses per deployment (`herald deploy --set NAME=VALUE`):
    /// every function reads them. The rest are the deployment's own: its manifests and flags set them.
    public static let operatorSettings = [
        "LOG_LEVEL", "HERALD_API_TIMEOUT", "HERALD_PUSH_LEASE", "HERALD_METRICS", "OTEL_TRACES_EXPORTER", "OTEL_TRACES_SAMPLER",
        "OTEL_TRACES_SAMPLER_ARG", "OTEL_METRICS_EXPORTER", "OTEL_METRIC_EXPORT_INTERVAL",
    ]

    /// Parses and checks the environment; every problem found is listed in the one error.
    public init(environment: [String: String], stdoutIsTerminal: Bool = false) throws(ConfigurationError) {
        var problems: [String] = []
        func value(_ key: String) -> String? {
            guard let v = environment[key]?.trimmingWhitespace, !v.isEmpty else { return nil }
            return v
        }
        project = value("GOOGLE_CLOUD_PROJECT") ?? value("GCLOUD_PROJECT")
        if let p = project, !p.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == ":" || $0 == "." || $0 == "_" }) {
            problems.append("GOOGLE_CLOUD_PROJECT \"\(p)\" is not a project id")
        }
        credentialsFile = value("GOOGLE_APPLICATION_CREDENTIALS")
        if let path = credentialsFile, !LocalFile.isReadable(path) {
            problems.append("GOOGLE_APPLICATION_CREDENTIALS names \(path), which is not a readable file")
        }
        firestoreEmulatorHost = value("FIRESTORE_EMULATOR_HOST")
        if let host = firestoreEmulatorHost {
            let parts = host.split(separator: ":")
            if parts.count < 2 || Int(parts.last!).map({ !(1...65535).contains($0) }) ?? true || host.contains("/") {
                problems.append("FIRESTORE_EMULATOR_HOST must be HOST:PORT, not \"\(host)\"")
            }
        }
        // Plain http carries tokens in clear: only to this machine, the metadata server or the emulator.
        let cleartext = CleartextPolicy(environment: environment)
        if let endpoint = value("FIRESTORE_ENDPOINT") {
            if let problem = cleartext.problem(endpoint, setting: "FIRESTORE_ENDPOINT") { problems.append(problem) } else { firestoreEndpoint = endpoint }
        }
        database = value("FIRESTORE_DATABASE") ?? "(default)"
        if database.contains("/") { problems.append("FIRESTORE_DATABASE \"\(database)\" is not a database id") }
        if let endpoint = value("FCM_ENDPOINT") {
            if let problem = cleartext.problem(endpoint, setting: "FCM_ENDPOINT") { problems.append(problem) } else { fcmEndpoint = endpoint }
        }
        schema = value("HERALD_SCHEMA") ?? "default"
        ledgerCollection = value("HERALD_LEDGER_COLLECTION") ?? "_herald/events/ledger"
        let ledgerSegments = ledgerCollection.split(separator: "/", omittingEmptySubsequences: false)
        if ledgerSegments.count % 2 == 0 || ledgerSegments.contains(where: \.isEmpty) {
            problems.append("HERALD_LEDGER_COLLECTION must be a collection path (an odd number of segments), not \"\(ledgerCollection)\"")
        }
        requiredAudience = value("HERALD_REQUIRE_OIDC_AUDIENCE")
        oidcJWKSURL = value("HERALD_OIDC_JWKS_URL")
        if let url = oidcJWKSURL, let problem = cleartext.problem(url, setting: "HERALD_OIDC_JWKS_URL") { problems.append(problem) }
        if value("HERALD_ALLOWED_CALLERS") == "*" {
            // Said explicitly: any caller with a valid token for the audience (another check guards who can get one).
            anyCallerOfAudience = true
            if requiredAudience == nil { problems.append("HERALD_ALLOWED_CALLERS=* needs HERALD_REQUIRE_OIDC_AUDIENCE") }
        } else if let list = value("HERALD_ALLOWED_CALLERS") {
            let emails = list.split(separator: ",").map { $0.trimmingWhitespace.lowercased() }.filter { !$0.isEmpty }
            if emails.isEmpty || emails.contains(where: { !$0.contains("@") }) {
                problems.append("HERALD_ALLOWED_CALLERS must list service-account emails separated by commas, not \"\(list)\"")
            }
            allowedCallers = Set(emails)
            if requiredAudience == nil {
                problems.append("HERALD_ALLOWED_CALLERS needs HERALD_REQUIRE_OIDC_AUDIENCE: callers are known by their identity tokens")
            }
        }
        switch value("HERALD_ALLOW_UNAUTHENTICATED")?.lowercased() {
        case nil, "0", "false", "no": allowUnauthenticated = false
        case "1", "true", "yes": allowUnauthenticated = true
        case let other?:
            allowUnauthenticated = false
            problems.append("HERALD_ALLOW_UNAUTHENTICATED must be true or false, not \"\(other)\"")
        }
        apiTimeout = .seconds(4)
        if let text = value("HERALD_API_TIMEOUT") {
            if let seconds = Double(text), seconds > 0, seconds <= 3600 {
                apiTimeout = .milliseconds(Int64(seconds * 1000))
            } else {
                problems.append("HERALD_API_TIMEOUT must be a number of seconds (at most 3600), not \"\(text)\"")
            }
        }
        pushLease = 60
        if let text = value("HERALD_PUSH_LEASE") {
            if let seconds = Double(text), seconds >= 1, seconds <= 86_400 {
                pushLease = seconds
            } else {
                problems.append("HERALD_PUSH_LEASE must be a number of seconds from 1 to 86400, not \"\(text)\"")
            }
        }
        self.environment = environment
        logLevel = .info
        if let level = value("LOG_LEVEL") {
            if let parsed = Self.parseLevel(level) {
                logLevel = parsed
            } else {
                problems.append("LOG_LEVEL must be one of trace, debug, info, notice, warning, error, critical; not \"\(level)\"")
            }
        }
        switch value("LOG_FORMAT")?.lowercased() {
        case nil: logFormat = stdoutIsTerminal ? .text : .json
        case "json": logFormat = .json
        case "text": logFormat = .text
        case let other?:
            logFormat = .json
            problems.append("LOG_FORMAT must be json or text, not \"\(other)\"")
        }
        port = 8080
        if let text = value("PORT") {
            if let p = Int(text), (0...65535).contains(p) { port = p } else { problems.append("PORT must be a port number, not \"\(text)\"") }
        }
        switch value("HERALD_METRICS")?.lowercased() {
        case nil, "on", "true", "1": metricsEnabled = true
        case "off", "false", "0": metricsEnabled = false
        case let other?: problems.append("HERALD_METRICS must be on or off, not \"\(other)\"")
        }
        if let text = value("HERALD_METRICS_PORT") {
            if let p = Int(text), (1...65535).contains(p), p != port {
                metricsPort = p
            } else {
                problems.append("HERALD_METRICS_PORT must be a port number other than PORT's, not \"\(text)\"")
            }
        }
        traceExport = TraceExportSettings.reading(value, problems: &problems)
        metricsExport = MetricsExportSettings.reading(value, problems: &problems)
        pushServices = PushServiceSettings.reading(value, cleartext: cleartext, problems: &problems)
        if !problems.isEmpty { throw ConfigurationError(problems: problems) }
    }

    /// Whether `host` names this machine only.
    public static func isLoopback(_ host: String) -> Bool { CleartextPolicy.isLoopback(host) }

    /// swift-log's level names, and Cloud Logging's severities (`WARNING`, `DEBUG`, …) too.
    static func parseLevel(_ text: String) -> Logger.Level? {
        let lower = text.lowercased()
        if let level = Logger.Level(rawValue: lower) { return level }
        switch lower {
        case "warn": return .warning
        case "default": return .info
        case "alert", "emergency": return .critical
        default: return nil
        }
    }
}

public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public var problems: [String]
    public var description: String { "invalid configuration:\n" + problems.map { "  - \($0)" }.joined(separator: "\n") }
}
