import AsyncHTTPClient
import EmbeddedFirestore
import FirestoreModel
import Foundation
import HeraldTesting
import Hummingbird
import JWTKit
import LocalCloud
import Synchronization
import Testing
import WireFormats

@Suite struct SchedulerTests {
    @Test func cronSchedulesNameTheRightMinutes() throws {
        let start = Date(timeIntervalSince1970: 1_795_000_000)  // 2026-11-18T08:26:40Z, a Wednesday
        #expect(try CronSchedule("* * * * *").next(after: start).timeIntervalSince1970 == 1_795_000_020)
        let daily = try CronSchedule("0 3 * * *").next(after: start)
        #expect(daily.timeIntervalSince1970.truncatingRemainder(dividingBy: 86400) == 3 * 3600)
        #expect(daily.timeIntervalSince(start) < 86400 && daily > start)
        #expect(try CronSchedule("*/15 * * * *").next(after: start).timeIntervalSince1970.truncatingRemainder(dividingBy: 900) == 0)
        #expect(try CronSchedule("30 9 * * 1-5").next(after: start).timeIntervalSince(start) < 86400 * 2)
        for bad in ["* * * *", "61 * * * *", "*/0 * * * *", "a b c d e", "0 0 31 2 *", "5-1 * * * *", "0 0 * * 8", "0 0 L * *"] {
            #expect(throws: LocalAPIError.self) { try CronSchedule(bad) }
        }
        // Unix cron's rule: both days restricted, either matches. The 13th or a Friday, not a Friday the 13th.
        let fridayOr13th = try CronSchedule("0 0 13 * 5")
        let friday = Date(timeIntervalSince1970: 1_795_132_800)  // 2026-11-20, a Friday
        #expect(fridayOr13th.next(after: start) == friday)
        #expect(try CronSchedule("0 0 * * FRI").next(after: start) == friday && (try CronSchedule("0 0 * * 7")).next(after: start) == friday + 2 * 86400)
        #expect(try CronSchedule("0 0 1 jan *").next(after: start).timeIntervalSince1970 == 1_798_761_600)  // 2027-01-01
    }

    /// croniter (PyPI) as the oracle: thousands of random schedules, each from a random time, its next
    /// three runs (or its refusal) the same.
    @Test func cronSchedulesAgreeWithCroniter() async throws {
        let python = try await PythonReference.forTest(importing: "croniter")
        var rng = SeededRandom(seed: 13)
        func item(_ range: ClosedRange<Int>, names: [String]) -> String {
            // croniter 7 reads a range of one value (`5-5`) as `*`: the oracle is wrong there, so ranges span two values at least.
            let low = Int.random(in: range.lowerBound...(range.upperBound - 1), using: &rng)
            let high = Int.random(in: (low + 1)...range.upperBound, using: &rng)
            func shown(_ value: Int) -> String {
                guard !names.isEmpty, Bool.random(using: &rng) else { return String(value) }
                let index = value - (range.lowerBound == 1 ? 1 : 0)
                return names.indices.contains(index) ? names[index] : String(value)
            }
            switch Int.random(in: 0...9, using: &rng) {
            case 0: return "*"
            case 1, 2: return shown(low)
            case 3, 4: return "\(shown(low))-\(shown(high))"
            case 5: return "*/\(Int.random(in: 1...(range.count / 2 + 1), using: &rng))"
            case 6: return "\(low)-\(high)/\(Int.random(in: 1...5, using: &rng))"
            case 7: return "\(low)/\(Int.random(in: 1...7, using: &rng))"
            default: return (0..<Int.random(in: 2...3, using: &rng)).map { _ in shown(Int.random(in: range, using: &rng)) }.joined(separator: ",")
            }
        }
        let fields: [(ClosedRange<Int>, [String])] = [
            (0...59, []), (0...23, []), (1...31, []), (1...12, CronSchedule.monthNames), (0...7, CronSchedule.dayNames),
        ]
        var cases: [(expression: String, after: Int64)] = []
        for _ in 0..<3000 {
            // Mostly "*" in the minute and hour, so day rules are what is tried.
            let expression = fields.enumerated().map { index, field in
                index < 2 && Bool.random(using: &rng) ? (Bool.random(using: &rng) ? "0" : "*") : item(field.0, names: field.1)
            }.joined(separator: " ")
            cases.append((expression, Int64.random(in: 946_684_800...2_208_988_800, using: &rng)))
        }
        // Schedules both must refuse: no such day, values out of range.
        for refused in ["0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 * * 8", "61 * * * *", "0 24 * * *", "0 0 0 * *", "0 0 * 13 *"] {
            cases.append((refused, 1_795_000_000))
        }
        let input = cases.map { #"{"expression": "\#($0.expression)", "after": \#($0.after), "count": 3}"# }.joined(separator: "\n") + "\n"
        let script = TestPaths.packageRoot.appendingPathComponent("Tests/Python/cron_reference.py")
        let result = try await ProcessRunner.run(python, [script.path], stdin: Data(input.utf8))
        #expect(result.status == 0, "\(result.stderr)")
        let answers = result.stdoutText.split(separator: "\n").map { try? JSONValue(parsing: Array($0.utf8)) }
        try #require(answers.count == cases.count, "\(answers.count) answers")
        var mismatches: [String] = []
        var refused = 0
        for (index, (expression, after)) in cases.enumerated() {
            let expected = answers[index]?["next"]?.arrayValue?.compactMap(\.int64Value)
            let schedule = try? CronSchedule(expression)
            var actual: [Int64]?
            if let schedule {
                var runs: [Int64] = []
                var at = Date(timeIntervalSince1970: Double(after))
                for _ in 0..<3 {
                    at = schedule.next(after: at)
                    runs.append(Int64(at.timeIntervalSince1970))
                }
                actual = runs.contains(Int64(Date.distantFuture.timeIntervalSince1970)) ? nil : runs
            }
            if expected == nil { refused += 1 }
            if actual != expected {
                mismatches.append(
                    "\(expression) after \(after): croniter \(answers[index].map { "\($0)" } ?? "?"), Herald \(actual.map { "\($0)" } ?? "refused")")
            }
        }
        print("cron: \(cases.count) schedules against croniter (\(refused) refused by croniter), \(mismatches.count) mismatches")
        #expect(mismatches.isEmpty, "\(mismatches.count) mismatches: \(mismatches.prefix(10).joined(separator: "\n"))")
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
