import AsyncHTTPClient
import FirestoreEvents
import FirestoreModel
import Foundation
import HeraldCore
import HeraldRuntime
import HeraldTesting
import Logging
import Synchronization
import Testing
import WireFormats

@Suite struct FunctionServerTests {
    let client = HTTPClient.shared

    /// With the answering process's id: herald dev takes only its own function's answer for healthy (a
    /// port another process took meanwhile answers too, and would get that function's events).
    @Test func healthzAnswers200WithTheProcessID() async throws {
        try await withFunctionServer(RelayFunction(), gateway: Rooms.snapshot) { server in
            let response = try await client.get(server.baseURL + "/healthz")
            #expect(response.status == 200)
            #expect(try JSONValue(parsing: response.body)["pid"]?.int64Value == Int64(ProcessInfo.processInfo.processIdentifier))
        }
    }

    @Test func anEventIsDecodedPlannedAndAnswered() async throws {
        try await withFunctionServer(RelayFunction(), gateway: Rooms.snapshot) { server in
            let request = try Rooms.httpRequest(Rooms.created())
            let response = try await client.post(server.baseURL + "/", headers: request.headers, body: request.body)
            #expect(response.status == 200)
            let body = try JSONValue(parsing: response.body)
            #expect(body == ["eventId": "evt-1", "outcome": "applied", "writes": 1, "pushes": 2])
        }
    }

    @Test func everyFixtureEncodingIsAcceptedOverHTTP() async throws {
        try await withFunctionServer(RelayFunction(), gateway: Rooms.snapshot) { server in
            for scenario in ["default/message-created", "prd004/user-written", "values/all-kinds"] {
                for (encoding, url) in try TestPaths.encodings(of: scenario) {
                    let request = try Fixture.request(from: Array(Data(contentsOf: url)))
                    let response = try await client.post(server.baseURL + "/", headers: request.headers, body: request.body)
                    #expect(response.status == 200, "\(scenario) \(encoding): \(response.body)")
                    // Not under rooms/: the trigger does not match, so the answer is a logged skip.
                    #expect(try JSONValue(parsing: response.body)["outcome"] == "skipped")
                }
            }
        }
    }

    @Test func requestsThatCanNeverSucceedGet400WithTheReason() async throws {
        try await withFunctionServer(RelayFunction(), gateway: Rooms.snapshot) { server in
            let good = try Rooms.httpRequest(Rooms.created())
            let cases: [([String: String], [UInt8], String)] = [
                (good.headers, [0x0A, 0xFF, 0xFF, 0xFF, 0x0F], "not a protobuf"),
                (good.headers.merging(["ce-type": "google.cloud.storage.object.v1.finalized"]) { $1 }, good.body, "unknown event type"),
                (good.headers.filter { $0.key != "ce-id" }, good.body, "\"id\""),
                (["content-type": "application/json"], Array("{not json".utf8), "not JSON"),
                (["content-type": "text/plain"], Array("hello".utf8), "content-type"),
                ([:], [], "empty body"),
            ]
            for (headers, body, fragment) in cases {
                let response = try await client.post(server.baseURL + "/", headers: headers, body: body)
                #expect(response.status == 400, "\(fragment)")
                let error = try JSONValue(parsing: response.body)["error"]
                #expect(error?["status"] == "INVALID_ARGUMENT")
                #expect(error?["message"]?.stringValue?.contains(fragment) == true, "\(response.body) should mention \(fragment)")
            }
        }
    }

    @Test func anOversizedBodyIsRefusedWith400() async throws {
        try await withFunctionServer(RelayFunction(), gateway: Rooms.snapshot) { server in
            let headers = try Rooms.httpRequest(Rooms.created()).headers
            let response = try await client.post(server.baseURL + "/", headers: headers, body: [UInt8](repeating: 0x41, count: 10 * 1024 * 1024 + 1))
            #expect(response.status == 400)
            #expect(response.body.contains("exceeds the 10 MiB limit"))
        }
    }

    @Test func downstreamFailuresMapToRetryableStatuses() async throws {
        let cases: [(any Error, Int, String?)] = [
            (DownstreamError.unavailable("firestore is down"), 503, "1"),  // a 503 always says when to come back
            (DownstreamError.throttled("quota", retryAfterSeconds: 60), 429, "60"),
            (DownstreamError.rejected("permission denied"), 400, nil),
            (CancellationError(), 503, "1"),  // the instance stopping: another takes the event
            (UnclassifiedFailure(), 503, "1"),  // not known to be permanent: retried, never a bare 500
        ]
        for (error, status, retryAfter) in cases {
            try await withFunctionServer(RelayFunction(), gateway: FailingGateway(error: error)) { server in
                let request = try Rooms.httpRequest(Rooms.created())
                let response = try await client.post(server.baseURL + "/", headers: request.headers, body: request.body)
                #expect(response.status == status, "\(error)")
                #expect(response.headers["retry-after"] == retryAfter)
            }
        }
    }

