import AsyncHTTPClient
import FirestoreModel
import Foundation
import GoogleClients
import HeraldTesting
import Logging
import Testing
import WireFormats

@testable import EmbeddedFirestore
@testable import LocalCloud

/// WebChannel on the local cloud's port, request by request as firebase-js-sdk makes them (the browser
/// tests run the whole client): the wire, sessions that lose nothing when a back channel breaks, a
/// re-sent POST taken once, and CORS for pages on this machine only.
@Suite struct WebChannelTests {
    static let page = "http://localhost:8081"

    /// A client's side of one session, by hand.
    struct Client {
        let base: String
        let rpc: String
        var session = ""
        let database = "projects/herald-test/databases/(default)"
        var nextMap = 0

        init(_ cloud: TestLocalCloud, _ rpc: String = "Listen") {
            base = cloud.baseURL
            self.rpc = rpc
        }

        var url: String { "\(base)/google.firestore.v1.Firestore/\(rpc)/channel" }

        func query(_ parameters: [(String, String)]) -> String {
            let database = database.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? database
            return (["VER=8", "database=\(database)"] + parameters.map { "\($0)=\($1.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $1)" })
                .joined(separator: "&")
        }

        static func form(_ messages: [JSONValue], offset: Int, headers: String? = nil) -> [UInt8] {
            var fields = ["count=\(messages.count)", "ofs=\(offset)"]
            for (index, message) in messages.enumerated() {
                fields.append("req\(index)___data__=\(message.serialized().addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)")
            }
            if let headers { fields.insert("headers=\(headers.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)", at: 0) }
            return Array(fields.joined(separator: "&").utf8)
        }

        mutating func open(_ first: JSONValue, headers: String? = nil) async throws -> TestResponse {
            let answer = try await HTTPClient.shared.post(
                "\(url)?\(query([("RID", "100"), ("CVER", "22"), ("X-HTTP-Session-Id", "gsessionid"), ("zx", "a"), ("t", "1")]))",
                headers: ["content-type": "application/x-www-form-urlencoded", "origin": WebChannelTests.page],
                body: Self.form([first], offset: 0, headers: headers))
            nextMap = 1
            if let arrays = try? WebChannelTests.frames(answer.body).first, let handshake = arrays.arrayValue?.first?.arrayValue?.last?.arrayValue {
                #expect(handshake.first?.stringValue == "c")
                session = handshake[1].stringValue ?? ""
            }
            return answer
        }

        mutating func post(_ messages: [JSONValue], offset: Int? = nil, acknowledged: Int = 0) async throws -> TestResponse {
            let at = offset ?? nextMap
            nextMap = max(nextMap, at + messages.count)
            return try await HTTPClient.shared.post(
                "\(url)?\(query([("SID", session), ("RID", "101"), ("AID", String(acknowledged)), ("zx", "b"), ("t", "1")]))",
                headers: ["content-type": "application/x-www-form-urlencoded", "origin": WebChannelTests.page],
                body: Self.form(messages, offset: at))
        }

        /// A long-polling back channel: the arrays after `acknowledged`, as `[id, message]` pairs.
        func poll(after acknowledged: Int) async throws -> [(id: Int, message: JSONValue)] {
            let answer = try await HTTPClient.shared.send(
                "GET",
                "\(url)?\(query([("RID", "rpc"), ("SID", session), ("AID", String(acknowledged)), ("CI", "1"), ("TYPE", "xmlhttp"), ("zx", "c"), ("t", "1")]))",
                headers: ["origin": WebChannelTests.page])
            #expect(answer.status == 200, "\(answer.body)")
            return try WebChannelTests.frames(answer.body).flatMap { chunk in
                (chunk.arrayValue ?? []).compactMap { pair -> (Int, JSONValue)? in
                    guard let items = pair.arrayValue, let id = items.first?.int64Value, let payload = items.last?.arrayValue?.first else { return nil }
                    return (Int(id), payload)
                }
            }
        }

        /// Polls until `enough` holds for everything received after `acknowledged`.
        func poll(after acknowledged: Int, until enough: ([(id: Int, message: JSONValue)]) -> Bool) async throws -> [(id: Int, message: JSONValue)] {
            var received: [(id: Int, message: JSONValue)] = []
            for _ in 0..<20 where !enough(received) {
                received += try await poll(after: received.last?.id ?? acknowledged)
            }
            return received
        }
    }

