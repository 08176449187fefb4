import AsyncHTTPClient
import FirestoreModel
import Foundation
import GoogleClients
import HeraldHTTPClient
import HeraldTesting
import Hummingbird
import Synchronization
import Testing
import WireFormats

@Suite struct FCMClientTests {
    let fast = RetryPolicy(maximumAttempts: 4, initialDelay: .milliseconds(10), maximumDelay: .milliseconds(50), totalBudget: .seconds(60))

    func client(_ port: Int, maximumInFlight: Int = 256, timeout: Duration = .seconds(20)) -> FCMClient {
        FCMClient(
            project: "p", endpoint: "http://127.0.0.1:\(port)", credentials: EmulatorCredentials(),
            httpClient: .shared, maximumInFlight: maximumInFlight, retry: fast, requestTimeout: timeout)
    }

    @Test func errorCodesAreClassifiedAsGoogleDocumentsThem() async throws {
        let answers: [String: FakeFCM.Answer] = [
            "unregistered": FakeFCM.error(.notFound, "NOT_FOUND", "UNREGISTERED"),
            "mismatch": FakeFCM.error(.forbidden, "PERMISSION_DENIED", "SENDER_ID_MISMATCH"),
            "invalid-token": FakeFCM.error(
                .badRequest, "INVALID_ARGUMENT", "INVALID_ARGUMENT", message: "The registration token is not a valid FCM registration token"),
            "bad-payload": FakeFCM.error(
                .badRequest, "INVALID_ARGUMENT", "INVALID_ARGUMENT", message: "Invalid value at 'message.data[0].value' (TYPE_STRING), 1"),
            "quota": FakeFCM.error(.tooManyRequests, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", retryAfter: "120"),
            "apns": FakeFCM.error(.unauthorized, "UNAUTHENTICATED", "THIRD_PARTY_AUTH_ERROR"),
            "no-role": FakeFCM.error(.forbidden, "PERMISSION_DENIED", nil, message: "Permission 'cloudmessaging.messages.create' denied"),
            "bad-credentials": FakeFCM.error(.unauthorized, "UNAUTHENTICATED", nil, message: "Request had invalid authentication credentials."),
        ]
        let fake = FakeFCM { token, _ in answers[token] ?? FakeFCM.ok(token) }
        try await withTestHTTPServer(fake.router) { port in
            let fcm = client(port)
            #expect(await fcm.send(["token": "good"]) == .sent(name: "projects/p/messages/good"))
            #expect(await fcm.send(["token": "unregistered"]) == .dead(reason: "UNREGISTERED"))
            // The token belongs to another project: for one token a stale one, for all of them the wrong credentials. Kept either way.
            guard case .failed(let mismatch, false, nil) = await fcm.send(["token": "mismatch"]) else {
                Issue.record("SENDER_ID_MISMATCH keeps the token")
                return
            }
            #expect(mismatch.contains("SENDER_ID_MISMATCH"))
            #expect(await fcm.send(["token": "invalid-token"]) == .dead(reason: "INVALID_ARGUMENT: invalid registration token"))
            guard case .failed(let reason, false, nil) = await fcm.send(["token": "bad-payload"]) else {
                Issue.record("payload bug must fail, not retry")
                return
            }
            #expect(reason.contains("message.data"))
            #expect(
                await fcm.send(["token": "quota"]) == .failed(reason: "429 RESOURCE_EXHAUSTED (QUOTA_EXCEEDED): error", retryable: true, retryAfterSeconds: 120)
            )
            guard case .failed(let apns, false, _) = await fcm.send(["token": "apns"]) else {
                Issue.record("APNs auth error keeps the token")
                return
            }
            #expect(apns.contains("misconfigured"))
            // Our own credentials refused (no FCM error code): an IAM change away, retried as Firestore's are.
            for (token, fix) in [("no-role", "roles/firebasecloudmessaging.admin"), ("bad-credentials", "not valid")] {
                guard case .failed(let reason, true, _) = await fcm.send(["token": .string(token)]) else {
                    Issue.record("\(token): the push is kept for a retry")
                    continue
                }
                #expect(reason.hasPrefix(FCMClient.credentialsRefused) && reason.contains(fix), "\(reason)")
            }
        }
        // Quota is handed back at once, never retried here; payload bugs are not retried either.
        #expect(fake.attempts.withLock { $0["quota"] } == 1)
        #expect(fake.attempts.withLock { $0["bad-payload"] } == 1)
    }

