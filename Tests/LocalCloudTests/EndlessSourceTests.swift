import FirestoreModel
import Foundation
import GoogleClients
import HeraldHTTPClient
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

    /// A Firestore whose runQuery answers every page with the same full page: the pages never advance.
    static func samePage(requests: SharedCount) -> Router<BasicRequestContext> {
        let router = Router()
        router.post("**") { _, _ -> String in
            _ = requests.next()
            let documents = (0..<3).map {
                #"{"document": {"name": "projects/p/databases/(default)/documents/users/u\#($0)", "fields": {}, "createTime": "2026-01-01T00:00:00Z", "updateTime": "2026-01-01T00:00:00Z"}, "readTime": "2026-01-01T00:00:00Z"}"#
            }
            return "[" + documents.joined(separator: ",") + "]"
        }
        return router
    }

    @Test func aQueryWhosePagesDoNotAdvanceIsStopped() async throws {
        let requests = SharedCount()
        try await withTestHTTPServer(Self.samePage(requests: requests)) { port in
            let firestore = FirestoreClient(project: "p", endpoint: "http://127.0.0.1:\(port)", credentials: EmulatorCredentials(), httpClient: .shared)
            var pages = 0
            let error = await #expect(throws: TransportError.self) {
                try await firestore.forEachPage(of: StructuredQuery(collectionID: "users"), pageSize: 3) { _ in pages += 1 }
            }
            #expect(requests.value == 2 && pages == 2, "the second page ended where the first did")
            #expect(
                error?.description.contains("127.0.0.1:\(port)") == true && error?.description.contains("do not advance") == true,
                "\(String(describing: error))")
        }
    }

    /// A dead-letter subscription that answers every pull with one more new message, or with the same
    /// message again: `herald dead-letters` lists what came, bounded by pulls, and says where it stopped.
    static func endlessPulls(fresh: Bool, requests: SharedCount) -> Router<BasicRequestContext> {
        let router = Router()
        router.post("**") { request, _ -> String in
            guard request.uri.path.hasSuffix(":pull") else { return request.uri.path.contains("entries:list") ? #"{"entries": []}"# : "{}" }
            let count = requests.next()
            let id = fresh ? count : 1
            return
                #"{"receivedMessages": [{"ackId": "ack-\#(count)", "message": {"messageId": "m-\#(id)", "data": "", "attributes": {"ce-id": "e-\#(id)"}, "publishTime": "2026-12-01T00:00:00Z"}}]}"#
        }
        return router
    }

    @Test(arguments: [true, false])
    func aDeadLetterSubscriptionThatNeverEmptiesIsBounded(fresh: Bool) async throws {
        let requests = SharedCount()
        try await withTestHTTPServer(Self.endlessPulls(fresh: fresh, requests: requests)) { port in
            var environment = ProcessInfo.processInfo.environment
            environment["PUBSUB_EMULATOR_HOST"] = "127.0.0.1:\(port)"
            environment["HERALD_LOGGING_ENDPOINT"] = "http://127.0.0.1:\(port)"
            let run = try await ProcessRunner.run(
                URL(fileURLWithPath: "/usr/bin/timeout"), ["60", TestPaths.executable("herald").path, "dead-letters", "e2e"], environment: environment)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(requests.value <= 100, "bounded by pulls: \(requests.value)")
            let listed = fresh ? "100 dead letters" : "1 dead letter "
            #expect(run.stdoutText.hasPrefix(listed), "\(run.stdoutText.prefix(300))")
            #expect(run.stderr.contains("after 100 pulls") == fresh, "\(run.stderr)")
        }
    }
}
