import AsyncHTTPClient
import FirestoreEvents
import FirestoreModel
import Foundation
import GoogleClients
import HeraldHTTPClient
import HeraldTesting
import Hummingbird
import LocalCloud
import NIOCore
import NIOHTTP1
import Synchronization
import Telemetry
import Testing
import WireFormats

/// What the browser console reads: each event's path joined by trace, replaying dead letters, the
/// change stream, and the page itself beside the metadata server's answer on `/`.
@Suite struct ConsoleAPITests {
    /// A stand-in function: for each event on `rooms/{r}` it writes a log document and sends a push
    /// through Herald's own clients, with the event's trace set as the runtime sets it.
    static func loggingFunction(cloud: String) -> Router<BasicRequestContext> {
        let router = Router()
        router.post("/") { request, _ in
            let incoming = request.headers.first { $0.name.canonicalName == "traceparent" }?.value
            let document = request.headers.first { $0.name.canonicalName == "ce-document" }?.value ?? ""
            guard document.split(separator: "/").count == 2 else { return Response(status: .ok) }
            let firestore = FirestoreClient(project: "herald-test", endpoint: cloud, credentials: EmulatorCredentials(), httpClient: .shared)
            let fcm = FCMClient(project: "herald-test", endpoint: cloud, credentials: EmulatorCredentials(), httpClient: .shared)
            await OutboundTrace.handling("probe", incoming: incoming, recorder: nil) { _ in
                _ = try? await firestore.commit([Write(.update(try firestore.name("\(document)/log/1"), fields: ["seen": .boolean(true)], mask: nil))])
                _ = await fcm.sendAll([["token": "t-1", "notification": ["title": "Hi", "body": "there"]]])
            }
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: #"{"outcome":"applied","writes":1,"pushes":1}"#)))
        }
        return router
    }

    static func json(_ url: String) async throws -> JSONValue {
        try JSONValue(parsing: Array(try await HTTPClient.shared.get(url).body.utf8))
    }

    @Test func anEventsPathHoldsItsAnswerTheWritesAndPushesItsFunctionMadeAndWhatItCaused() async throws {
        try await withLocalCloud { local in
            try await withTestHTTPServer(Self.loggingFunction(cloud: local.baseURL)) { port in
                local.cloud.triggers.register(TriggerRegistration(name: "rooms", pattern: "rooms/{r}", kind: .created, url: "http://127.0.0.1:\(port)/"))
                local.cloud.triggers.register(TriggerRegistration(name: "logs", pattern: "rooms/{r}/log/{l}", kind: .created, url: "http://127.0.0.1:\(port)/"))
                // Another event's calls, untraced: they must not be joined to this one.
                _ = try await local.firestore().commit([Write(.update(try local.firestore().name("other/o1"), fields: [:], mask: nil))])
                _ = try await local.firestore().commit([Write(.update(try local.firestore().name("rooms/r1"), fields: ["a": .integer(1)], mask: nil))])
                #expect(try await local.cloud.waitUntilIdle(timeout: .seconds(20)))

                let events = try #require(try await Self.json("\(local.baseURL)/herald/console/events")["events"]?.arrayValue)
                let room = try #require(events.first { $0["trigger"]?.stringValue == "rooms" })
                #expect(room["state"]?.stringValue == "delivered")
                #expect(room["answer"]?["outcome"]?.stringValue == "applied")
                #expect(room["latencyMs"]?.isNull == false)
                #expect(room["cause"]?.isNull == true, "a write from outside any event has no cause")
                #expect(room["writes"]?.arrayValue?.compactMap { $0["document"]?.stringValue } == ["rooms/r1/log/1"])
                #expect(room["pushes"]?.arrayValue?.compactMap { $0["token"]?.stringValue } == ["t-1"])
                #expect(room["calls"]?["firestore"]?.int64Value == 1)
                #expect(room["calls"]?["fcm"]?.int64Value == 1)

                let log = try #require(events.first { $0["trigger"]?.stringValue == "logs" })
                #expect(log["cause"]?["deliveryId"] == room["id"], "the log's event was caused by the room's")
                #expect(log["writes"]?.arrayValue?.isEmpty == true)
            }
        }
    }

