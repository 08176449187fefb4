import Foundation
import HeraldTesting
import Hummingbird
import Testing

/// A source whose answers never end is bounded by pages, not only by what it yields: `herald schema
/// infer --from` against a Firestore whose every page is empty but names a next one exits non-zero,
/// naming the source and what it did, after a bounded number of requests.
@Suite struct EndlessSourceTests {
    /// A Firestore that answers `:listCollectionIds` with no ids and a next page, forever: a fresh token
    /// each time, or the same one.
    static func endless(freshTokens: Bool, requests: SharedCount) -> Router<BasicRequestContext> {
        let router = Router()
        router.get("/") { _, _ in #"{"project": "endless"}"# }
        router.post("**") { _, _ -> String in
            let count = requests.next()
            return #"{"collectionIds": [], "nextPageToken": "page-\#(freshTokens ? count : 1)"}"#
        }
        return router
    }

    @Test(arguments: [true, false])
    func aFirestoreThatPagesForeverIsNamedAndLeft(freshTokens: Bool) async throws {
        let requests = SharedCount()
        try await withTestHTTPServer(Self.endless(freshTokens: freshTokens, requests: requests)) { port in
            let started = ContinuousClock.now
            // Under `timeout`: a loop that never ends fails the test (status 124) instead of holding it.
            let run = try await ProcessRunner.run(
                URL(fileURLWithPath: "/usr/bin/timeout"),
                ["60", TestPaths.executable("herald").path, "schema", "infer", "--from", "127.0.0.1:\(port)", "--project", "endless"])
            #expect(run.status != 0, "\(run.stdoutText.suffix(500))")
            #expect(run.stderr.contains("127.0.0.1:\(port)") && run.stderr.contains("listCollectionIds"), "\(run.stderr)")
            #expect(run.stderr.contains(freshTokens ? "still a next page" : "page token it gave before"), "\(run.stderr)")
            #expect(requests.value <= 40, "bounded by pages")
            #expect(ContinuousClock.now - started < .seconds(60))
        }
    }
}
