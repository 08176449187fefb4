import GoogleClients
import HeraldHTTPClient
import Logging
import Telemetry
import Tracing

/// Where metrics are pushed over OTLP, besides `GET /metrics`: on when `OTEL_METRICS_EXPORTER=otlp`
/// (then an endpoint is required) or when `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` is set, every
/// `OTEL_METRIC_EXPORT_INTERVAL` milliseconds (default 60,000). Unlike OpenTelemetry's SDKs, the
/// general `OTEL_EXPORTER_OTLP_ENDPOINT` alone does not turn it on: a collector that scrapes
/// `/metrics` (Infra's) would otherwise count everything twice.
public struct MetricsExportSettings: Sendable {
    public var target: OTLPEndpointSettings
    public var interval: Duration
    public var service: String?

    static func reading(_ value: (String) -> String?, problems: inout [String]) -> MetricsExportSettings? {
        let exporter = value("OTEL_METRICS_EXPORTER")?.lowercased()
        switch exporter {
        case "none", "prometheus": return nil
        case nil, "otlp": break
        case let other?:
            problems.append("OTEL_METRICS_EXPORTER must be otlp, prometheus or none, not \"\(other)\"")
            return nil
        }
        guard exporter == "otlp" || value("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") != nil else { return nil }
        guard let target = OTLPEndpointSettings.reading(signal: "metrics", value, problems: &problems) else {
            problems.append("OTEL_METRICS_EXPORTER=otlp needs OTEL_EXPORTER_OTLP_METRICS_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT")
            return nil
        }
        var interval = Duration.seconds(60)
        if let text = value("OTEL_METRIC_EXPORT_INTERVAL") {
            if let milliseconds = Int(text), (100...86_400_000).contains(milliseconds) {
                interval = .milliseconds(milliseconds)
            } else {
                problems.append("OTEL_METRIC_EXPORT_INTERVAL must be milliseconds from 100 to 86400000, not \"\(text)\"")
            }
        }
        return MetricsExportSettings(target: target, interval: interval, service: value("OTEL_SERVICE_NAME"))
    }
}

/// Pushes everything a function counts (`RuntimeMetrics`, the series `/metrics` serves) to an OTLP
/// collector: cumulative, every interval and once more at shutdown. An export that fails is not
/// queued: the next one carries the same totals.
public final class MetricsExporter: Sendable {
    let metrics: RuntimeMetrics
    let settings: MetricsExportSettings
    let service: String
    let sender: OTLPSender
    /// Cumulative series start when the process started counting.
    let start: UInt64

    public init(metrics: RuntimeMetrics, settings: MetricsExportSettings, service: String, httpClient: HTTPTransport = .shared, logger: Logger) {
        self.metrics = metrics
        self.settings = settings
        self.service = settings.service ?? service
        sender = OTLPSender(target: settings.target, what: "metrics", httpClient: httpClient, logger: logger)
        start = DefaultTracerClock.now.nanosecondsSinceEpoch
    }

    /// Exports every interval until cancelled.
    public func run() async {
        // Stopping cancels the sleep: the last export is the caller's, outside the cancelled task.
        while (try? await Task.sleep(for: settings.interval)) != nil {
            await export()
        }
    }

    public func export() async {
        let text = String(decoding: metrics.exposition(), as: UTF8.self)
        let body = OTLPMetrics.body(text, service: service, version: HeraldVersion.current, start: start, now: DefaultTracerClock.now.nanosecondsSinceEpoch)
        _ = await sender.send(body, describing: "metrics")
    }
}
