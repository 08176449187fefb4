import FirestoreModel
import Tracing

/// OTLP's JSON encoding of an `ExportTraceServiceRequest` (opentelemetry-proto
/// `collector/trace/v1`), as OTLP/HTTP sends it to `/v1/traces` with `content-type:
/// application/json`: trace and span ids as hex, enums as integers, 64-bit integers as strings.
public enum OTLPTraces {
    public static func request(_ spans: [FinishedSpan], service: String, version: String) -> JSONValue {
        let resource: JSONValue = ["attributes": .array([attribute("service.name", value(.string(service)))])]
        let scope: JSONValue = ["name": "herald", "version": .string(version)]
        return ["resourceSpans": [["resource": resource, "scopeSpans": [["scope": scope, "spans": .array(spans.map(span))]]]]]
    }

    static func span(_ span: FinishedSpan) -> JSONValue {
        var fields: [String: JSONValue] = [
            "traceId": .string(span.context.traceID), "spanId": .string(span.context.spanID), "name": .string(span.name),
            "kind": .number(String(kind(span.kind))), "flags": .number(String(span.context.sampled ? 1 : 0)),
            "startTimeUnixNano": .string(String(span.start)), "endTimeUnixNano": .string(String(span.end)),
            "attributes": attributes(span.attributes),
        ]
        if let parent = span.parentSpanID { fields["parentSpanId"] = .string(parent) }
        if let status = span.status {
            var encoded: [String: JSONValue] = ["code": .number(status.code == .ok ? "1" : "2")]
            if let message = status.message { encoded["message"] = .string(message) }
            fields["status"] = .object(encoded)
        }
        if !span.events.isEmpty {
            fields["events"] = .array(
                span.events.map {
                    ["name": .string($0.name), "timeUnixNano": .string(String($0.nanosecondsSinceEpoch)), "attributes": attributes($0.attributes)]
                })
        }
        return .object(fields)
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

    static func attributes(_ attributes: SpanAttributes) -> JSONValue {
        var encoded: [(String, JSONValue)] = []
        attributes.forEach { key, value in encoded.append((key, self.value(value))) }
        return .array(encoded.sorted { $0.0 < $1.0 }.map { attribute($0.0, $0.1) })
    }

    static func attribute(_ key: String, _ value: JSONValue) -> JSONValue { ["key": .string(key), "value": value] }

    /// opentelemetry-proto's `AnyValue`.
    static func value(_ value: SpanAttribute) -> JSONValue {
        switch value {
        case .int32(let v): ["intValue": .string(String(v))]
        case .int64(let v): ["intValue": .string(String(v))]
        case .double(let v): ["doubleValue": .number(v.isFinite ? "\(v)" : "0")]
        case .bool(let v): ["boolValue": .bool(v)]
        case .string(let v): ["stringValue": .string(v)]
        case .int32Array(let v): array(v.map { .int32($0) })
        case .int64Array(let v): array(v.map { .int64($0) })
        case .doubleArray(let v): array(v.map { .double($0) })
        case .boolArray(let v): array(v.map { .bool($0) })
        case .stringArray(let v): array(v.map { .string($0) })
        case .stringConvertibleArray(let v): array(v.map { .string($0.description) })
        case .stringConvertible(let v): ["stringValue": .string(v.description)]
        default: ["stringValue": .string("\(value)")]
        }
    }

    static func array(_ values: [SpanAttribute]) -> JSONValue { ["arrayValue": ["values": .array(values.map(value))]] }
}
