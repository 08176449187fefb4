import AsyncHTTPClient
import Foundation
import FirestoreModel
import GoogleClients
import HeraldTesting
import Hummingbird
import Synchronization
import Testing

/// A stand-in for FCM that answers from a script per token and records what it was sent.
final class FakeFCM: Sendable {
    struct Answer: Sendable {
        var status: HTTPResponse.Status
        var body: String
        var retryAfter: String? = nil
    }

    let script: @Sendable (_ token: String, _ attempt: Int) -> Answer
    let attempts = Mutex<[String: Int]>([:])
    let bodies = Mutex<[JSONValue]>([])
    let inFlight = Mutex<(now: Int, peak: Int)>((0, 0))
    let delay: Duration

    init(delay: Duration = .zero, script: @escaping @Sendable (String, Int) -> Answer = { token, _ in FakeFCM.ok(token) }) {
        self.script = script
        self.delay = delay
    }

    static func ok(_ token: String) -> Answer { Answer(status: .ok, body: #"{"name": "projects/p/messages/\#(token)"}"#) }

    static func error(_ status: HTTPResponse.Status, _ grpc: String, _ fcm: String?, message: String = "error", retryAfter: String? = nil) -> Answer {
        let details = fcm.map { #", "details": [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "\#($0)"}]"# } ?? ""
        return Answer(status: status, body: #"{"error": {"code": \#(status.code), "message": "\#(message)", "status": "\#(grpc)"\#(details)}}"#, retryAfter: retryAfter)
    }

    var router: Router<BasicRequestContext> {
        let router = Router()
        router.post("/v1/projects/p/messages:send") { request, _ -> Response in
            var request = request
            let json = try JSONValue(parsing: Array(buffer: try await request.collectBody(upTo: 1 << 20)))
            self.bodies.withLock { $0.append(json) }
            let token = json["message"]?["token"]?.stringValue ?? ""
            let attempt = self.attempts.withLock { $0[token, default: 0] += 1; return $0[token]! }
            self.inFlight.withLock { $0.now += 1; $0.peak = max($0.peak, $0.now) }
            try await Task.sleep(for: self.delay)
            self.inFlight.withLock { $0.now -= 1 }
            let answer = self.script(token, attempt)
            var headers: HTTPFields = [.contentType: "application/json"]
            if let after = answer.retryAfter { headers[.retryAfter] = after }
            return Response(status: answer.status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: answer.body)))
        }
        return router
    }
}

@Suite struct FCMClientTests {
    let fast = RetryPolicy(maximumAttempts: 4, initialDelay: .milliseconds(10), maximumDelay: .milliseconds(50), totalBudget: .seconds(5))

    func client(_ port: Int, maximumInFlight: Int = 256, timeout: Duration = .seconds(20)) -> FCMClient {
        FCMClient(project: "p", endpoint: "http://127.0.0.1:\(port)", credentials: EmulatorCredentials(),
                  httpClients: [HTTPClient.shared], maximumInFlight: maximumInFlight, retry: fast, requestTimeout: timeout)
    }

    @Test func errorCodesAreClassifiedAsGoogleDocumentsThem() async throws {
        let answers: [String: FakeFCM.Answer] = [
            "unregistered": FakeFCM.error(.notFound, "NOT_FOUND", "UNREGISTERED"),
            "mismatch": FakeFCM.error(.forbidden, "PERMISSION_DENIED", "SENDER_ID_MISMATCH"),
            "invalid-token": FakeFCM.error(.badRequest, "INVALID_ARGUMENT", "INVALID_ARGUMENT", message: "The registration token is not a valid FCM registration token"),
            "bad-payload": FakeFCM.error(.badRequest, "INVALID_ARGUMENT", "INVALID_ARGUMENT", message: "Invalid value at 'message.data[0].value' (TYPE_STRING), 1"),
            "quota": FakeFCM.error(.tooManyRequests, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", retryAfter: "120"),
            "apns": FakeFCM.error(.unauthorized, "UNAUTHENTICATED", "THIRD_PARTY_AUTH_ERROR"),
        ]
        let fake = FakeFCM { token, _ in answers[token] ?? FakeFCM.ok(token) }
        try await withTestHTTPServer(fake.router) { port in
            let fcm = client(port)
            #expect(await fcm.send(["token": "good"]) == .sent(name: "projects/p/messages/good"))
            #expect(await fcm.send(["token": "unregistered"]) == .dead(reason: "UNREGISTERED"))
            #expect(await fcm.send(["token": "mismatch"]) == .dead(reason: "SENDER_ID_MISMATCH"))
            #expect(await fcm.send(["token": "invalid-token"]) == .dead(reason: "INVALID_ARGUMENT: invalid registration token"))
            guard case .failed(let reason, false, nil) = await fcm.send(["token": "bad-payload"]) else { Issue.record("payload bug must fail, not retry"); return }
            #expect(reason.contains("message.data"))
            #expect(await fcm.send(["token": "quota"]) == .failed(reason: "429 RESOURCE_EXHAUSTED (QUOTA_EXCEEDED): error", retryable: true, retryAfterSeconds: 120))
            guard case .failed(let apns, false, _) = await fcm.send(["token": "apns"]) else { Issue.record("APNs auth error keeps the token"); return }
            #expect(apns.contains("misconfigured"))
        }
        // Quota is handed back at once, never retried here; payload bugs are not retried either.
        #expect(fake.attempts.withLock { $0["quota"] } == 1)
        #expect(fake.attempts.withLock { $0["bad-payload"] } == 1)
    }

    @Test func transientFailuresAreRetriedHonouringRetryAfter() async throws {
        let fake = FakeFCM { token, attempt in
            switch (token, attempt) {
            case ("flaky", 1): FakeFCM.error(.serviceUnavailable, "UNAVAILABLE", "UNAVAILABLE", retryAfter: "1")
            case ("flaky", 2): FakeFCM.error(.internalServerError, "INTERNAL", "INTERNAL")
            case ("down", _): FakeFCM.error(.serviceUnavailable, "UNAVAILABLE", "UNAVAILABLE")
            default: FakeFCM.ok(token)
            }
        }
        try await withTestHTTPServer(fake.router) { port in
            let fcm = client(port)
            let clock = ContinuousClock()
            let start = clock.now
            #expect(await fcm.send(["token": "flaky"]).isSent)
            #expect(clock.now - start >= .seconds(1))  // Retry-After: 1 was honoured
            guard case .failed(_, true, _) = await fcm.send(["token": "down"]) else { Issue.record("must give up, retryable"); return }
        }
        #expect(fake.attempts.withLock { $0["flaky"] } == 3)
        #expect(fake.attempts.withLock { $0["down"] } == 4)
    }

    @Test func aRefusedConnectionIsRetriedThenReportedRetryable() async throws {
        let port = try GoogleFirestoreEmulator.freePort()  // nothing listens there
        guard case .failed(_, true, _) = await client(port, timeout: .milliseconds(300)).send(["token": "t"]) else { Issue.record("connection refused must be retryable"); return }
    }

    @Test func fanOutKeepsTheBoundOnSendsInFlight() async throws {
        let fake = FakeFCM(delay: .milliseconds(20))
        try await withTestHTTPServer(fake.router) { port in
            let messages: [JSONValue] = (0..<120).map { ["token": .string("tok-\($0)"), "data": ["i": .string("\($0)")]] }
            let results = await client(port, maximumInFlight: 8).sendAll(messages)
            #expect(results.count == 120)
            #expect(results.enumerated().allSatisfy { $1 == .sent(name: "projects/p/messages/tok-\($0)") })
        }
        #expect(fake.inFlight.withLock { $0.peak } <= 8)
        #expect(fake.inFlight.withLock { $0.peak } >= 2)
        #expect(fake.bodies.withLock { $0.count } == 120)
    }

    @Test func validateOnlyIsSentAtTheTopLevel() async throws {
        let fake = FakeFCM()
        try await withTestHTTPServer(fake.router) { port in
            _ = await client(port).send(["token": "t", "notification": ["title": "Hi"]], validateOnly: true)
        }
        #expect(fake.bodies.withLock { $0 } == [["validate_only": true, "message": ["token": "t", "notification": ["title": "Hi"]]]])
    }
}
