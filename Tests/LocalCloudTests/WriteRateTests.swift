import AsyncHTTPClient
import FirestoreModel
import Foundation
import GoogleClients
import HeraldTesting
import Testing
import WireFormats

@testable import EmbeddedFirestore
@testable import LocalCloud

/// Busy groups, item 1: `herald dev` shows Firestore's per-document write limit and, with
/// `--write-rate-limit`, models it: a document written more than once a second over 10 s is a WARNING
/// naming who wrote it (and listed for the console); commits to a document beyond its sustained rate
/// wait for admission, and those that cannot be admitted within their deadline fail ABORTED, the same
/// status and message over REST and gRPC.
@Suite struct WriteRateTests {
    static let contention = "Too much contention on these documents. Please try again."

    @Test func aDocumentWrittenTooOftenIsAWarningNamingItsWriters() async throws {
        let dev = try await RunningDev.start(["--no-functions"])
        defer { dev.kill() }
        let url = "\(dev.base)/v1/projects/e2e/databases/(default)/documents/counters/hot?updateMask.fieldPaths=n"
        for n in 0..<25 {
            let answer = try await HTTPClient.shared.send(
                "PATCH", url, headers: ["content-type": "application/json"], body: Array(#"{"fields": {"n": {"integerValue": "\#(n)"}}}"#.utf8))
            #expect(answer.status == 200, "\(answer.body)")
        }
        #expect(
            await dev.waitForOutput(containing: "counters/hot was written", "by app 11", "Firestore sustains about one write a second per document"),
            "\(dev.output.suffix(1500))")
        let writes = try JSONValue(parsing: Array(try await HTTPClient.shared.get("\(dev.base)/herald/writes").body.utf8))
        let hot = try #require(writes["hot"]?.arrayValue?.first, "\(writes)")
        #expect(hot["document"] == "counters/hot" && hot["writers"]?["app"] == .number("25"), "\(writes)")
        #expect((writes["peak"]?["perSecond"]?.serialized()).flatMap(Double.init) ?? 0 >= 2.5)
        #expect(writes["limited"] == false)
        #expect(writes["written"] == .number("25") && writes["refusedForContention"] == .number("0"), "\(writes)")
    }

    @Test func beyondTheSustainedRateCommitsWaitThenFailAborted() async throws {
        var options = LocalCloudOptions.testing
        options.writeRates.limit = true
        options.writeRates.admissionDeadline = .seconds(2)
        try await withLocalCloud(options) { local in
            let url = "\(local.baseURL)/v1/projects/herald-test/databases/(default)/documents:commit"
            let started = ContinuousClock.now
            let answers = try await withThrowingTaskGroup(of: (Int, String, Duration).self) { group in
                for n in 0..<20 {
                    group.addTask {
                        let body =
                            #"{"writes": [{"update": {"name": "projects/herald-test/databases/(default)/documents/counters/hot", "fields": {"n": {"integerValue": "\#(n)"}}}}]}"#
                        let answer = try await HTTPClient.shared.post(url, headers: ["content-type": "application/json"], body: Array(body.utf8))
                        return (answer.status, answer.body, ContinuousClock.now - started)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let admitted = answers.filter { $0.0 == 200 }
            let aborted = answers.filter { $0.0 == 409 }
            // A burst of 5 at once, then one a second for the 2 s deadline; the rest refused at once.
            #expect((6...9).contains(admitted.count) && admitted.count + aborted.count == 20, "\(answers.map(\.0))")
            #expect(admitted.map(\.2).max() ?? .zero >= .seconds(1), "the later ones waited for admission")
            for (_, body, _) in aborted {
                let error = try JSONValue(parsing: Array(body.utf8))["error"]
                #expect(error?["status"] == "ABORTED" && error?["message"]?.stringValue == Self.contention && error?["code"] == .number("409"), "\(body)")
            }
            // Counted as billed writes and refusals.
            let totals = try JSONValue(parsing: Array(try await HTTPClient.shared.get("\(local.baseURL)/herald/writes").body.utf8))
            #expect(
                totals["written"] == .number("\(admitted.count)") && totals["refusedForContention"] == .number("\(aborted.count)"), "\(totals)")
            // gRPC: the same refusal, as status 10.
            let python = try await PythonReference.forTest(importing: "google.cloud.firestore_v1")
            let run = try await ProcessRunner.run(
                python, [TestPaths.packageRoot.appendingPathComponent("Tests/Python/write_contention.py").path, local.host, "herald-test", "20"])
            #expect(run.status == 0, "\(run.stderr.suffix(1500))")
            let result = try JSONValue(parsing: run.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect((result["codes"]?["ABORTED"]?.int64Value ?? 0) > 0 && result["aborted"]?.stringValue == Self.contention, "\(result)")
        }
    }

    /// A commit that writes nothing (its condition failed) takes no place in the document's rate: writers
    /// racing on one document with conditions, most of them losing, once used up its admissions with
    /// commits that wrote nothing, and the winners' next commits were refused ABORTED (five instances of
    /// a function on one busy group dead-lettered a third of their events that way).
    @Test func aCommitThatWritesNothingUsesNoAdmission() async throws {
        var options = LocalCloudOptions.testing
        options.writeRates.limit = true
        options.writeRates.admissionDeadline = .seconds(2)
        try await withLocalCloud(options) { local in
            let db = local.firestore()
            let hot = try db.name("counters/hot")
            _ = try await db.commit([Write(.update(hot, fields: ["n": .integer(0)], mask: nil))])
            // Twenty commits conditional on a version the document is not at: each fails, none writes.
            for n in 1...20 {
                await #expect(throws: (any Error).self) {
                    try await db.commit([Write(.update(hot, fields: ["n": .integer(Int64(n))], mask: nil), precondition: .updateTime(Timestamp(seconds: 1)))])
                }
            }
            // The burst is still there: four writes at once, none waiting for admission.
            let started = ContinuousClock.now
            for n in 21...24 { _ = try await db.commit([Write(.update(hot, fields: ["n": .integer(Int64(n))], mask: nil))]) }
            #expect(ContinuousClock.now - started < .milliseconds(900), "\(ContinuousClock.now - started)")
            let totals = try JSONValue(parsing: Array(try await HTTPClient.shared.get("\(local.baseURL)/herald/writes").body.utf8))
            #expect(totals["written"] == .number("5") && totals["refusedForContention"] == .number("0"), "\(totals)")
        }
    }

    /// A batchWrite's writes are applied one by one: only those applied count as written (billed).
    @Test func onlyTheWritesABatchAppliedAreCounted() async throws {
        try await withLocalCloud { local in
            let db = local.firestore()
            let outcomes = try await db.batchWrite([
                Write(.update(try db.name("counters/a"), fields: ["n": .integer(1)], mask: nil)),
                Write(.update(try db.name("counters/missing"), fields: ["n": .integer(1)], mask: nil), precondition: .exists(true)),
                Write(.update(try db.name("counters/b"), fields: ["n": .integer(1)], mask: nil)),
            ])
            #expect(outcomes.count == 3)
            let totals = try JSONValue(parsing: Array(try await HTTPClient.shared.get("\(local.baseURL)/herald/writes").body.utf8))
            #expect(totals["written"] == .number("2"), "\(totals)")
        }
    }

    /// Firestore bills an aggregation one read per 1,000 documents counted, up to 1,000 being one read, and
    /// one when it counts none; a query a read per document returned, one when none is.
    @Test func aggregationsAndQueriesAreBilledAsFirestoreBillsThem() {
        let billed = BilledOperations()
        for counted in [0, 1, 1000, 1001, 1500, 2000] { billed.aggregated(counting: counted, by: "count") }
        for returned in [0, 3] { billed.queried(returning: returned, by: "query") }
        #expect(billed.byRequester["count"]?.reads == 1 + 1 + 1 + 2 + 2 + 2)
        #expect(billed.byRequester["query"]?.reads == 1 + 3)
    }
}