    /// A function that asks for another document after every read would ask again on every delivery:
    /// the event is refused with the reason (it was a 500 without one).
    @Test func aFunctionThatAsksWithoutEndIsRefusedWithTheReason() async throws {
        try await withFunctionServer(EndlessReader(), gateway: Rooms.snapshot) { server in
            let request = try Rooms.httpRequest(Rooms.created())
            let response = try await client.post(server.baseURL + "/", headers: request.headers, body: request.body)
            #expect(response.status == 400)
            #expect(response.body.contains("kept asking for more documents"), "\(response.body)")
        }
    }

    @Test func gracefulShutdownFinishesTheEventInFlight() async throws {
        let gateway = GatedGateway(Rooms.snapshot)
        try await withFunctionServer(RelayFunction(), gateway: gateway) { server in
            let request = try Rooms.httpRequest(Rooms.created())
            async let response = client.post(server.baseURL + "/", headers: request.headers, body: request.body)
            await gateway.waitUntilEntered()
            await server.beginGracefulShutdown()
            gateway.release()
            let answered = try await response
            #expect(answered.status == 200)
            #expect(try JSONValue(parsing: answered.body)["outcome"] == "applied")
        }
    }

    @Test func aLogLineIsOneSortedJSONObjectWhoseMetadataReplacesItsOwnFields() throws {
        let lines = Mutex<[String]>([])
        var logger = Logger(label: "fn") { label in
            CloudLogHandler(label: label, level: .info, format: .json, sink: LineSink { line in lines.withLock { $0.append(line) } })
        }
        logger[metadataKey: "eventId"] = "e1"
        logger[metadataKey: "logger"] = "renamed"
        logger.info("said \"so\"", metadata: ["zeta": ["a", "b"], "alpha": ["k": "v"]])
        let line = try #require(lines.withLock { $0.first })
        let json = try JSONValue(parsing: line)
        #expect(json["message"] == "said \"so\"" && json["logger"] == "renamed" && json["eventId"] == "e1" && json["severity"] == "INFO")
        #expect(json["zeta"] == ["a", "b"] && json["alpha"] == ["k": "v"] && json["time"]?.stringValue.flatMap(Timestamp.init(rfc3339:)) != nil)
        #expect(line == json.serialized(), "keys sorted, compact, as every other JSON Herald writes")
    }

    @Test func logLinesAreCloudLoggingJSONWithTheEventIDAndTrace() async throws {
        let lines = Mutex<[String]>([])
        let sink = LineSink { line in lines.withLock { $0.append(line) } }
        try await withFunctionServer(RelayFunction(), gateway: Rooms.snapshot, logSink: sink) { server in
            let request = try Rooms.httpRequest(
                Rooms.created(id: "evt-logged"),
                extraHeaders: ["traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"])
            _ = try await client.post(server.baseURL + "/", headers: request.headers, body: request.body)
            _ = try await client.post(server.baseURL + "/", headers: ["content-type": "application/json"], body: Array("[]".utf8))
        }
        let records = try lines.withLock { $0 }.map { try JSONValue(parsing: $0) }
        let eventLines = records.filter { $0["eventId"] == "evt-logged" }
        #expect(!eventLines.isEmpty)
        for line in eventLines {
            #expect(line["severity"] == "INFO" || line["severity"] == "DEBUG")
            #expect(line["logging.googleapis.com/trace"] == "projects/herald-test/traces/4bf92f3577b34da6a3ce929d0e0e4736")
            #expect(line["message"]?.stringValue?.isEmpty == false)
        }
        #expect(records.contains { $0["severity"] == "ERROR" && $0["message"]?.stringValue?.contains("refused event") == true })
    }

    @Test func mutatedRequestsOverHTTPGetA4xxOrAnAnswerNeverA5xx() async throws {
        try await withFunctionServer(RelayFunction(), gateway: Rooms.snapshot) { server in
            var rng = SeededRandom(seed: 1234)
            let base = try Rooms.httpRequest(Rooms.created())
            var statuses: [Int: Int] = [:]
            for _ in 0..<600 {
                var body = base.body
                var headers = base.headers
                for _ in 0..<Int.random(in: 1...6, using: &rng) where !body.isEmpty {
                    body[Int.random(in: 0..<body.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                }
                if Bool.random(using: &rng), let key = headers.keys.randomElement(using: &rng) {
                    headers[key] = ["", "1.0", "x", "application/json", "%00", "google.cloud.firestore.document.v1.deleted"].randomElement(using: &rng)!
                }
                let response = try await client.post(server.baseURL + "/", headers: headers, body: body)
                statuses[response.status, default: 0] += 1
            }
            #expect(Set(statuses.keys).isSubset(of: [200, 400]), "\(statuses)")
            #expect(statuses[400, default: 0] > 100)
            #expect(try await client.get(server.baseURL + "/healthz").status == 200)
        }
    }
}

/// An error of no kind the runtime knows.
struct UnclassifiedFailure: Error {}

/// Asks for one more document after each read, for ever.
struct EndlessReader: EventFunction {
    static let name = "endless"
    static let summary = "test function"
    var trigger: Trigger { RelayFunction().trigger }

    func plan(for change: DocumentChange, reading: Reads) throws(NotReadYet) -> Plan {
        for index in 0... {
            guard let next = try? change.document.sibling(path: "rooms/r/extra/d\(index)") else { break }
            _ = try reading.document(next)
        }
        return .skip("unreachable")
    }
}
