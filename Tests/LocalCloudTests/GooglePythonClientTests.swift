import FirestoreModel
import Foundation
import HeraldTesting
import Testing

/// Google's own Python client (google-cloud-firestore over its REST transport) against Herald's
/// local cloud: documents, transforms, queries, batches, collection groups, transactions and a
/// conflict error. (Google's emulator cannot serve as the oracle here: its streamed answers end
/// with a newline after `]`, which google-api-core's REST stream parser rejects.)
@Suite(.serialized) struct GooglePythonClientTests {
    static let script = TestPaths.packageRoot.appendingPathComponent("Tests/Python/firestore_client_check.py")

    static func results(_ python: URL, backend: FirestoreBackend) async throws -> JSONValue? {
        try await backend.run { host in
            let run = try await ProcessRunner.run(python, [script.path, host, "py-\(UInt32.random(in: 0...UInt32.max))"])
            #expect(run.status == 0, "\(backend): \(run.stderr.suffix(3000))")
            return try JSONValue(parsing: run.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    @Test func googlesPythonClientWorksAgainstTheLocalCloud() async throws {
        let python = try await PythonReference.forTest(importing: "google.cloud.firestore_v1")
        let herald = try #require(try await Self.results(python, backend: .herald))
        let expected: JSONValue = [
            "afterBatch": ["alice", "bob"], "afterTransaction": ["alice": 0, "bob": 5],
            "alice": ["age": 31, "name": "Alice", "tags": ["a", "z"], "unread": 3], "aliceSeenIsTime": true, "count": 3,
            "createTwice": "Conflict", "getAll": ["alice"], "groupMessages": ["rooms/r1/messages/m1"], "inNames": ["bob", "carol"],
            "limitDesc": ["carol", "alice"], "missingExists": false, "older": ["alice", "carol"], "orQuery": ["bob", "carol"],
            "startAfter": ["alice", "carol"], "tagA": ["alice", "carol"],
        ]
        #expect(herald == expected)
    }

    /// google-cloud-firestore on its default transport (gRPC) hung for 40 s against the local cloud: the
    /// HTTP/1 server dropped HTTP/2's preface and the client retried in silence. Now the call fails at
    /// once with UNIMPLEMENTED and a message naming what works; REST requests are served as before.
    @Test func aGRPCClientIsAnsweredAtOnceWithWhatWorks() async throws {
        let python = try await PythonReference.forTest(importing: "google.cloud.firestore_v1")
        let script = """
            import json, time
            from google.cloud import firestore
            db = firestore.Client(project="grpc-check")
            start = time.monotonic()
            try:
                db.collection("t").document("a").set({"x": 1}, timeout=30)
                outcome = "written"
            except Exception as error:
                outcome = type(error).__name__ + ": " + str(error)
            print(json.dumps({"outcome": outcome, "seconds": time.monotonic() - start}))
            """
        try await withLocalCloud { local in
            var environment = ProcessInfo.processInfo.environment
            environment["FIRESTORE_EMULATOR_HOST"] = local.host
            let run = try await ProcessRunner.run(python, ["-c", script], environment: environment)
            #expect(run.status == 0, "\(run.stderr.suffix(2000))")
            let answer = try JSONValue(parsing: run.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
            let outcome = answer["outcome"]?.stringValue ?? ""
            #expect(outcome.contains("MethodNotImplemented") && outcome.contains("transport='rest'"), "\(outcome)")
            #expect((Double(answer["seconds"].map { $0.serialized() } ?? "99") ?? 99) < 5, "\(answer)")
            // HTTP/1 on the same port still works.
            #expect(try await local.firestore(project: "grpc-check").get(try DocumentName(project: "grpc-check", path: "t/a")) == nil)
        }
    }

    /// google-auth decides it runs on Google Cloud when the metadata server answers `GET /` with
    /// `Metadata-Flavor: Google`; then it takes the project and tokens from it, as Cloud Run code does.
    @Test func googleAuthFindsTheLocalMetadataServer() async throws {
        let python = try await PythonReference.forTest(importing: "google.auth")
        let script = """
            import json, os, google.auth.transport.requests as r
            from google.auth.compute_engine import _metadata
            request = r.Request()
            print(json.dumps({"onGCE": _metadata.ping(request), "project": _metadata.get_project_id(request),
                              "token": bool(_metadata.get_service_account_token(request)[0])}))
            """
        try await withLocalCloud { local in
            var environment = ProcessInfo.processInfo.environment
            environment["GCE_METADATA_IP"] = local.host
            environment["GCE_METADATA_HOST"] = local.host
            let run = try await ProcessRunner.run(python, ["-c", script], environment: environment)
            #expect(run.status == 0, "\(run.stderr.suffix(2000))")
            let answer = try JSONValue(parsing: run.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(answer == ["onGCE": true, "project": .string(local.cloud.options.project), "token": true])
        }
    }
}
