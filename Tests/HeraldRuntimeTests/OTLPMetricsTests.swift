import FirestoreModel
import Foundation
import Testing
import WireFormats

@testable import HeraldRuntime
@testable import Telemetry

/// `/metrics` text read back and turned into OTLP: the parts a collector relies on, checked without a
/// process (MetricsTests checks a running function's exports with OpenTelemetry's own definitions).
@Suite struct OTLPMetricsTests {
    static let text = """
        # TYPE herald_events_total counter
        herald_events_total{function="f",outcome="applied"} 3
        herald_events_total{function="f",outcome="duplicate"} 1
        # TYPE herald_events_in_flight gauge
        herald_events_in_flight{function="f"} 0.0
        # TYPE herald_event_duration_seconds histogram
        herald_event_duration_seconds_bucket{function="f",outcome="applied",le="0.005"} 1
        herald_event_duration_seconds_bucket{function="f",outcome="applied",le="0.01"} 1
        herald_event_duration_seconds_bucket{function="f",outcome="applied",le="0.025"} 3
        herald_event_duration_seconds_bucket{function="f",outcome="applied",le="+Inf"} 4
        herald_event_duration_seconds_sum{function="f",outcome="applied"} 0.5
        herald_event_duration_seconds_count{function="f",outcome="applied"} 4
        """

    @Test func labelsAreReadWithTheirEscapes() {
        let (samples, kinds) = PrometheusText.parse(#"# TYPE x counter"# + "\n" + #"x{a="q\"uote",b="back\\slash",c="new\nline"} 2"# + "\nbare 1.5\n+Inf\n")
        #expect(kinds == ["x": .counter])
        #expect(samples.count == 2)
        #expect(samples.first?.label("a") == "q\"uote" && samples.first?.label("b") == "back\\slash" && samples.first?.label("c") == "new\nline")
        #expect(samples.last == PrometheusText.Sample(name: "bare", labels: [], value: 1.5))
    }

    @Test func countersBecomeSumsAndCumulativeBucketsBecomePerBucketCounts() throws {
        let body = try JSONValue(parsing: OTLPMetrics.body(Self.text, service: "f", version: "1", start: 10, now: 20))
        let metrics = try #require(body["resourceMetrics"]?.arrayValue?.first?["scopeMetrics"]?.arrayValue?.first?["metrics"]?.arrayValue)
        let byName = Dictionary(uniqueKeysWithValues: metrics.compactMap { metric in metric["name"]?.stringValue.map { ($0, metric) } })
        #expect(Set(byName.keys) == ["herald_events", "herald_events_in_flight", "herald_event_duration_seconds"])
        let sum = try #require(byName["herald_events"]?["sum"])
        #expect(sum["isMonotonic"] == true && sum["aggregationTemporality"] == 2 && sum["dataPoints"]?.arrayValue?.count == 2)
        let point = sum["dataPoints"]?.arrayValue?.first
        #expect(point?["startTimeUnixNano"] == "10" && point?["timeUnixNano"] == "20")
        let histogram = try #require(byName["herald_event_duration_seconds"]?["histogram"]?["dataPoints"]?.arrayValue?.first)
        #expect(histogram["bucketCounts"] == ["1", "0", "2", "1"] && histogram["explicitBounds"] == [.number("0.005"), .number("0.01"), .number("0.025")])
        #expect(histogram["count"] == "4" && byName["herald_event_duration_seconds"]?["unit"] == "s")
        #expect(histogram["attributes"] == [["key": "function", "value": ["stringValue": "f"]], ["key": "outcome", "value": ["stringValue": "applied"]]])
    }

    @Test func exportingIsOffUnlessAskedForAndBadSettingsAreNamed() throws {
        func settings(_ environment: [String: String]) -> (MetricsExportSettings?, [String]) {
            var problems: [String] = []
            return (MetricsExportSettings.reading({ environment[$0] }, problems: &problems), problems)
        }
        #expect(settings(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"]).0 == nil, "the general endpoint alone is for traces")
        let on = settings(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/", "OTEL_METRICS_EXPORTER": "otlp"])
        #expect(on.0?.target.endpoint == "http://c:4318/v1/metrics" && on.0?.interval == .seconds(60) && on.1.isEmpty)
        #expect(settings(["OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://c/m", "OTEL_METRIC_EXPORT_INTERVAL": "500"]).0?.interval == .milliseconds(500))
        #expect(settings(["OTEL_METRICS_EXPORTER": "otlp"]).1.contains { $0.contains("needs OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") })
        #expect(settings(["OTEL_METRICS_EXPORTER": "statsd"]).1.contains { $0.contains("otlp, prometheus or none") })
        #expect(settings(["OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://c/m", "OTEL_METRIC_EXPORT_INTERVAL": "soon"]).1.count == 1)
        #expect(settings(["OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://c/m", "OTEL_METRICS_EXPORTER": "none"]).0 == nil)
    }
}
