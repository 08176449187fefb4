import AsyncHTTPClient
import FirestoreModel
import Foundation
import GoogleClients
import HeraldTesting
import NIOCore
import NIOHTTP1
import Telemetry
import Testing
import Tracing
import WireFormats

/// The local cloud as an OpenTelemetry collector (`POST /herald/otlp/v1/traces`, OTLP/HTTP JSON):
/// what Herald's own exporter sends is kept and listed by trace; what is malformed is refused whole.
struct TraceReceiverTests {
    static func post(_ base: String, _ body: String, contentType: String = "application/json") async throws -> (status: Int, body: String) {
        var request = HTTPClientRequest(url: "\(base)/herald/otlp/v1/traces")
        request.method = .POST
        request.headers.add(name: "content-type", value: contentType)
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        return (Int(response.status.code), String(buffer: try await response.body.collect(upTo: 1 << 20)))
    }

    @Test func spansHeraldExportsAreKeptByTraceAndMalformedOnesRefused() async throws {
        try await withLocalCloud { local in
            let recorder = SpanRecorder()
            let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
            await OutboundTrace.handling("onMessageCreated event", incoming: traceparent, recorder: recorder) { span in
                span?.attributes["herald.outcome"] = "applied"
                let call = recorder.startSpan("POST firestore documents:commit", ofKind: .client)
                call.setStatus(.init(code: .error, message: "HTTP 503"))
                call.end()
            }
            let body = OTLPTraces.body(recorder.take().spans, service: "onMessageCreated", version: "test")
            let answer = try await Self.post(local.baseURL, body)
            #expect(answer.status == 200 && answer.body == "{}", "\(answer)")

            let listed = try JSONValue(
                parsing: Array(try await HTTPClient.shared.get("\(local.baseURL)/herald/traces/4bf92f3577b34da6a3ce929d0e0e4736").body.utf8))
            let spans = try #require(listed["spans"]?.arrayValue)
            #expect(spans.count == 2)
            let server = try #require(spans.first { $0["kind"] == "server" })
            let client = try #require(spans.first { $0["kind"] == "client" })
            #expect(server["parentSpanId"] == "00f067aa0ba902b7" && server["service"] == "onMessageCreated")
            #expect(server["attributes"]?["herald.outcome"] == "applied")
            #expect(client["parentSpanId"] == server["spanId"] && client["status"] == "error")

            for (bad, reason) in [
                (#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"xyz","spanId":"00f067aa0ba902b7"}]}]}]}"#, "traceId"),
                (
                    #"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7","startTimeUnixNano":"9","endTimeUnixNano":"3"}]}]}]}"#,
                    "not before the start"
                ),
                ("{", "Invalid JSON"),
            ] {
                let refused = try await Self.post(local.baseURL, bad)
                #expect(refused.status == 400 && refused.body.contains(reason), "\(refused)")
            }
            let protobuf = try await Self.post(local.baseURL, "\u{0A}", contentType: "application/x-protobuf")
            #expect(protobuf.status == 415 && protobuf.body.contains("application/json"), "\(protobuf)")
            let after = try JSONValue(
                parsing: Array(try await HTTPClient.shared.get("\(local.baseURL)/herald/traces/4bf92f3577b34da6a3ce929d0e0e4736").body.utf8))
            #expect(after["spans"]?.arrayValue?.count == 2, "a refused request keeps none of its spans")
        }
    }
}
