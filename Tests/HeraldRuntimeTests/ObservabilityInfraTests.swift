import ChatFunctions
import Foundation
import HeraldTesting
import Testing

/// What Infra/ wires for operators: each function's spans and metrics go through the collector beside
/// it to Cloud Trace and Managed Service for Prometheus, and the dashboard and alerting policies ask
/// for figures the functions really export.
struct ObservabilityInfraTests {
    static let root = TestPaths.packageRoot
    static let functions = FunctionCatalog.names

    @Test func theDryRunWiresTheCollectorItsSecretAndTheMonitoring() async throws {
        let channel = "projects/herald-demo/notificationChannels/42"
        let (status, run, stderr) = try await InfraTests().dryRun(["herald-demo", "europe-west1", "--notification-channel", channel, "--dry-run"])
        defer { try? FileManager.default.removeItem(at: run.rendered) }
        #expect(status == 0, "\(stderr)")
        // The collector's configuration is in Secret Manager (a version only when it changed) before any service mounts it.
        let secret = try #require(run.index("secrets create herald-otel-collector"))
        let version = try #require(run.index("secrets versions add herald-otel-collector", "cmp -s", "Infra/observability/collector.yaml"))
        let services = try #require(run.index("run services replace"))
        #expect(secret < version && version < services)
        for function in Self.functions {
            let account = "herald-\(function.lowercased())@herald-demo.iam.gserviceaccount.com"
            for role in ["roles/monitoring.metricWriter", "roles/cloudtrace.agent"] {
                #expect(run.index("projects add-iam-policy-binding", account, role) != nil, "\(function) \(role)")
            }
            #expect(run.index("secrets add-iam-policy-binding herald-otel-collector", account, "roles/secretmanager.secretAccessor") != nil)
        }
        // The dashboard and every policy, updated when they exist, after the scheduler's jobs; the alerts notify the channel.
        let jobs = try #require(run.index("scheduler jobs", "herald-token-cleanup"))
        let dashboard = try #require(run.index("monitoring dashboards create --config-from-file=", "observability/dashboard.json"))
        #expect(jobs < dashboard)
        let policies = run.all("alpha monitoring policies create --policy-from-file=")
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent("Infra/observability/alerts").path)
        #expect(policies.count == files.count && files.count >= 4)
        #expect(policies.allSatisfy { $0.contains("monitoring policies update POLICIES_") && $0.contains("--notification-channels=\(channel)") })
    }

    /// The manifests, the collector's configuration and the functions' settings name the same ports.
    @Test func theManifestsAndTheCollectorAgreeOnPortsAndSecret() throws {
        let collector = try String(contentsOf: Self.root.appendingPathComponent("Infra/observability/collector.yaml"), encoding: .utf8)
        #expect(collector.contains("endpoint: localhost:4318") && collector.contains(#"targets: ["localhost:9464"]"#))
        #expect(collector.contains("exporters: [googlecloud]") && collector.contains("exporters: [googlemanagedprometheus]"))
        for function in Self.functions {
            let manifest = try String(contentsOf: Self.root.appendingPathComponent("Infra/cloudrun/\(function).yaml"), encoding: .utf8)
            #expect(manifest.contains("- name: OTEL_EXPORTER_OTLP_ENDPOINT\n              value: http://localhost:4318\n"), "\(function)")
            #expect(manifest.contains("- name: HERALD_METRICS_PORT\n              value: \"9464\"\n"), "\(function)")
            #expect(manifest.contains("secretName: herald-otel-collector") && manifest.contains("/etc/otelcol-google"), "\(function)")
            #expect(manifest.contains("otelcol-google:") && manifest.contains("port: 13133"), "\(function)")
        }
    }

    /// Every series the dashboard and the alerts query is one the functions export (a renamed metric
    /// would leave a panel empty and an alert silent).
    @Test func theDashboardAndAlertsQueryMetricsTheFunctionsExport() throws {
        let source = try String(
            contentsOf: Self.root.appendingPathComponent("Sources/Runtime/HeraldRuntime/Observability/RuntimeMetrics.swift"), encoding: .utf8)
        var exported = Set(source.matches(of: #/"(herald_[a-z_]+)"/#).map { String($0.1) })
        // Per-API series: `herald_\(api)_requests_total` for the APIs the runtime observes.
        for template in source.matches(of: #/"herald_\\\((?:api|service)\)_([a-z_]+)"/#).map({ String($0.1) }) {
            for api in ["firestore", "fcm", "expo", "apns"] { exported.insert("herald_\(api)_\(template)") }
        }
        #expect(exported.contains("herald_events_total") && exported.contains("herald_firestore_request_duration_seconds"), "\(exported)")
        let directory = Self.root.appendingPathComponent("Infra/observability")
        let files =
            ["dashboard.json"] + (try FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("alerts").path)).map { "alerts/\($0)" }
        var queried: Set<String> = []
        for file in files {
            let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            queried.formUnion(text.matches(of: #/herald_[a-z_]+/#).map { String($0.0) })
        }
        let unknown = queried.filter { name in
            let base = ["_bucket", "_count", "_sum"].reduce(name) { $0.hasSuffix($1) ? String($0.dropLast($1.count)) : $0 }
            return !exported.contains(base)
        }
        #expect(queried.count >= 8 && unknown.isEmpty, "queried but not exported: \(unknown.sorted())")
    }
}