    /// `LENGTH\nJSON` frames, the length in UTF-16 code units (what the browser's string counts).
    static func frames(_ text: String) throws -> [JSONValue] {
        var rest = Substring(text)
        var frames: [JSONValue] = []
        while let newline = rest.firstIndex(of: "\n"), let units = Int(rest[..<newline]) {
            let body = rest[rest.index(after: newline)...]
            let utf16 = Array(body.utf16)
            guard utf16.count >= units else { throw WebChannelTestError(description: "frame of \(units) units, \(utf16.count) left") }
            let json = String(decoding: utf16[..<units], as: UTF16.self)
            frames.append(try JSONValue(parsing: Array(json.utf8)))
            rest = Substring(String(decoding: utf16[units...], as: UTF16.self))
        }
        return frames
    }

    static func documentTarget(_ path: String, id: Int = 2) -> JSONValue {
        [
            "database": "projects/herald-test/databases/(default)",
            "addTarget": [
                "documents": ["documents": [.string("projects/herald-test/databases/(default)/documents/\(path)")]], "targetId": .integer(Int64(id)),
            ],
        ]
    }

    @Test func aFramesLengthCountsUTF16CodeUnitsAsTheBrowserDoes() throws {
        // "📷" is one character, two UTF-16 units, four UTF-8 bytes; "•" one unit, three bytes.
        #expect(WebChannelWire.frame(#"["📷•"]"#) == "7\n[\"📷•\"]")
        #expect(WebChannelWire.handshake(session: "S") == #"[[0,["c","S","",8,12,30000]]]"#)
    }

    @Test func aForwardBodyIsReadAsClosureWritesIt() throws {
        let body =
            "headers=X-Goog-Api-Client%3Agl-js%2F%20fire%2F12%0D%0AAuthorization%3ABearer%20owner%0D%0A&count=2&ofs=5&req0___data__=%7B%22a%22%3A1%7D&req1___data__=%7B%22b%22%3A%22x+y%22%7D"
        let read = try WebChannelWire.forwardBody(Array(body.utf8))
        #expect(read.headers == ["x-goog-api-client": "gl-js/ fire/12", "authorization": "Bearer owner"])
        #expect(read.maps == [.init(id: 5, json: #"{"a":1}"#), .init(id: 6, json: #"{"b":"x y"}"#)])
        #expect(throws: LocalAPIError.self) { try WebChannelWire.forwardBody(Array("count=2&ofs=0&req0___data__=%7B%7D".utf8)) }
        #expect(throws: LocalAPIError.self) { try WebChannelWire.forwardBody(Array("count=1001".utf8)) }
        #expect(throws: LocalAPIError.self) { try WebChannelWire.forwardBody(Array("count=1&ofs=-3&req0___data__=%7B%7D".utf8)) }
    }

    /// A listener over WebChannel: ADD, the document, CURRENT, a consistent point; a write arrives as a
    /// change; a back channel that asks again from an older AID gets the same arrays (nothing lost).
    @Test func aListenerSeesAWriteAndABrokenBackChannelLosesNothing() async throws {
        try await withLocalCloud { cloud in
            let name = try DocumentName(project: "herald-test", database: "(default)", path: "chats/c1")
            _ = try await cloud.firestore().commit([Write(.update(name, fields: ["last": .string("")], mask: nil))])
            var client = Client(cloud)
            let handshake = try await client.open(Self.documentTarget("chats/c1"), headers: "X-Goog-Api-Client:gl-js/\r\n")
            #expect(handshake.status == 200 && !client.session.isEmpty, "\(handshake.body)")
            #expect(handshake.headers["access-control-allow-origin"] == Self.page)
            // A back channel whose answer the client never read (its connection broke): the next one, from
            // the same AID, gets the same arrays again.
            let lost = try await client.poll(after: 0)
            let again = try await client.poll(after: 0)
            #expect(!lost.isEmpty && again.prefix(lost.count).map(\.id) == lost.map(\.id))
            let first = try await client.poll(after: 0) {
                $0.contains { $0.message["targetChange"]?["resumeToken"] != nil && $0.message["targetChange"]?["targetIds"] == nil }
            }
            #expect(first.first?.message["targetChange"]?["targetChangeType"]?.stringValue == "ADD")
            #expect(first.contains { $0.message["documentChange"]?["document"]?["fields"]?["last"] != nil })

            _ = try await cloud.firestore().commit([Write(.update(name, fields: ["last": .string("Dinner at 6pm • 📷")], mask: nil))])
            let change = try await client.poll(after: first.last!.id) { received in received.contains { $0.message["documentChange"] != nil } }
            #expect(change.first?.id == first.last!.id + 1)
            #expect(change.contains { $0.message["documentChange"]?["document"]?["fields"]?["last"]?["stringValue"]?.stringValue == "Dinner at 6pm • 📷" })
        }
    }

