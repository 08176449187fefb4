import AsyncHTTPClient
import FirestoreEvents
import FirestoreModel
import Foundation
import HeraldRuntime
import HeraldTesting
import Hummingbird
import Synchronization
import Testing
import WireFormats

/// Spans over OTLP: a function with `OTEL_EXPORTER_OTLP_ENDPOINT` set exports one server span per
/// event, continuing Eventarc's `traceparent`, and a client span per call to Firestore and FCM under
/// it; the calls carry those spans' ids. The exports are decoded with OpenTelemetry's own protobuf
/// definitions (PyPI's opentelemetry-proto), not by Herald's code.
@Suite struct TracesTests {
    static let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let callerSpan = "00f067aa0ba902b7"

    /// A new message's `created` event as Eventarc delivers it, in the caller's trace `traceID` (sampled or not).
    static func tracedEvent(_ world: DevWorld, _ id: String, traceID: String = traceID, sampled: Bool = true) async throws -> EventRequest {
        var event = try world.created(try await world.message("m-\(id)"), id: "evt-\(id)")
        event.headers["traceparent"] = "00-\(traceID)-\(callerSpan)-\(sampled ? "01" : "00")"
        return event
    }

    /// What a collector was sent.
    final class Exports: Sendable {
        let list = Mutex<[(body: String, apiKey: String?, contentType: String?)]>([])
    }

