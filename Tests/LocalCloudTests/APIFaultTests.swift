import AsyncHTTPClient
import FirestoreModel
import GoogleClients
import HeraldHTTPClient
import HeraldTesting
import LocalCloud
import Testing
import WireFormats

/// The faults the chaos suite injects on Google's APIs mean what they say: the caller never sees a
/// success, and only `resetAfterApplying` carries the request out.
@Suite struct APIFaultTests {
    @Test(arguments: APIFaultPlan.Kind.allCases.filter { $0 != .slow })
    func anInjectedFaultIsNeverASuccess(kind: APIFaultPlan.Kind) async throws {
        try await withLocalCloud { local in
            local.cloud.faults.plan = APIFaultPlan(rate: 1, kinds: [.fcm: [kind]], hangFor: .milliseconds(50))
            let sends = 30
            var successes = 0
            for i in 0..<sends {
                // A client per send: one client's circuit breaker would stop calling after five failures in a row.
                let fcm = FCMClient(
                    project: "herald-test", endpoint: local.baseURL, credentials: EmulatorCredentials(), httpClient: .shared,
                    retry: RetryPolicy(maximumAttempts: 1))
                if case .sent = await fcm.send(["token": .string("tok-\(i)"), "data": ["a": "b"]]) { successes += 1 }
            }
            #expect(successes == 0)
            let recorded = try await local.cloud.fcm.messages().count
            #expect(recorded == (kind == .resetAfterApplying ? sends : 0))
            #expect(local.cloud.faults.injected == ["fcm.\(kind.rawValue)": sends])
            #expect(local.cloud.faults.requests["fcm"] == sends)
        }
    }

    /// A slow answer comes after the work is done: a caller whose deadline passes first sees no answer,
    /// though FCM recorded the push (as a real FCM that delivers but answers late).
    @Test func aSlowAnswerIsLateButTheWorkIsDone() async throws {
        try await withLocalCloud { local in
            local.cloud.faults.plan = APIFaultPlan(rate: 1, kinds: [.fcm: [.slow]], slowFor: .seconds(4))
            let fcm = FCMClient(
                project: "herald-test", endpoint: local.baseURL, credentials: EmulatorCredentials(), httpClient: .shared,
                retry: RetryPolicy(maximumAttempts: 1))
            let result = await fcm.send(["token": "tok-late", "data": ["a": "b"]], deadlines: .init(lastStart: .now + .seconds(1), finish: .now + .seconds(2)))
            guard case .unanswered = result else {
                Issue.record("\(result)")
                return
            }
            var recorded = 0
            for _ in 0..<50 where recorded == 0 {
                recorded = try await local.cloud.fcm.messages().count
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(recorded == 1)
            #expect(await fcm.send(["token": "tok-patient", "data": ["a": "b"]]).isSent, "answered late, within the default timeout")
        }
    }

    /// A token endpoint whose connection drops, before or during its answer, is unavailable for now
    /// (the caller retries), never a refusal and never an unclassified error.
    @Test(arguments: [APIFaultPlan.Kind.reset, .resetAfterApplying, .timeout, .unavailable, .rateLimited])
    func aFailingTokenEndpointIsTransient(kind: APIFaultPlan.Kind) async throws {
        try await withLocalCloud { local in
            local.cloud.faults.plan = APIFaultPlan(rate: 1, kinds: [.token: [kind]], hangFor: .milliseconds(50))
            let key = try ServiceAccountKey(contentsOf: try local.cloud.writeKeyFile(baseURL: local.baseURL))
            let credentials = try ServiceAccountCredentials(
                key: key, mode: .tokenExchange(scopes: [ServiceAccountCredentials.cloudPlatformScope]), httpClient: .shared)
            await #expect { try await credentials.token() } throws: { FailureKind($0) == .notSent }
        }
    }

    /// The admin API takes the plan as JSON, gives it back with what was injected, and refuses nonsense.
    @Test func theAdminAPISetsAndReportsThePlan() async throws {
        try await withLocalCloud { local in
            let plan: JSONValue = [
                "rate": .number("0.5"), "kinds": ["firestore": ["unavailable", "timeout"]], "hangMilliseconds": 10, "sparedUserAgent": "app",
            ]
            let set = try await HTTPClient.shared.post(
                "\(local.baseURL)/herald/faults", headers: ["content-type": "application/json"],
                body: Array(plan.serialized().utf8))
            #expect(set.status == 200)
            #expect(
                local.cloud.faults.plan
                    == APIFaultPlan(rate: 0.5, kinds: [.firestore: [.unavailable, .timeout]], hangFor: .milliseconds(10), sparedUserAgent: "app"))
            let report = try JSONValue(parsing: Array(try await HTTPClient.shared.get("\(local.baseURL)/herald/faults").body.utf8))
            #expect(report["plan"]?["kinds"]?["firestore"] == ["unavailable", "timeout"])
            for bad: JSONValue in [["rate": 2], ["kinds": ["storage": ["reset"]]], ["kinds": ["fcm": ["explode"]]]] {
                let answer = try await HTTPClient.shared.post(
                    "\(local.baseURL)/herald/faults", headers: ["content-type": "application/json"],
                    body: Array(bad.serialized().utf8))
                #expect(answer.status == 400, "\(bad.serialized())")
            }
        }
    }
}
