import AsyncHTTPClient
import FirestoreEvents
import FirestoreModel
import Foundation
import HeraldRuntime
import HeraldTesting
import NIOCore
import NIOHTTP1
import Supervision
import Synchronization
import Testing
import WireFormats

/// `GET /metrics` on a function's own port, after known work: the counts are exact.
@Suite struct MetricsTests {
    static func scrape(_ function: FunctionUnderTest) async throws -> (status: Int, text: String, contentType: String?) {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(function.port)/metrics"), timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), String(buffer: body), response.headers.first(name: "content-type"))
    }

    @Test func eventsPushesAndRequestsAreCountedExactly() async throws {
        let world = try await DevWorld.start(fcmOnly: true)
        defer { world.dev.kill() }
        let function = try await FunctionUnderTest.start("onMessageCreated", environment: world.dev.functionEnvironment())
        defer { function.stop() }
        var messages: [FirestoreDocument] = []
        for i in 0..<3 { messages.append(try await world.message("m-metrics-\(i)")) }
        for (i, message) in messages.enumerated() {
            let answer = try await function.post(try world.created(message, id: "evt-metrics-\(i)"))
            #expect(answer.status == 200, "\(answer.body)")
        }
        // Eventarc delivers the first again; a garbled body is refused.
        #expect(try await function.post(try world.created(messages[0], id: "evt-metrics-0")).status == 200)
        #expect(try await function.post(EventRequest(headers: ["content-type": "application/json"], body: Array("{".utf8))).status == 400)

        let scraped = try await Self.scrape(function)
        #expect(scraped.status == 200 && scraped.contentType?.hasPrefix("text/plain; version=0.0.4") == true)
        let samples = prometheusSamples(scraped.text)
        let events = #"herald_events_total{function="onMessageCreated",encoding="cloudevent-binary-protobuf",outcome="#
        #expect(samples[events + #""applied"}"#] == 3, "\(scraped.text)")
        #expect(samples[events + #""duplicate"}"#] == 1)
        #expect(samples[#"herald_events_total{function="onMessageCreated",encoding="unknown",outcome="refused"}"#] == 1)
        // Each message goes to Bob's phone and iPad and to Carol's phone, once.
        #expect(samples[#"herald_fcm_sends_total{function="onMessageCreated",result="sent"}"#] == 9)
        #expect(samples[#"herald_fcm_requests_total{function="onMessageCreated",method="send",status="200"}"#] == 9)
        #expect(samples[#"herald_events_in_flight{function="onMessageCreated"}"#] == 0)
        // Reads and commits by RPC and status; every request answered.
        let firestore = samples.filter { $0.key.hasPrefix("herald_firestore_requests_total{") }
        #expect(firestore.keys.contains { $0.contains(#"method="batchGet",status="200""#) }, "\(firestore)")
        #expect(firestore.keys.contains { $0.contains(#"method="commit",status="200""#) }, "\(firestore)")
        #expect(!firestore.keys.contains { $0.contains(#"status="none""#) })
        #expect(samples[#"herald_event_duration_seconds_count{function="onMessageCreated",outcome="applied"}"#] == 3)
    }

    /// `HERALD_METRICS_PORT`: the same figures on 127.0.0.1 without an identity token, for a collector
    /// in the same instance, while the service's own port still asks for one. SIGTERM still ends the
    /// function at once (the extra listener and the trace exporter stop with it).
    @Test func aLoopbackMetricsPortServesACollectorWithoutAToken() async throws {
        let world = try await DevWorld.start(fcmOnly: true)
        defer { world.dev.kill() }
        let port = try freeLoopbackPort()
        let metricsPort = try freeLoopbackPort()
        var environment = world.dev.functionEnvironment()
        environment["HERALD_REQUIRE_OIDC_AUDIENCE"] = "http://127.0.0.1:\(port)/"
        environment["HERALD_OIDC_JWKS_URL"] = "\(world.dev.base)/herald/oidc/jwks"
        environment["HERALD_METRICS_PORT"] = String(metricsPort)
        environment["OTEL_EXPORTER_OTLP_ENDPOINT"] = "\(world.dev.base)/herald/otlp"
        let function = try await FunctionUnderTest.start("onMessageCreated", environment: environment, port: port)
        let guarded = try await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/metrics"), timeout: .seconds(10))
        #expect(guarded.status == .unauthorized)
        // One event, from the local cloud's account as a trigger would send it.
        var tokenRequest = HTTPClientRequest(
            url: "\(world.dev.base)/computeMetadata/v1/instance/service-accounts/default/identity?audience=http://127.0.0.1:\(port)/")
        tokenRequest.headers.add(name: "Metadata-Flavor", value: "Google")
        let token = String(buffer: try await HTTPClient.shared.execute(tokenRequest, timeout: .seconds(10)).body.collect(upTo: 1 << 16))
        var event = try world.created(try await world.message("m-scraped"), id: "evt-scraped")
        event.headers["authorization"] = "Bearer \(token)"
        let answer = try await function.post(event)
        #expect(answer.status == 200, "\(answer.body) \(function.output.suffix(1000))")
        let open = try await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(metricsPort)/metrics"), timeout: .seconds(10))
        let text = String(buffer: try await open.body.collect(upTo: 1 << 20))
        #expect(
            open.status == .ok
                && text.contains("herald_events_total{function=\"onMessageCreated\",encoding=\"cloudevent-binary-protobuf\",outcome=\"applied\"} 1"),
            "\(text.prefix(500))")