    /// On a store nobody has written since the start, a listener is still consistent at a real time:
    /// the SDKs raise no snapshot at read time 0 (SnapshotVersion.min()), so onSnapshot never fired.
    @Test func aListenerOnAStoreNotYetWrittenGetsARealReadTime() async throws {
        try await withLocalCloud { cloud in
            var client = Client(cloud)
            _ = try await client.open(Self.documentTarget("chats/none"))
            let received = try await client.poll(after: 0) { $0.contains { $0.message["targetChange"]?["targetChangeType"]?.stringValue == "CURRENT" } }
            let current = try #require(received.first { $0.message["targetChange"]?["targetChangeType"]?.stringValue == "CURRENT" })
            let readTime = try #require(current.message["targetChange"]?["readTime"]?.stringValue)
            #expect(!readTime.hasPrefix("1970"), "CURRENT at \(readTime)")
        }
    }

    /// A POST sent again (closure-library retries with the same map ids) is taken once: one target, not
    /// an "already being listened to" error.
    @Test func aPostSentAgainIsTakenOnce() async throws {
        try await withLocalCloud { cloud in
            var client = Client(cloud)
            _ = try await client.open(Self.documentTarget("chats/c1"))
            let second = Self.documentTarget("chats/c2", id: 4)
            let posted = try await client.post([second], offset: 1)
            #expect(posted.status == 200, "\(posted.body)")
            let reposted = try await client.post([second], offset: 1)
            #expect(reposted.status == 200, "\(reposted.body)")
            let received = try await client.poll(after: 0) { received in
                received.contains {
                    $0.message["targetChange"]?["targetChangeType"]?.stringValue == "CURRENT"
                        && $0.message["targetChange"]?["targetIds"]?.arrayValue?.first?.int64Value == 4
                }
            }
            let adds = received.filter { $0.message["targetChange"]?["targetChangeType"]?.stringValue == "ADD" }
            #expect(adds.count == 2)
            #expect(!received.contains { $0.message["error"] != nil }, "\(received.map { $0.message.serialized() })")
        }
    }

    /// A stream's error reaches the client as a message it understands, `{"error": {status, message}}`,
    /// and then the session is gone: `Unknown SID`, which makes the SDK open a new one.
    @Test func aStreamsErrorIsAMessageThenTheSessionIsGone() async throws {
        try await withLocalCloud { cloud in
            var client = Client(cloud)
            _ = try await client.open(["database": "projects/herald-test/databases/(default)", "addTarget": ["targetId": 2]])
            let received = try await client.poll(after: 0) { $0.contains { $0.message["error"] != nil } }
            let error = try #require(received.first { $0.message["error"] != nil }?.message["error"])
            #expect(error["status"]?.stringValue == "INVALID_ARGUMENT")
            #expect(error["code"]?.int64Value == 400)
            #expect(error["message"]?.stringValue?.contains("documents or a query") == true)
            var gone = TestResponse(status: 0, headers: [:], body: "")
            for _ in 0..<50 {
                gone = try await client.post([])
                if gone.status == 400 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(gone.status == 400 && gone.body == "Unknown SID")
        }
    }

    /// A handshake with more messages than a session queues is refused whole, not cut short.
    @Test func anOversizedHandshakeIsRefused() async throws {
        try await withLocalCloud { cloud in
            let client = Client(cloud)
            let many = (0..<201).map { Self.documentTarget("chats/c\($0)", id: $0 + 1) }
            let answer = try await HTTPClient.shared.post(
                "\(client.url)?\(client.query([("RID", "1"), ("CVER", "22")]))", headers: ["content-type": "application/x-www-form-urlencoded"],
                body: Client.form(many, offset: 0))
            #expect(answer.status == 400 && answer.body.contains("at most 200 messages"), "\(answer.status) \(answer.body)")
            #expect(cloud.cloud.webChannels.count == 0)
        }
    }

    @Test func terminateEndsTheSessionAndAnUnknownSessionIsRefused() async throws {
        try await withLocalCloud { cloud in
            var client = Client(cloud)
            _ = try await client.open(Self.documentTarget("chats/c1"))
            #expect(cloud.cloud.webChannels.count == 1)
            let terminated = try await HTTPClient.shared.send(
                "GET", "\(client.url)?\(client.query([("SID", client.session), ("RID", "102"), ("TYPE", "terminate")]))", headers: ["origin": Self.page])
            #expect(terminated.status == 200)
            #expect(cloud.cloud.webChannels.count == 0)
            let after = try await client.post([Self.documentTarget("chats/c2", id: 4)])
            #expect(after.status == 400 && after.body == "Unknown SID")
        }
    }

    /// A session no client has heard from (no back channel, no POST) for its idle time expires.
    @Test func anIdleSessionExpires() async throws {
        let sessions = WebChannelSessions(idleTimeout: .milliseconds(300), logger: .init(label: "test"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await sessions.run() }
            let session = try #require(
                sessions.open(stream: .listen, database: "projects/p/databases/(default)", metadata: [:], firstMapID: 0) { session in
                    for await _ in session.requests {}
                })
            #expect(sessions.session(session.id) != nil)
            for _ in 0..<100 where sessions.session(session.id) != nil { try await Task.sleep(for: .milliseconds(100)) }
            #expect(sessions.session(session.id) == nil)
            #expect(session.end == .expired)
            group.cancelAll()
        }
    }