    /// A collector that keeps what it is sent.
    static func collector(_ received: Exports, path: String = "/v1/traces") -> Router<BasicRequestContext> {
        let router = Router()
        router.post(RouterPath(path)) { request, _ in
            let body = try await request.body.collect(upTo: 8 << 20)
            let header = { (name: String) in request.headers.first { $0.name.canonicalName == name }?.value }
            received.list.withLock { $0.append((String(buffer: body), header("x-api-key"), header("content-type"))) }
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: .init(string: "{}")))
        }
        return router
    }

    @Test func anEventIsAServerSpanContinuingEventarcsTraceWithASpanPerCall() async throws {
        let python = try await PythonReference.forTest(importing: "opentelemetry.proto")
        let world = try await DevWorld.start(fcmOnly: true)
        defer { world.dev.kill() }
        let received = Exports()
        try await withTestHTTPServer(Self.collector(received)) { port in
            var environment = world.dev.functionEnvironment()
            environment["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://127.0.0.1:\(port)"
            environment["OTEL_EXPORTER_OTLP_HEADERS"] = "x-api-key=k%20ey-s3cret"
            let function = try await FunctionUnderTest.start("onMessageCreated", environment: environment)
            defer { function.stop() }
            #expect(try await function.post(try await Self.tracedEvent(world, "traced")).status == 200)
            // An unsampled trace is carried on but not recorded.
            let unsampled = try await Self.tracedEvent(world, "unsampled", traceID: "11111111111111111111111111111111", sampled: false)
            #expect(try await function.post(unsampled).status == 200)

            var spans: [JSONValue] = []
            for _ in 0..<100 {
                let bodies = received.list.withLock { $0.map(\.body) }
                let decoded = try await ProcessRunner.run(
                    python, [TestPaths.packageRoot.appendingPathComponent("Tests/Python/otlp_check.py").path],
                    stdin: Data(JSONValue.array(bodies.map { .string($0) }).serialized().utf8))
                #expect(decoded.status == 0, "\(decoded.stderr)")
                spans = try JSONValue(parsing: decoded.stdout).arrayValue ?? []
                // The event's span ends after its calls', so once it is there, they are too.
                if spans.contains(where: { $0["kind"] == "SPAN_KIND_SERVER" }) { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            let exports = received.list.withLock { $0 }
            #expect(exports.allSatisfy { $0.apiKey == "k ey-s3cret" && $0.contentType == "application/json" })

            let server = try #require(spans.first { $0["kind"] == "SPAN_KIND_SERVER" }, "\(spans)")
            #expect(server["name"] == "onMessageCreated event" && server["service"] == "onMessageCreated")
            #expect(server["traceId"] == .string(Self.traceID) && server["parentSpanId"] == .string(Self.callerSpan))
            #expect(server["attributes"]?["cloudevents.event_id"] == "evt-traced")
            #expect(server["attributes"]?["herald.outcome"] == "applied")
            #expect(server["attributes"]?["herald.document"] == "conversations/family/messages/m-traced")
            let calls = spans.filter { $0["kind"] == "SPAN_KIND_CLIENT" }
            #expect(spans.allSatisfy { $0["traceId"] == .string(Self.traceID) }, "the unsampled event's spans were exported: \(spans)")
            #expect(calls.allSatisfy { $0["parentSpanId"] == server["spanId"] })
            let names = calls.compactMap { $0["name"]?.stringValue }
            #expect(names.filter { $0.hasSuffix("messages:send") }.count == 3, "\(names)")
            #expect(names.contains { $0.hasSuffix("documents:commit") } && names.contains { $0.hasSuffix("documents:batchGet") }, "\(names)")
            #expect(calls.allSatisfy { $0["attributes"]?["http.response.status_code"] == 200 })

            // What the calls carried: the local cloud recorded each push's trace, and the sends' span ids are the pushes'.
            let pushes = try await world.dev.pushes().filter { $0["message"]?["data"]?["messageId"] == "m-traced" }
            #expect(pushes.count == 3 && pushes.allSatisfy { $0["traceId"] == .string(Self.traceID) }, "\(pushes)")
            #expect(!function.output.contains("s3cret"))
        }
    }

    /// A collector that is not there costs the events nothing: they are answered, the export failure
    /// is said once, and the key it would have sent is not in the log.
    @Test func aCollectorThatIsDownDoesNotHoldAnEvent() async throws {
        let world = try await DevWorld.start(fcmOnly: true)
        defer { world.dev.kill() }
        var environment = world.dev.functionEnvironment()
        environment["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = "http://127.0.0.1:\(try freeLoopbackPort())/v1/traces"
        environment["OTEL_EXPORTER_OTLP_HEADERS"] = "authorization=Bearer%20s3cret"
        let function = try await FunctionUnderTest.start("onMessageCreated", environment: environment)
        defer { function.stop() }
        func post(_ i: Int) async throws {
            let answer = try await function.post(try await Self.tracedEvent(world, "down-\(i)"))
            #expect(answer.status == 200 && answer.elapsed < .seconds(4), "\(answer.status) in \(answer.elapsed): an export takes 5 s to fail here")
        }
        func warnings() -> Int { function.output.split(separator: "\n").filter { $0.contains("cannot export") }.count }
        try await post(0)
        // A refused connection is tried again until the export's 5 s timeout: then it is said.
        for _ in 0..<150 where warnings() == 0 { try await Task.sleep(for: .milliseconds(100)) }
        #expect(warnings() == 1, "\(function.output.suffix(2000))")
        try await post(1)
        try await post(2)
        try await Task.sleep(for: .seconds(7))
        #expect(warnings() == 1, "said again: \(function.output.suffix(2000))")
        #expect(!function.output.contains("s3cret"))
    }

    /// A collector started beside the function (a Cloud Run sidecar) may answer 503 at first: the
    /// spans are kept and sent once it takes them, none lost, none twice.
    @Test func spansWaitForACollectorThatIsNotReadyYet() async throws {
        let world = try await DevWorld.start(fcmOnly: true)
        defer { world.dev.kill() }
        let received = Exports()
        let refusals = Mutex(0)
        let router = Router()
        router.post("/v1/traces") { request, _ in
            let body = try await request.body.collect(upTo: 8 << 20)
            let refuse = refusals.withLock { count in
                count += 1
                return count <= 2
            }
            if refuse { return Response(status: .serviceUnavailable) }
            received.list.withLock { $0.append((String(buffer: body), nil, nil)) }
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: .init(string: "{}")))
        }
        try await withTestHTTPServer(router) { port in
            var environment = world.dev.functionEnvironment()
            environment["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://127.0.0.1:\(port)"
            let function = try await FunctionUnderTest.start("onMessageCreated", environment: environment)
            defer { function.stop() }
            #expect(try await function.post(try await Self.tracedEvent(world, "early")).status == 200)
            var servers = 0
            for _ in 0..<100 where servers == 0 {
                try await Task.sleep(for: .milliseconds(100))
                servers = received.list.withLock { $0.map { $0.body.components(separatedBy: "\"kind\":2").count - 1 }.reduce(0, +) }
            }
            #expect(servers == 1 && refusals.withLock { $0 } >= 3, "\(servers) server spans after \(refusals.withLock { $0 }) tries")
            #expect(function.output.split(separator: "\n").filter { $0.contains("cannot export") }.count == 1)
        }
    }
}
