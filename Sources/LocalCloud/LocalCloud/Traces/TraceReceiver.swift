import EmbeddedFirestore
import FirestoreModel
import Foundation
import WireFormats

/// An OpenTelemetry collector's trace endpoint, as `herald dev`'s functions export to it
/// (`OTEL_EXPORTER_OTLP_ENDPOINT=<local cloud>/herald/otlp`): OTLP/HTTP with JSON bodies
/// (`POST /herald/otlp/v1/traces`). Spans are kept in the local database, the newest
/// `capacity`, for the console to show under the event whose trace they continue.
struct TraceReceiver: Sendable {
    let database: LocalDatabase
    var capacity = 50_000
    static let maximumSpansPerRequest = 10_000

    /// Takes an `ExportTraceServiceRequest`; answers an `ExportTraceServiceResponse` (empty: all kept).
    func export(_ request: LocalRequest) async throws(LocalAPIError) -> LocalResponse {
        // A body that is not JSON (OTLP/HTTP protobuf) was refused with 415 by RequestGuard already.
        let spans = try Self.spans(in: try request.json())
        let capacity = capacity
        try await database.write { db in
            for span in spans {
                try db.execute(
                    sql: """
                        INSERT INTO spans (trace_id, span_id, parent_span_id, service, name, kind, start_ns, end_ns, status, attributes)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        span.traceID, span.spanID, span.parentSpanID, span.service, span.name, span.kind, span.start, span.end, span.status,
                        span.attributes.serialized(),
                    ])
            }
            try db.execute(sql: "DELETE FROM spans WHERE id <= (SELECT MAX(id) FROM spans) - ?", arguments: [capacity])
        }
        return LocalResponse(json: .object([:]))
    }

    /// Every span kept of `traceID`, in the order they started.
    func spans(trace traceID: String) async throws(LocalAPIError) -> [JSONValue] {
        try await database.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM spans WHERE trace_id = ? ORDER BY start_ns, id LIMIT 1000", arguments: [traceID.lowercased()]
            ).map { row in
                let parent: String? = row["parent_span_id"]
                return [
                    "traceId": .string(row["trace_id"]), "spanId": .string(row["span_id"]), "parentSpanId": parent.map { .string($0) } ?? .null,
                    "service": .string(row["service"]), "name": .string(row["name"]), "kind": .string(row["kind"]),
                    "startTimeUnixNano": .string(String(row["start_ns"] as Int64)), "endTimeUnixNano": .string(String(row["end_ns"] as Int64)),
                    "status": .string(row["status"]), "attributes": (try? JSONValue(parsing: row["attributes"] as String)) ?? .object([:]),
                ]
            }
        }
    }

    struct ReceivedSpan {
        var traceID, spanID: String
        var parentSpanID: String?
        var service, name, kind, status: String
        var start, end: Int64
        var attributes: JSONValue
    }

    /// The spans of an OTLP JSON request; refuses the whole request when one is malformed.
    static func spans(in body: JSONValue) throws(LocalAPIError) -> [ReceivedSpan] {
        var spans: [ReceivedSpan] = []
        for resourceSpans in body.member("resourceSpans")?.arrayValue ?? [] {
            let resource = attributes(resourceSpans.member("resource")?.member("attributes"))
            let service = resource.member("service.name")?.stringValue ?? "unknown"
            for scopeSpans in resourceSpans.member("scopeSpans")?.arrayValue ?? [] {
                for span in scopeSpans.member("spans")?.arrayValue ?? [] {
                    guard spans.count < maximumSpansPerRequest else {
                        throw .invalidArgument("more than \(maximumSpansPerRequest) spans in one request")
                    }
                    spans.append(try received(span, service: service))
                }
            }
        }
        return spans
    }

    static func received(_ span: JSONValue, service: String) throws(LocalAPIError) -> ReceivedSpan {
        func id(_ key: String, length: Int) -> String? {
            guard let text = span.member(key)?.stringValue, text.count == length, text.allSatisfy(\.isHexDigit),
                text.contains(where: { $0 != "0" })
            else { return nil }
            return text.lowercased()
        }
        func nanos(_ key: String) -> Int64? { span.member(key).flatMap { $0.int64Value } }
        guard let traceID = id("traceId", length: 32), let spanID = id("spanId", length: 16) else {
            throw .invalidArgument("a span needs traceId (32 hex digits) and spanId (16 hex digits)")
        }
        guard let start = nanos("startTimeUnixNano"), let end = nanos("endTimeUnixNano"), start >= 0, end >= start else {
            throw .invalidArgument("span \(spanID): startTimeUnixNano and endTimeUnixNano must be times, the end not before the start")
        }
        let kinds = [1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"]
        let statuses = [1: "ok", 2: "error"]
        return ReceivedSpan(
            traceID: traceID, spanID: spanID, parentSpanID: id("parentSpanId", length: 16), service: String(service.prefix(200)),
            name: String((span.member("name")?.stringValue ?? "").prefix(500)),
            kind: kinds[Int(span.member("kind")?.int64Value ?? 0)] ?? "unspecified",
            status: statuses[Int(span.member("status")?.member("code")?.int64Value ?? 0)] ?? "unset",
            start: start, end: end, attributes: attributes(span.member("attributes")))
    }

    /// OTLP's `[{key, value: {stringValue|intValue|…}}]` as a plain JSON object.
    static func attributes(_ list: JSONValue?) -> JSONValue {
        var plain: [String: JSONValue] = [:]
        for item in (list?.arrayValue ?? []).prefix(128) {
            guard let key = item.member("key")?.stringValue, let value = item.member("value")?.objectValue, let first = value.first else { continue }
            plain[String(key.prefix(200))] = first.value
        }
        return .object(plain)
    }
}