    /// A client that never reads holds at most the session's limit: the stream waits for it, and goes
    /// on once the client acknowledges what it has seen.
    @Test func aClientThatNeverReadsHoldsTheStreamBack() async throws {
        let session = WebChannelSession(id: "s", stream: .listen, database: "d", metadata: [:], firstMapID: 0, heldUnitsLimit: 100)
        let message = String(repeating: "x", count: 60)
        try await session.send(message)
        try await session.send(message)  // over the limit now: the next one waits
        let sent = Flag()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await session.send(message)
                sent.set()
            }
            try await Task.sleep(for: .milliseconds(200))
            #expect(!sent.isSet)
            session.acknowledge(2)
            try await group.waitForAll()
        }
        #expect(sent.isSet)
        #expect(session.arrays(after: 2).texts.count == 1)
    }

    /// CORS: a page on this machine (another port) gets its preflight answered and its origin named in
    /// every answer; a page anywhere else — a domain, or an address that is not this machine — is refused.
    @Test func pagesOnThisMachineAreServedAndOthersRefused() async throws {
        try await withLocalCloud { cloud in
            let url = "\(cloud.baseURL)/v1/projects/herald-test/databases/(default)/documents:commit"
            for origin in ["http://localhost:8081", "http://127.0.0.1:5173", "http://[::1]:3000"] {
                let preflight = try await HTTPClient.shared.send(
                    "OPTIONS", url,
                    headers: ["origin": origin, "access-control-request-method": "POST", "access-control-request-headers": "x-goog-api-client, content-type"])
                #expect(preflight.status == 204, "\(origin): \(preflight.status) \(preflight.body)")
                #expect(preflight.headers["access-control-allow-origin"] == origin)
                #expect(preflight.headers["access-control-allow-headers"] == "x-goog-api-client, content-type")
                #expect(preflight.headers["access-control-allow-credentials"] == "true")
                // The web SDK's REST call: JSON sent as text/plain.
                let commit = try await HTTPClient.shared.post(
                    url, headers: ["origin": origin, "content-type": "text/plain"], body: Array(#"{"writes":[]}"#.utf8))
                #expect(commit.status == 200, "\(origin): \(commit.body)")
                #expect(commit.headers["access-control-allow-origin"] == origin)
            }
            for origin in ["https://evil.example", "http://192.168.1.20:8081", "http://10.0.0.1", "null"] {
                let preflight = try await HTTPClient.shared.send("OPTIONS", url, headers: ["origin": origin, "access-control-request-method": "POST"])
                #expect(preflight.status == 403, "\(origin): \(preflight.status)")
                #expect(preflight.headers["access-control-allow-origin"] == nil)
                let commit = try await HTTPClient.shared.post(
                    url, headers: ["origin": origin, "content-type": "application/json"], body: Array(#"{"writes":[]}"#.utf8))
                #expect(commit.status == 403 && commit.body.contains("--allow-host"), "\(origin): \(commit.status) \(commit.body)")
            }
            // text/plain is the web SDK's, for Firestore: elsewhere a body must still say it is JSON.
            let admin = try await HTTPClient.shared.post(
                "\(cloud.baseURL)/herald/triggers", headers: ["origin": "http://localhost:8081", "content-type": "text/plain"], body: Array("{}".utf8))
            #expect(admin.status == 415)
        }
    }
}

struct WebChannelTestError: Error, CustomStringConvertible { let description: String }