        let clock = ContinuousClock()
        let started = clock.now
        #expect(await function.process.stop(grace: .seconds(10)) == .exited(0))
        #expect(clock.now - started < .seconds(5), "took \(clock.now - started) to stop")
    }

    /// `HERALD_METRICS=off`: nothing is counted and there is nothing to scrape.
    @Test func metricsOffServesNoMetrics() async throws {
        let world = try await DevWorld.start(fcmOnly: true)
        defer { world.dev.kill() }
        var environment = world.dev.functionEnvironment()
        environment["HERALD_METRICS"] = "off"
        let function = try await FunctionUnderTest.start("onMessageCreated", environment: environment)
        defer { function.stop() }
        #expect(try await function.post(try world.created(try await world.message("m-uncounted"), id: "evt-uncounted")).status == 200)
        #expect(try await Self.scrape(function).status == 404)
    }

    /// `OTEL_METRICS_EXPORTER=otlp`: the same counts pushed to a collector over OTLP/HTTP JSON, decoded
    /// with OpenTelemetry's own protobuf definitions (PyPI's opentelemetry-proto), and once more when
    /// the function stops.
    @Test func theCountsArePushedOverOTLP() async throws {
        let python = try await PythonReference.forTest(importing: "opentelemetry.proto")
        let world = try await DevWorld.start(fcmOnly: true)
        defer { world.dev.kill() }
        let received = TracesTests.Exports()
        try await withTestHTTPServer(TracesTests.collector(received, path: "/v1/metrics")) { port in
            var environment = world.dev.functionEnvironment()
            environment["OTEL_METRICS_EXPORTER"] = "otlp"
            environment["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://127.0.0.1:\(port)"
            environment["OTEL_TRACES_EXPORTER"] = "none"
            environment["OTEL_EXPORTER_OTLP_METRICS_HEADERS"] = "x-api-key=m3trics"
            environment["OTEL_METRIC_EXPORT_INTERVAL"] = "300"
            let function = try await FunctionUnderTest.start("onMessageCreated", environment: environment)
            defer { function.stop() }
            let messages = [try await world.message("m-otlp-0"), try await world.message("m-otlp-1")]
            for (i, message) in messages.enumerated() { #expect(try await function.post(try world.created(message, id: "evt-otlp-\(i)")).status == 200) }
            #expect(try await function.post(try world.created(messages[0], id: "evt-otlp-0")).status == 200)

            func points() async throws -> [JSONValue] {
                let bodies = received.list.withLock { $0.suffix(1).map(\.body) }
                let decoded = try await ProcessRunner.run(
                    python, [TestPaths.packageRoot.appendingPathComponent("Tests/Python/otlp_metrics_check.py").path],
                    stdin: Data(JSONValue.array(bodies.map { .string($0) }).serialized().utf8))
                #expect(decoded.status == 0, "\(decoded.stderr)")
                return try JSONValue(parsing: decoded.stdout).arrayValue ?? []
            }
            func number(_ value: JSONValue?) -> Double? { if case .number(let text)? = value { Double(text) } else { nil } }
            func events(_ points: [JSONValue], _ outcome: String) -> Double? {
                number(points.first { $0["name"] == "herald_events" && $0["attributes"]?["outcome"] == .string(outcome) }?["value"])
            }
            var latest: [JSONValue] = []
            for _ in 0..<100 {
                latest = try await points()
                if events(latest, "duplicate") == 1 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            let applied = try #require(latest.first { $0["name"] == "herald_events" && $0["attributes"]?["outcome"] == "applied" }, "\(latest)")
            #expect(number(applied["value"]) == 2 && applied["monotonic"] == true && applied["temporality"] == "AGGREGATION_TEMPORALITY_CUMULATIVE")
            #expect(applied["service"] == "onMessageCreated" && applied["attributes"]?["function"] == "onMessageCreated")
            #expect(events(latest, "duplicate") == 1)
            let durations = latest.filter { $0["name"] == "herald_event_duration_seconds" }
            #expect(durations.compactMap { number($0["count"]) }.reduce(0, +) == 3, "\(durations)")
            #expect(durations.allSatisfy { $0["type"] == "histogram" && $0["unit"] == "s" && $0["bucketCounts"]?.arrayValue?.count == 13 })
            #expect(latest.contains { $0["name"] == "herald_fcm_sends" && $0["attributes"]?["result"] == "sent" && number($0["value"]) == 6 })
            #expect(latest.contains { $0["name"] == "herald_events_in_flight" && $0["type"] == "gauge" })
            #expect(received.list.withLock { $0 }.allSatisfy { $0.apiKey == "m3trics" && $0.contentType == "application/json" })
            // What was counted last is sent as the function stops, whatever the interval.
            let before = received.list.withLock { $0.count }
            #expect(await function.process.stop(grace: .seconds(10)) == .exited(0))
            #expect(received.list.withLock { $0.count } > before)
        }
    }
}