    /// Google names why it refused the credentials in an `ErrorInfo` detail; the reason says which of the
    /// two fixes is the one (bodies as Google answers them, trimmed).
    @Test func refusedCredentialsNameTheirFixByGooglesReason() async throws {
        @Sendable func refusal(_ reason: String, _ message: String) -> FakeFCM.Answer {
            FakeFCM.Answer(
                status: .forbidden,
                body:
                    #"{"error": {"code": 403, "message": "\#(message)", "status": "PERMISSION_DENIED", "details": [{"@type": "type.googleapis.com/google.rpc.Help", "links": []}, {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "\#(reason)", "domain": "googleapis.com", "metadata": {"service": "fcm.googleapis.com"}}]}}"#
            )
        }
        let fake = FakeFCM { token, _ in
            token == "api-off"
                ? refusal("SERVICE_DISABLED", "Firebase Cloud Messaging API has not been used in project 12 before or it is disabled.")
                : refusal("IAM_PERMISSION_DENIED", "Permission 'cloudmessaging.messages.create' denied on resource.")
        }
        try await withTestHTTPServer(fake.router) { port in
            let fcm = client(port)
            for (token, fix, notFix) in [
                ("api-off", "enable the API fcm.googleapis.com", "roles/"), ("no-role", "roles/firebasecloudmessaging.admin", "enable"),
            ] {
                guard case .failed(let reason, true, _) = await fcm.send(["token": .string(token)]) else {
                    Issue.record("\(token): the push is kept for a retry")
                    continue
                }
                #expect(reason.hasPrefix(FCMClient.credentialsRefused) && reason.contains(fix) && !reason.contains(notFix), "\(reason)")
            }
        }
    }

    /// A wrong FCM_ENDPOINT or a proxy answers 404 without FCM's error body: that is no dead token, and
    /// nothing is lost either (retryable, so the events come back once the setting is fixed).
    @Test func notFoundWithoutFCMsOwnWordIsNoDeadToken() async throws {
        let fake = FakeFCM { token, _ in
            switch token {
            case "html": FakeFCM.Answer(status: .notFound, body: "<html><body>404 Not Found</body></html>")
            case "bare": FakeFCM.Answer(status: .notFound, body: "")
            default: FakeFCM.error(.notFound, "NOT_FOUND", nil, message: "Requested entity was not found.")
            }
        }
        try await withTestHTTPServer(fake.router) { port in
            let fcm = client(port)
            for token in ["html", "bare", "google-without-fcm-code"] {
                guard case .failed(let reason, true, _) = await fcm.send(["token": .string(token)]) else {
                    Issue.record("\(token): a 404 without FCM's UNREGISTERED must not kill the token")
                    continue
                }
                #expect(reason.contains("FCM_ENDPOINT"), "\(reason)")
            }
        }
    }

    /// With deadlines, a send waits for a slow answer up to the finish (a late answer may still be a
    /// delivery), and nothing starts after the last start.
    @Test func deadlinesBoundWhenSendsStartAndEnd() async throws {
        let fake = FakeFCM(delay: .milliseconds(700))
        try await withTestHTTPServer(fake.router) { port in
            let fcm = client(port, timeout: .milliseconds(200))
            let slow = await fcm.send(["token": "slow"], deadlines: .init(lastStart: .now + .seconds(5), finish: .now + .seconds(20)))
            #expect(slow.isSent, "\(slow)")
            let late = await fcm.send(["token": "late"], deadlines: .init(lastStart: .now - .seconds(1), finish: .now + .seconds(2)))
            guard case .failed(let reason, true, _) = late else {
                Issue.record("a send past its last start stays pending")
                return
            }
            #expect(reason.contains("not sent"))
        }
        #expect(fake.attempts.withLock { $0 } == ["slow": 1])
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
            guard case .failed(_, true, _) = await fcm.send(["token": "down"]) else {
                Issue.record("must give up, retryable")
                return
            }
        }
        #expect(fake.attempts.withLock { $0["flaky"] } == 3)
        #expect(fake.attempts.withLock { $0["down"] } == 4)
    }

    @Test func aRefusedConnectionIsRetriedThenReportedRetryable() async throws {
        let port = try GoogleFirestoreEmulator.freePort()  // nothing listens there
        guard case .failed(_, true, _) = await client(port, timeout: .milliseconds(300)).send(["token": "t"]) else {
            Issue.record("connection refused must be retryable")
            return
        }
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