    @Test func aDeadLetterIsReplayedFromItsFirstAttemptAndNothingElseIs() async throws {
        var options = LocalCloudOptions.testing
        options.delivery.maximumAttempts = 1
        let calls = Counter()
        let flaky = Router()
        flaky.post("/") { _, _ in Response(status: calls.increment() == 1 ? .internalServerError : .ok) }
        try await withTestHTTPServer(flaky) { [options] port in
            try await withLocalCloud(options) { local in
                local.cloud.triggers.register(TriggerRegistration(name: "rooms", pattern: "rooms/{r}", kind: .created, url: "http://127.0.0.1:\(port)/"))
                _ = try await local.firestore().commit([Write(.update(try local.firestore().name("rooms/r1"), fields: [:], mask: nil))])
                #expect(try await local.cloud.waitUntilIdle(timeout: .seconds(20)))
                let dead = try await local.cloud.deliveries(state: "dead")
                let id = try #require(dead.first?["id"]?.int64Value)

                let replay = try await HTTPClient.shared.post("\(local.baseURL)/herald/deliveries/\(id):replay", body: [])
                #expect(replay.status == 200)
                #expect(try await local.cloud.waitUntilIdle(timeout: .seconds(20)))
                #expect(try await local.cloud.deliveries(state: "dead").isEmpty)
                #expect(try await local.cloud.deliveries(state: "delivered").first?["attempts"]?.int64Value == 1)
                #expect(calls.value == 2)

                let again = try await HTTPClient.shared.post("\(local.baseURL)/herald/deliveries/\(id):replay", body: [])
                #expect(again.status == 400 && again.body.contains("not a dead letter"))
                #expect(try await HTTPClient.shared.post("\(local.baseURL)/herald/deliveries/x:replay", body: []).status == 400)
            }
        }
    }

    @Test func theChangeStreamSaysSoWhenADocumentIsWritten() async throws {
        try await withLocalCloud { local in
            let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: "\(local.baseURL)/herald/console/stream"), timeout: .seconds(10))
            #expect(response.headers.first(name: "content-type") == "text/event-stream")
            var received = ""
            var wrote = false
            for try await chunk in response.body {
                received += String(buffer: chunk)
                let changes = received.matches(of: /event: change\ndata: (\d+)/).map { Int($0.1)! }
                if !wrote, !changes.isEmpty {
                    wrote = true
                    _ = try await local.firestore().commit([Write(.update(try local.firestore().name("rooms/r1"), fields: [:], mask: nil))])
                }
                if let first = changes.first, let last = changes.last, last > first { break }
            }
            #expect(received.hasPrefix("retry: 1000\n\n"))
            #expect(received.matches(of: /event: change/).count >= 2, "no change told after the write: \(received)")
        }
    }

    /// The console draws every stored text (names, messages, ids, tokens: any client's to write) with
    /// `textContent` and DOM nodes, never as markup; its page allows scripts from itself only. The
    /// browser check (console_check.py) shows stored markup staying text.
    @Test func theConsoleNeverDrawsStoredTextAsMarkup() throws {
        let folder = TestPaths.packageRoot.appendingPathComponent("Sources/LocalCloud/LocalCloud/Console/Files")
        let scripts = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".js") }
        #expect(scripts.count >= 3)
        for script in scripts {
            let code = try String(contentsOf: folder.appendingPathComponent(script), encoding: .utf8)
            for sink in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "createContextualFragment", "srcdoc"] {
                #expect(!code.contains(sink), "\(script) uses \(sink)")
            }
        }
        let page = try String(contentsOf: folder.appendingPathComponent("index.html"), encoding: .utf8)
        #expect(!page.contains("<script>") && page.firstMatch(of: /\son[a-z]+\s*=/) == nil, "index.html holds no inline script or handler")
    }

    @Test func aBrowserGetsTheConsoleWhileGoogleAuthStillFindsTheMetadataServer() async throws {
        try await withLocalCloud { local in
            var browser = HTTPClientRequest(url: "\(local.baseURL)/")
            browser.headers.add(name: "accept", value: "text/html,application/xhtml+xml")
            let page = try await HTTPClient.shared.execute(browser, timeout: .seconds(10))
            let html = String(buffer: try await page.body.collect(upTo: 1 << 20))
            #expect(html.contains("<script src=\"/console/console.js\""))
            #expect(page.headers.first(name: "content-security-policy")?.contains("script-src 'self'") == true)

            var probe = HTTPClientRequest(url: "\(local.baseURL)/")
            probe.headers.add(name: "metadata-flavor", value: "Google")
            probe.headers.add(name: "accept", value: "text/html")
            let metadata = try await HTTPClient.shared.execute(probe, timeout: .seconds(10))
            #expect(metadata.headers.first(name: "metadata-flavor") == "Google")
            #expect(String(buffer: try await metadata.body.collect(upTo: 1 << 20)).contains("\"project\""))

            #expect(try await HTTPClient.shared.get("\(local.baseURL)/console/console.js").body.contains("EventSource"))
            #expect(try await HTTPClient.shared.get("\(local.baseURL)/console/secrets.txt").status == 404)
        }
    }

    @Test func callsMadeForAnEventCarryItsTraceUnderANewSpan() throws {
        let incoming = try #require(TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
        let child = incoming.child()
        #expect(child.traceID == "4bf92f3577b34da6a3ce929d0e0e4736" && child.spanID != incoming.spanID && child.sampled)
        #expect(child.traceparent.hasPrefix("00-4bf92f3577b34da6a3ce929d0e0e4736-") && child.traceparent.hasSuffix("-01"))
        #expect(TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")?.sampled == false)
        #expect(TraceContext(traceparent: "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later")?.spanID == "00f067aa0ba902b7")
        for malformed in [
            nil, "", "00-xyz-00f067aa0ba902b7-01", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        ] {
            #expect(TraceContext(traceparent: malformed) == nil, "\(malformed ?? "nil")")
        }
    }
}
