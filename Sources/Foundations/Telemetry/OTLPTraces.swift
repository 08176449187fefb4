import Tracing
import WireFormats

/// OTLP's JSON encoding of an `ExportTraceServiceRequest` (opentelemetry-proto
/// `collector/trace/v1`), as OTLP/HTTP sends it to `/v1/traces` with `content-type:
/// application/json`: trace and span ids as hex, enums as integers, 64-bit integers as strings.
/// Written straight into the text (no tree of values): a busy function encodes thousands of spans a
/// second.
public enum OTLPTraces {
    public static func body(_ spans: [FinishedSpan], service: String, version: String) -> String {
        var out = #"{"resourceSpans":[{"resource":{"attributes":["#
        attribute("service.name", .string(service), to: &out)
        out += #"]},"scopeSpans":[{"scope":{"name":"herald","version":"#
        JSONValue.writeString(version, to: &out)
        out += #"},"spans":["#
        for (index, span) in spans.enumerated() {
            if index > 0 { out += "," }
            write(span, to: &out)
        }
        out += "]}]}]}"
        return out
    }

    static func write(_ span: FinishedSpan, to out: inout String) {
        out += #"{"traceId":""# + span.context.traceID + #"","spanId":""# + span.context.spanID + "\""
        if let parent = span.parentSpanID { out += #","parentSpanId":""# + parent + "\"" }
        out += #","flags":"# + (span.context.sampled ? "1" : "0") + #","name":"#
        JSONValue.writeString(span.name, to: &out)
        out += #","kind":"# + String(kind(span.kind))
        out += #","startTimeUnixNano":""# + String(span.start) + #"","endTimeUnixNano":""# + String(span.end) + "\""
        out += #","attributes":"#
        write(span.attributes, to: &out)
        if let status = span.status {
            out += #","status":{"code":"# + (status.code == .ok ? "1" : "2")
            if let message = status.message {
                out += #","message":"#
                JSONValue.writeString(message, to: &out)
            }
            out += "}"
        }
        if !span.events.isEmpty {
            out += #","events":["#
            for (index, event) in span.events.enumerated() {
                if index > 0 { out += "," }
                out += #"{"name":"#
                JSONValue.writeString(event.name, to: &out)
                out += #","timeUnixNano":""# + String(event.nanosecondsSinceEpoch) + #"","attributes":"#
                write(event.attributes, to: &out)
                out += "}"
            }
            out += "]"
        }
        out += "}"
    }

    /// opentelemetry-proto's `Span.SpanKind`.
    static func kind(_ kind: SpanKind) -> Int {
        switch kind {
        case .internal: 1
        case .server: 2
        case .client: 3
        case .producer: 4
        case .consumer: 5
        }
    }

    static func write(_ attributes: SpanAttributes, to out: inout String) {
        out += "["
        var first = true
        // swift-format-ignore: ReplaceForEachWithForLoop
        // (SpanAttributes is not a Sequence: forEach is all it offers.)
        attributes.forEach { key, value in
            if !first { out += "," }
            first = false
            attribute(key, value, to: &out)
        }
        out += "]"
    }

    static func attribute(_ key: String, _ value: SpanAttribute, to out: inout String) {
        out += #"{"key":"#
        JSONValue.writeString(key, to: &out)
        out += #","value":"#
        write(value, to: &out)
        out += "}"
    }

    /// opentelemetry-proto's `AnyValue`.
    static func write(_ value: SpanAttribute, to out: inout String) {
        switch value {
        case .int32(let v): out += #"{"intValue":""# + String(v) + #""}"#
        case .int64(let v): out += #"{"intValue":""# + String(v) + #""}"#
        case .double(let v): out += #"{"doubleValue":"# + (v.isFinite ? "\(v)" : "0") + "}"
        case .bool(let v): out += #"{"boolValue":"# + (v ? "true" : "false") + "}"
        case .string(let v):
            out += #"{"stringValue":"#
            JSONValue.writeString(v, to: &out)
            out += "}"
        case .int32Array(let v): array(v.map { .int32($0) }, to: &out)
        case .int64Array(let v): array(v.map { .int64($0) }, to: &out)
        case .doubleArray(let v): array(v.map { .double($0) }, to: &out)
        case .boolArray(let v): array(v.map { .bool($0) }, to: &out)
        case .stringArray(let v): array(v.map { .string($0) }, to: &out)
        case .stringConvertibleArray(let v): array(v.map { .string($0.description) }, to: &out)
        case .stringConvertible(let v): write(.string(v.description), to: &out)
        default: write(.string("\(value)"), to: &out)
        }
    }

    static func array(_ values: [SpanAttribute], to out: inout String) {
        out += #"{"arrayValue":{"values":["#
        for (index, value) in values.enumerated() {
            if index > 0 { out += "," }
            write(value, to: &out)
        }
        out += "]}}"
    }
}
