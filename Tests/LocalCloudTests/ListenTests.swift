import FirestoreModel
import Foundation
import HeraldTesting
import LocalCloud
import Testing
import WireFormats

/// Real-time listeners over Firestore's gRPC `Listen`, driven by Google's own Python client
/// (`Tests/Python/listen_check.py`); Google's emulator is the oracle where it is installed.
@Suite(.serialized) struct ListenTests {
    static let script = TestPaths.packageRoot.appendingPathComponent("Tests/Python/listen_check.py")

    static func run(
        _ python: URL, host: String, mode: String, project: String = "listen-\(UInt32.random(in: 0...UInt32.max))", arguments: [String] = []
    ) async throws -> JSONValue {
        var environment = ProcessInfo.processInfo.environment
        environment["FIRESTORE_EMULATOR_HOST"] = host
        let run = try await ProcessRunner.run(python, [script.path, project, mode] + arguments, environment: environment)
        #expect(run.status == 0, "\(mode): \(run.stderr.suffix(3000))")
        return try JSONValue(parsing: run.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// `on_snapshot` on a document and on a query: one callback per write, in order, including a document
    /// leaving the query while it still exists and a delete; the same callbacks as Google's emulator gives.
    @Test func snapshotsSeeExactlyTheWritesInOrder() async throws {
        let python = try await PythonReference.forTest(importing: "google.cloud.firestore_v1")
        let herald = try await FirestoreBackend.herald.run { try await Self.run(python, host: $0, mode: "snapshots") }
        let expected: JSONValue = [
            "document": [[["title": "Family", "n": 1]], [["title": "Family", "n": 2]], []],
            "query": [
                ["ids": ["r1"], "changes": [["ADDED", "r1"]]], ["ids": ["r1"], "changes": [["MODIFIED", "r1"]]],
                ["ids": ["r1", "r2"], "changes": [["ADDED", "r2"]]], ["ids": ["r1"], "changes": [["REMOVED", "r2"]]],
                ["ids": ["other", "r1"], "changes": [["ADDED", "other"]]], ["ids": ["other"], "changes": [["REMOVED", "r1"]]],
            ],
        ]
        #expect(herald == expected)
        guard GoogleFirestoreEmulator.isInstalled else { try skipTest("Google's Firestore emulator is not installed: Herald's side ran alone") }
        #expect(try await FirestoreBackend.google.run { try await Self.run(python, host: $0, mode: "snapshots") } == herald)
    }

    /// What a client holds after a stream, a reconnect with its resume token, and the second stream,
    /// applied as the client applies them (RESET clears, changes add, deletes and removes take away).
    static func state(after streams: [JSONValue]) -> (documents: Set<String>, filterCounts: [Int]) {
        var documents: Set<String> = []
        var counts: [Int] = []
        for stream in streams {
            for item in stream.arrayValue ?? [] {
                let parts = item.arrayValue ?? []
                switch parts.first?.stringValue {
                case "target_change" where parts[1] == "RESET": documents = []
                case "document_change": documents.insert(parts[1].stringValue ?? "")
                case "document_delete", "document_remove": documents.remove(parts[1].stringValue ?? "")
                case "filter": counts.append(Int(parts[2].serialized()) ?? -1)
                default: break
                }
            }
        }
        return (documents, counts)
    }

    /// A listener that reconnects with its resume token holds what a fresh listener gets. Herald sends
    /// only what changed since the token (a document changed, one added, one deleted) and an existence
    /// filter with the count; Google's emulator resets the target and sends it whole.
    @Test func aResumedListenerGetsOnlyWhatItMissed() async throws {
        let python = try await PythonReference.forTest(importing: "google.cloud.firestore_v1")
        for backend in FirestoreBackend.allCases {
            if backend == .google, !GoogleFirestoreEmulator.isInstalled { continue }
            let result = try await backend.run { try await Self.run(python, host: $0, mode: "resume") }
            let fresh = Self.state(after: [result["fresh"] ?? .null]).documents
            #expect(fresh == ["d1", "d2", "d3"], "\(backend): \(result)")
            let resumed = Self.state(after: [result["first"] ?? .null, result["resumed"] ?? .null])
            #expect(resumed.documents == fresh, "\(backend): \(result)")
            guard backend == .herald else { continue }
            let sent = result["resumed"]?.arrayValue ?? []
            #expect(!sent.contains { $0.arrayValue?[1] == "RESET" }, "\(sent)")
            let changed = sent.filter { $0.arrayValue?.first == "document_change" }.compactMap { $0.arrayValue?[1].stringValue }
            #expect(changed == ["d1", "d3"], "only what changed since the token: \(sent)")
            #expect(sent.contains { $0 == ["document_delete", "d0"] }, "\(sent)")
            #expect(resumed.filterCounts == [3], "\(sent)")
        }
    }

    /// The chat app's own view, end to end on `herald dev --seed demo`: a listener on Bob's chat list
    /// sees Family's last message and his unread count change when Alice writes (onMessageCreated runs).
    @Test func bobsChatListSeesAlicesMessageArrive() async throws {
        let python = try await PythonReference.forTest(importing: "google.cloud.firestore_v1")
        let dev = try await RunningDev.start(["--seed", "demo"])
        defer { dev.kill() }
        let events = try await Self.run(python, host: dev.base.replacingOccurrences(of: "http://", with: ""), mode: "chatlist", project: "e2e")
        let seen = events.arrayValue ?? []
        let before = try #require(seen.first, "no snapshot: \(dev.output.suffix(2000))")
        let after = try #require(seen.last { $0["last"] == "Listening?" }, "the last message never arrived: \(seen)")
        let unreadBefore = Int(before["unread"]?.serialized() ?? "") ?? 0
        #expect(Int(after["unread"]?.serialized() ?? "") == unreadBefore + 1, "\(seen)")
    }

    /// 100 query listeners while 8 writers commit batches as fast as they go (a debug build: a few
    /// hundred writes a second; the release figures are `Benchmarks/listen_load.py`'s): afterwards every
    /// listener holds exactly what is stored.
    @Test func aHundredListenersConvergeUnderConcurrentWrites() async throws {
        let python = try await PythonReference.forTest(importing: "google.cloud.firestore_v1")
        let result = try await FirestoreBackend.herald.run { try await Self.run(python, host: $0, mode: "load", arguments: ["3"]) }
        #expect(result["converged"] == true, "\(result)")
        #expect(result["wrong"] == 0, "\(result)")
        #expect((result["writes"]?.int64Value ?? 0) > 100, "\(result)")
    }

    /// A listening app while `herald dev` restarts on its data: google-cloud-firestore reconnects with
    /// its resume token, which the new process's feed cannot answer, so the target is reset and sent
    /// whole; the snapshots only ever show states the store held, and end with the one it holds.
    @Test func aListenerCatchesUpAcrossARestartOfHeraldDev() async throws {
        let python = try await PythonReference.forTest(importing: "google.cloud.firestore_v1")
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("herald-restart-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: data) }
        try Data(try await TestKeys.rsaPEM().utf8).write(to: data.appendingPathComponent("local-key.pem"))
        let host = "127.0.0.1:\(try GoogleFirestoreEmulator.freePort())"
        let result = try await Self.run(
            python, host: host, mode: "restart", project: "restart", arguments: [TestPaths.executable("herald").path, data.path])
        let snapshots = (result["snapshots"]?.arrayValue ?? []).map { ($0.arrayValue ?? []).compactMap(\.stringValue) }
        #expect(result["reconnected"] == true, "\(result)")
        #expect(snapshots.first == [] && snapshots.last == ["r2"] && snapshots.contains(["r1"]), "\(snapshots)")
        #expect(snapshots.allSatisfy { [[], ["r1"], ["r2"]].contains($0) }, "only states the store held: \(snapshots)")
        #expect(snapshots.drop { $0 != ["r1"] }.allSatisfy { !$0.isEmpty }, "nothing lost on the way: \(snapshots)")
    }

    /// The Write stream the iOS and Android SDKs send their writes on: opened, two writes committed on
    /// it, a token asked for; the writes are stored.
    @Test func theWriteStreamCommitsWhatItCarries() async throws {
        let python = try await PythonReference.forTest(importing: "google.cloud.firestore_v1")
        let result = try await FirestoreBackend.herald.run { try await Self.run(python, host: $0, mode: "writestream") }
        #expect(result["handshake"] == [true, true, 0], "\(result)")
        #expect(result["commit"] == [2, true, true], "\(result)")
        #expect(result["token"] == [0, true], "\(result)")
        #expect(result["stored"] == ["n0": 0, "n1": 1], "\(result)")
    }

    /// Calls no client should make get a status at once, never a hang: bytes that are not the request,
    /// a method or service not served, a request for another project, a query without its query.
    @Test func hostileCallsGetAStatusAtOnce() async throws {
        let python = try await PythonReference.forTest(importing: "grpc")
        let script = TestPaths.packageRoot.appendingPathComponent("Tests/Python/grpc_hostile.py")
        var options = LocalCloudOptions.testing
        options.singleProject = true
        options.project = "served"
        try await withLocalCloud(options) { local in
            let started = ContinuousClock.now
            let run = try await ProcessRunner.run(python, [script.path, local.host, "served"])
            #expect(run.status == 0, "\(run.stderr.suffix(2000))")
            let result = try JSONValue(parsing: run.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(
                result == [
                    "garbage": "INVALID_ARGUMENT", "unknownMethod": "UNIMPLEMENTED", "otherService": "UNIMPLEMENTED", "emptyCommit": "OK",
                    "badDatabase": "FAILED_PRECONDITION", "runQueryWithoutQuery": "INVALID_ARGUMENT", "write": "OK",
                    "compressed": "UNIMPLEMENTED", "oversized": "RESOURCE_EXHAUSTED",
                ], "\(result)")
            #expect(ContinuousClock.now - started < .seconds(20))
        }
    }
}
