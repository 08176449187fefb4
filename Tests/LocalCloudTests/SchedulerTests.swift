import AsyncHTTPClient
import FirestoreModel
import Foundation
import HeraldTesting
import Hummingbird
import JWTKit
import LocalCloud
import Synchronization
import Testing

@Suite struct SchedulerTests {
    @Test func cronSchedulesNameTheRightMinutes() throws {
        let start = Date(timeIntervalSince1970: 1_795_000_000)  // 2026-11-18T08:26:40Z, a Wednesday
        #expect(try CronSchedule("* * * * *").next(after: start).timeIntervalSince1970 == 1_795_000_020)
        let daily = try CronSchedule("0 3 * * *").next(after: start)
        #expect(daily.timeIntervalSince1970.truncatingRemainder(dividingBy: 86400) == 3 * 3600)
        #expect(daily.timeIntervalSince(start) < 86400 && daily > start)
        #expect(try CronSchedule("*/15 * * * *").next(after: start).timeIntervalSince1970.truncatingRemainder(dividingBy: 900) == 0)
        #expect(try CronSchedule("30 9 * * 1-5").next(after: start).timeIntervalSince(start) < 86400 * 2)
        for bad in ["* * * *", "61 * * * *", "*/0 * * * *", "a b c d e"] {
            #expect(throws: LocalAPIError.self) { try CronSchedule(bad) }
        }
    }

    @Test func aJobCallsItsURLWithAnIdentityTokenTheCallerCanVerify() async throws {
        let authorizations = Mutex<[String]>([])
        let router = Router()
        router.post("/sweep") { request, _ in
            authorizations.withLock { $0.append(request.headers[.authorization] ?? "") }
            return Response(status: .ok)
        }
        try await withTestHTTPServer(router) { port in
            try await withLocalCloud { local in
                let url = "http://127.0.0.1:\(port)/sweep"
                local.cloud.scheduler.register(
                    ScheduledJob(name: "sweep", schedule: try CronSchedule("0 0 1 1 *"), url: url, audience: "https://sweeper.example"))
                // Run it now through the admin API, as a person would.
                let answer = try await HTTPClient.shared.post("\(local.baseURL)/herald/scheduler/jobs/sweep:run", headers: [:], body: [])
                #expect(try JSONValue(parsing: answer.body)["status"] == 200)
                let header = try #require(authorizations.withLock { $0.first })
                #expect(header.hasPrefix("Bearer "))
                let jwks = try await HTTPClient.shared.get("\(local.baseURL)/herald/oidc/jwks")
                let keys = try await JWTKeyCollection().add(jwks: try JSONDecoder().decode(JWKS.self, from: Data(jwks.body.utf8)))
                let claims = try await keys.verify(String(header.dropFirst(7)), as: IdentityTokenClaims.self)
                #expect(claims.aud.value == ["https://sweeper.example"])
            }
        }
    }
}
