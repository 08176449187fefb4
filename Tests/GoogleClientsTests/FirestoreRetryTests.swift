import AsyncHTTPClient
import FirestoreModel
import Foundation
import GoogleClients
import HeraldHTTPClient
import HeraldTesting
import Hummingbird
import Testing

/// Retries where Google says they are safe, within a bounded time; nowhere else.
@Suite struct FirestoreRetryTests {
    let fast = RetryPolicy(maximumAttempts: 4, initialDelay: .milliseconds(10), maximumDelay: .milliseconds(40), totalBudget: .seconds(60))

    /// Answers each request with the next scripted (status, body, retry-after); then 200.
    func flaky(_ script: [(HTTPResponse.Status, String, String?)], calls: Counter, delay: Duration = .zero) -> Router<BasicRequestContext> {
        let router = Router()
        router.post("**") { request, _ -> Response in
            let n = calls.increment()
            try await Task.sleep(for: delay)
            if n <= script.count {
                let (status, body, after) = script[n - 1]
                var headers: HTTPFields = [.contentType: "application/json"]
                if let after { headers[.retryAfter] = after }
                return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
            }
            let ok =
                request.uri.path.hasSuffix(":commit")
                ? #"{"commitTime": "2026-11-20T09:00:00Z", "writeResults": [{}]}"#
                : request.uri.path.hasSuffix(":beginTransaction") ? #"{"transaction": "dHg="}"# : "[]"
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: ok)))
        }
        return router
    }

    func client(_ port: Int, timeout: Duration = .seconds(10)) throws -> FirestoreClient {
        FirestoreClient(
            project: "p", endpoint: "http://127.0.0.1:\(port)", credentials: EmulatorCredentials(), httpClient: .shared,
            readRetry: fast, writeRetry: fast, requestTimeout: timeout)
    }

    static func error(_ code: Int, _ status: String) -> String { #"{"error": {"code": \#(code), "message": "injected", "status": "\#(status)"}}"# }

    @Test func readsAreRetriedOnUnavailableAndThrottling() async throws {
        let calls = Counter()
        try await withTestHTTPServer(
            flaky(
                [
                    (.serviceUnavailable, Self.error(503, "UNAVAILABLE"), nil),
                    (.tooManyRequests, Self.error(429, "RESOURCE_EXHAUSTED"), "1"),
                ], calls: calls)
        ) { port in
            let start = ContinuousClock.now
            _ = try await client(port).batchGet([try DocumentName(project: "p", path: "a/b")])
            #expect(ContinuousClock.now - start >= .seconds(1))  // Retry-After honoured
        }
        #expect(calls.value == 3)
    }

    /// The record of pushes sent must land before the push lease ends: an attempt that gets no answer may
    /// take only a third of what is left, so a stalled first attempt (20 s per attempt, 12 s left) leaves
    /// time for more. Taking the whole attempt time, it used up the deadline.
    @Test func anEssentialWriteSpreadsItsAttemptsOverItsDeadline() async throws {
        let calls = Counter()
        let release = Flag()
        let router = Router()
        router.post("**") { _, _ -> Response in
            // The first attempt is never answered while the write lasts.
            if calls.increment() == 1 { while !release.isSet { try await Task.sleep(for: .milliseconds(20)) } }
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: #"{"commitTime": "2026-11-20T09:00:00Z", "writeResults": [{}]}"#)))
        }
        try await withTestHTTPServer(router) { port in
            defer { release.set() }
            let write = Write(.update(try DocumentName(project: "p", path: "ledger/e1"), fields: [:], mask: []), precondition: .exists(true))
            let deadline = ContinuousClock.now + .seconds(12)
            _ = try await client(port, timeout: .seconds(20)).commitIdempotent([write], retry: .until(deadline), deadline: deadline, essential: true)
            #expect(ContinuousClock.now < deadline)
        }
        #expect(calls.value >= 2)
    }

    @Test func commitsAreRetriedOnlyWhenGoogleSaysTheyWereNotApplied() async throws {
        let calls = Counter()
        try await withTestHTTPServer(flaky([(.serviceUnavailable, Self.error(503, "UNAVAILABLE"), nil)], calls: calls)) { port in
            _ = try await client(port).commit([Write(.delete(try DocumentName(project: "p", path: "a/b")))])
        }
        #expect(calls.value == 2)
        let refused = Counter()
        _ = try await withTestHTTPServer(flaky([(.conflict, Self.error(409, "ALREADY_EXISTS"), nil)], calls: refused)) { port in
            await #expect { _ = try await client(port).commit([Write(.delete(try DocumentName(project: "p", path: "a/b")))]) } throws: {
                ($0 as? GoogleAPIError)?.status == .alreadyExists
            }
        }
        #expect(refused.value == 1)
    }

    @Test func aTransactionStartsAgainWhenItsCommitIsAborted() async throws {
        let calls = Counter()
        let bodies = Counter()
        // begin, commit (ABORTED), begin, commit (ok)
        try await withTestHTTPServer(flaky([(.ok, #"{"transaction": "dHg="}"#, nil), (.conflict, Self.error(409, "ABORTED"), nil)], calls: calls)) { port in
            let result = try await client(port).runTransaction { tx in
                _ = bodies.increment()
                return ([Write(.delete(try DocumentName(project: "p", path: "a/b")))], "done")
            }
            #expect(result == "done")
        }
        #expect(bodies.value == 2)
        #expect(calls.value == 4)
    }

    @Test func theRetryBudgetIsBounded() async throws {
        let calls = Counter()
        let always = Array(repeating: (HTTPResponse.Status.serviceUnavailable, Self.error(503, "UNAVAILABLE"), String?.none), count: 50)
        _ = try await withTestHTTPServer(flaky(always, calls: calls)) { port in
            await #expect { _ = try await client(port).batchGet([try DocumentName(project: "p", path: "a/b")]) } throws: {
                ($0 as? GoogleAPIError)?.status == .unavailable
            }
        }
        #expect(calls.value == 4)
    }

    @Test func noRetryStartsPastTheTimeBudget() async throws {
        let calls = Counter()
        let always = Array(repeating: (HTTPResponse.Status.serviceUnavailable, Self.error(503, "UNAVAILABLE"), String?.none), count: 50)
        let tight = RetryPolicy(maximumAttempts: 20, initialDelay: .milliseconds(150), maximumDelay: .milliseconds(150), totalBudget: .milliseconds(400))
        _ = try await withTestHTTPServer(flaky(always, calls: calls)) { port in
            let db = FirestoreClient(
                project: "p", endpoint: "http://127.0.0.1:\(port)", credentials: EmulatorCredentials(), httpClient: .shared, readRetry: tight)
            await #expect { _ = try await db.batchGet([try DocumentName(project: "p", path: "a/b")]) } throws: { $0 is GoogleAPIError }
        }
        // Delays of 75–150 ms within 400 ms: a handful of attempts at most, far from the 20 allowed.
        #expect(calls.value >= 1 && calls.value <= 6)
    }

    @Test func aResetConnectionIsRetriedForReadsAndHandedBackForCommits() async throws {
        let server = try ResettingServer()
        let db = try client(server.port, timeout: .seconds(2))
        await #expect { _ = try await db.batchGet([try DocumentName(project: "p", path: "a/b")]) } throws: { $0 is TransportError }
        #expect(server.connections == 4)
        // An ambiguous commit failure is not retried here: the caller's preconditions make its redo safe.
        await #expect { _ = try await db.commit([Write(.delete(try DocumentName(project: "p", path: "a/b")))]) } throws: { $0 is TransportError }
        #expect(server.connections == 5)
    }

    /// Five requests in a row without an answer open the breaker: the next calls fail at once, without a
    /// connection, saying when to come back; once that time has passed one probe goes out. An essential
    /// record still gets its tries.
    @Test func aServiceThatStopsAnsweringIsNotCalledForAWhile() async throws {
        let server = try ResettingServer()
        let db = FirestoreClient(
            project: "p", endpoint: "http://127.0.0.1:\(server.port)", credentials: EmulatorCredentials(), httpClient: .shared,
            readRetry: .none, writeRetry: .none, requestTimeout: .seconds(5))
        let name = try DocumentName(project: "p", path: "a/b")
        for _ in 0..<5 { await #expect { _ = try await db.batchGet([name]) } throws: { $0 is TransportError } }
        #expect(server.connections == 5)
        let clock = ContinuousClock()
        let start = clock.now
        await #expect { _ = try await db.batchGet([name]) } throws: { error in
            guard let transport = error as? TransportError, let after = transport.retryAfterSeconds else { return false }
            return (1...5).contains(after) && transport.description.contains("not calling it")
        }
        #expect(clock.now - start < .seconds(3) && server.connections == 5, "no connection while the breaker is open")
        await #expect { _ = try await db.commitIdempotent([Write(.delete(name))], retry: nil, essential: true) } throws: { $0 is TransportError }
        #expect(server.connections == 6, "the record of pushes sent is tried anyway")
        try await Task.sleep(for: .seconds(5.2))
        await #expect { _ = try await db.batchGet([name]) } throws: { $0 is TransportError }
        #expect(server.connections == 7, "one probe once the open time is over")
        await #expect { _ = try await db.batchGet([name]) } throws: { ($0 as? TransportError)?.retryAfterSeconds != nil }
        #expect(server.connections == 7, "the failed probe opened it again")
    }

    /// Callers that stop waiting (the check of the badges given up at its deadline) do not open the
    /// breaker: counted as unanswered, six of them stopped every call to Firestore for 5 s.
    @Test func callersThatStopWaitingDoNotOpenTheBreaker() async throws {
        let calls = Counter()
        _ = try await withTestHTTPServer(flaky([], calls: calls, delay: .seconds(3))) { port in
            let db = FirestoreClient(
                project: "p", endpoint: "http://127.0.0.1:\(port)", credentials: EmulatorCredentials(), httpClient: .shared,
                readRetry: .none, writeRetry: .none, requestTimeout: .seconds(10))
            let name = try DocumentName(project: "p", path: "a/b")
            for _ in 0..<6 {
                let before = calls.value
                let read = Task { try await db.batchGet([name]) }
                try await waitUntil(timeout: .seconds(30)) { calls.value > before }
                read.cancel()
                _ = await read.result
            }
            // Refused at once ("not calling it") when the breaker had opened.
            let before = calls.value
            _ = try await db.batchGet([name])
            #expect(calls.value == before + 1)
        }
    }

    /// Waits for `condition`, looking every 20 ms.
    func waitUntil(timeout: Duration, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            try #require(ContinuousClock.now < deadline, "not so within \(timeout)")
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    @Test func aTimedOutReadIsRetried() async throws {
        let calls = Counter()
        _ = try await withTestHTTPServer(flaky([], calls: calls, delay: .milliseconds(600))) { port in
            await #expect { _ = try await client(port, timeout: .milliseconds(200)).batchGet([try DocumentName(project: "p", path: "a/b")]) } throws: {
                $0 is TransportError
            }
        }
        #expect(calls.value >= 2)
    }

    /// Firestore refusing the credentials says which fix by Google's `ErrorInfo` reason, as FCM's refusal does.
    @Test func aRefusalOfTheCredentialsNamesItsFix() {
        func refusal(_ reason: String?) -> GoogleAPIError {
            let info = reason.map { #", "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "\#($0)"}]"# } ?? ""
            let body = #"{"error": {"code": 403, "message": "denied", "status": "PERMISSION_DENIED"\#(info)}}"#
            return GoogleAPIError(httpStatus: 403, body: Array(body.utf8), retryAfter: nil)
        }
        func fix(_ error: GoogleAPIError) -> String { error.credentialsFix(api: "firestore.googleapis.com", role: "roles/datastore.user") }
        #expect(refusal("SERVICE_DISABLED").reason == "SERVICE_DISABLED")
        #expect(fix(refusal("SERVICE_DISABLED")) == "enable the API firestore.googleapis.com in the project (it is turned off)")
        #expect(fix(refusal("IAM_PERMISSION_DENIED")) == "grant the service account roles/datastore.user")
        #expect(fix(refusal(nil)).contains("roles/datastore.user") && fix(refusal(nil)).contains("enable the API"))
        let unauthenticated = GoogleAPIError(httpStatus: 401, body: Array(#"{"error": {"status": "UNAUTHENTICATED"}}"#.utf8), retryAfter: nil)
        #expect(fix(unauthenticated).contains("not valid"))
    }
}
