import FirestoreModel
import Foundation
import GoogleClients
import HeraldTesting
import LocalCloud
import Testing
import WireFormats

/// Google's own Python client (google-cloud-firestore, on its REST transport and on its default, gRPC)
/// against Herald's local cloud: documents, transforms, queries, batches, collection groups,
/// transactions and a conflict error. Over gRPC, Google's emulator answers the same calls as the
/// oracle. (Over REST it cannot: its streamed answers end with a newline after `]`, which
/// google-api-core's REST stream parser rejects.)
@Suite(.serialized) struct GooglePythonClientTests {
    static let script = TestPaths.packageRoot.appendingPathComponent("Tests/Python/firestore_client_check.py")

    static func results(_ python: URL, backend: FirestoreBackend, transport: String) async throws -> JSONValue? {
        try await backend.run { host in
            let run = try await ProcessRunner.run(python, [script.path, host, "py-\(UInt32.random(in: 0...UInt32.max))", transport])
            #expect(run.status == 0, "\(backend) over \(transport): \(run.stderr.suffix(3000))")
            return try JSONValue(parsing: run.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    static let expected: JSONValue = [
        "afterBatch": ["alice", "bob"], "afterTransaction": ["alice": 0, "bob": 5],
        "alice": ["age": 31, "name": "Alice", "tags": ["a", "z"], "unread": 3], "aliceSeenIsTime": true, "count": 3,
        "createTwice": "Conflict", "getAll": ["alice"], "groupMessages": ["rooms/r1/messages/m1"], "inNames": ["bob", "carol"],
        "limitDesc": ["carol", "alice"], "missingExists": false, "older": ["alice", "carol"], "orQuery": ["bob", "carol"],
        "startAfter": ["alice", "carol"], "tagA": ["alice", "carol"],
    ]

    @Test func googlesPythonClientWorksAgainstTheLocalCloudOverREST() async throws {
        let python = try await PythonReference.forTest(importing: "google.cloud.firestore_v1")
        #expect(try await Self.results(python, backend: .herald, transport: "rest") == Self.expected)
    }

    /// The client's default transport, as apps and admin SDKs use it: gRPC over cleartext HTTP/2 on the
    /// local cloud's one port. (It used to hang for 40 s there, then to be refused at once.)
    @Test func googlesPythonClientWorksOnItsDefaultTransportGRPCAsAgainstGooglesEmulator() async throws {
        let python = try await PythonReference.forTest(importing: "google.cloud.firestore_v1")
        let herald = try await Self.results(python, backend: .herald, transport: "grpc")
        #expect(herald == Self.expected)
        guard GoogleFirestoreEmulator.isInstalled else { try skipTest("Google's Firestore emulator is not installed: the gRPC leg ran against Herald alone") }
        #expect(try await Self.results(python, backend: .google, transport: "grpc") == herald)
    }

    /// HTTP/1.1 and gRPC on the same port, on one connection each, at once.
    @Test func restAndGRPCShareThePort() async throws {
        let python = try await PythonReference.forTest(importing: "google.cloud.firestore_v1")
        let script = """
            import json
            from google.cloud import firestore
            db = firestore.Client(project="grpc-check")
            db.collection("t").document("a").set({"x": 1}, timeout=30)
            print(json.dumps({"x": db.collection("t").document("a").get().get("x")}))
            """
        try await withLocalCloud { local in
            var environment = ProcessInfo.processInfo.environment
            environment["FIRESTORE_EMULATOR_HOST"] = local.host
            let run = try await ProcessRunner.run(python, ["-c", script], environment: environment)
            #expect(run.status == 0, "\(run.stderr.suffix(2000))")
            #expect(try JSONValue(parsing: run.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)) == ["x": 1])
            // What gRPC wrote, read over REST.
            let stored = try await local.firestore(project: "grpc-check").get(try DocumentName(project: "grpc-check", path: "t/a"))
            #expect(stored?["x"] == .integer(1))
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
