import WireFormats

/// OTLP's JSON encoding of an `ExportMetricsServiceRequest` (opentelemetry-proto
/// `collector/metrics/v1`), made from what a function serves at `/metrics`: counters become
/// cumulative monotonic sums (named without Prometheus's `_total`, which a collector adds back),
/// gauges gauges, histograms explicit-bucket histograms (Prometheus's cumulative buckets turned into
/// per-bucket counts). Every series keeps its labels as attributes.
public enum OTLPMetrics {
    public static func body(_ text: String, service: String, version: String, start: UInt64, now: UInt64) -> String {
        let (samples, kinds) = PrometheusText.parse(text)
        var out = #"{"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"#
        JSONValue.writeString(service, to: &out)
        out += #"}}]},"scopeMetrics":[{"scope":{"name":"herald","version":"#
        JSONValue.writeString(version, to: &out)
        out += #"},"metrics":["#
        let times = #""startTimeUnixNano":""# + String(start) + #"","timeUnixNano":""# + String(now) + "\""
        var first = true
        for (family, kind) in kinds.sorted(by: { $0.key < $1.key }) {
            let points: [String]
            switch kind {
            case .counter, .gauge, .untyped:
                points = samples.filter { $0.name == family }.map { sample in
                    "{" + attributes(sample.labels) + "," + times + #","asDouble":"# + number(sample.value) + "}"
                }
            case .histogram:
                points = histogramPoints(family, samples, times: times)
            case .summary:
                continue
            }
            guard !points.isEmpty else { continue }
            if !first { out += "," }
            first = false
            switch kind {
            case .counter:
                out += #"{"name":"# + quoted(family.hasSuffix("_total") ? String(family.dropLast(6)) : family)
                out += #","sum":{"aggregationTemporality":2,"isMonotonic":true,"dataPoints":["# + points.joined(separator: ",") + "]}}"
            case .histogram:
                out += #"{"name":"# + quoted(family) + (family.hasSuffix("_seconds") ? #","unit":"s""# : "")
                out += #","histogram":{"aggregationTemporality":2,"dataPoints":["# + points.joined(separator: ",") + "]}}"
            default:
                out += #"{"name":"# + quoted(family) + #","gauge":{"dataPoints":["# + points.joined(separator: ",") + "]}}"
            }
        }
        out += "]}]}]}"
        return out
    }

    /// One point per series of a histogram family: its `_bucket`s (by `le`), `_sum` and `_count`.
    static func histogramPoints(_ family: String, _ samples: [PrometheusText.Sample], times: String) -> [String] {
        struct Series {
            var labels: [(String, String)]
            var buckets: [(bound: Double, cumulative: Double)] = []
            var sum = 0.0
            var count = 0.0
        }
        var series: [String: Series] = [:]
        var order: [String] = []
        func entry(_ labels: [(String, String)], _ update: (inout Series) -> Void) {
            let key = labels.map { $0.0 + "\u{1}" + $0.1 }.joined(separator: "\u{2}")
            if series[key] == nil {
                series[key] = Series(labels: labels)
                order.append(key)
            }
            update(&series[key]!)
        }
        for sample in samples {
            switch sample.name {
            case family + "_bucket":
                guard let bound = sample.label("le").flatMap({ $0 == "+Inf" ? Double.infinity : Double($0) }) else { continue }
                entry(sample.labels.filter { $0.0 != "le" }) { $0.buckets.append((bound, sample.value)) }
            case family + "_sum": entry(sample.labels) { $0.sum = sample.value }
            case family + "_count": entry(sample.labels) { $0.count = sample.value }
            default: continue
            }
        }
        return order.compactMap { series[$0] }.map { series in
            let buckets = series.buckets.sorted { $0.bound < $1.bound }
            var counts: [String] = []
            var previous = 0.0
            for bucket in buckets {
                counts.append("\"" + String(UInt64(max(0, bucket.cumulative - previous))) + "\"")
                previous = bucket.cumulative
            }
            let bounds = buckets.filter { $0.bound.isFinite }.map { number($0.bound) }
            if buckets.last?.bound.isFinite ?? true { counts.append("\"" + String(UInt64(max(0, series.count - previous))) + "\"") }
            return "{" + attributes(series.labels) + "," + times + #","count":""# + String(UInt64(series.count)) + #"","sum":"#
                + number(series.sum) + #","bucketCounts":["# + counts.joined(separator: ",") + #"],"explicitBounds":["#
                + bounds.joined(separator: ",") + "]}"
        }
    }

    static func attributes(_ labels: [(String, String)]) -> String {
        #""attributes":["# + labels.map { #"{"key":"# + quoted($0.0) + #","value":{"stringValue":"# + quoted($0.1) + "}}" }.joined(separator: ",") + "]"
    }

    static func quoted(_ text: String) -> String {
        var out = ""
        JSONValue.writeString(text, to: &out)
        return out
    }

    /// A JSON number (OTLP's JSON takes no NaN or infinities; those are left as 0).
    static func number(_ value: Double) -> String {
        guard value.isFinite else { return "0" }
        return value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
