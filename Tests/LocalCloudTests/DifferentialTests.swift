import FirestoreModel
import Foundation
import GoogleClients
import HeraldHTTPClient
import HeraldTesting
import Testing

/// The same generated sequence of Firestore operations against Google's emulator (the oracle) and
/// Herald's local cloud must give the same results: documents, query answers, error statuses.
///
/// Known, documented differences, kept out of the comparison on purpose:
/// - Transactions: Google's emulator locks (a conflicting writer waits, then one side gets ABORTED
///   after ≈2 s); Herald's is optimistic (the commit whose reads changed gets ABORTED). Sequences
///   here never interleave transactions with conflicting writes; `TransactionTests` covers Herald's.
/// - REQUEST_TIME: Google's emulator sets it a few ms before the commit time, Herald to the commit
///   time. Server timestamps are compared as "a server time", not by value.
/// - Error messages differ in wording; statuses are compared.
@Suite(.serialized) struct DifferentialTests {
    static let seeds: [UInt64] = [1, 2, 3, 4, 5, 6, 7, 8]
    static let operationsPerSeed = 200

    @Test func herAldAndGooglesEmulatorAgreeOnGeneratedOperations() async throws {
        guard GoogleFirestoreEmulator.isInstalled else {
            try skipTest("Google's Firestore emulator (the oracle) is not installed at \(GoogleFirestoreEmulator.launcher)")
        }
        let operations = Self.operations(seeds: Self.seeds)
        let expected = try await FirestoreBackend.google.run { host in try await Self.replay(operations, host: host) }
        let actual = try await FirestoreBackend.herald.run { host in try await Self.replay(operations, host: host) }
        Self.compare(expected, actual, operations, transport: "REST")
    }

    /// The gRPC leg: the same kind of sequence, each REST request turned into the gRPC call it stands
    /// for by a bridge (google-cloud-firestore's message types over grpcio), so both backends answer
    /// on the transport apps and admin SDKs use.
    @Test func herAldAndGooglesEmulatorAgreeOverGRPC() async throws {
        guard GoogleFirestoreEmulator.isInstalled else {
            try skipTest("Google's Firestore emulator (the oracle) is not installed at \(GoogleFirestoreEmulator.launcher)")
        }
        let python = try await PythonReference.forTest(importing: "google.cloud.firestore_v1")
        let operations = Self.operations(seeds: [11, 12, 13, 14, 15])
        let bridge = TestPaths.packageRoot.appendingPathComponent("Tests/Python/grpc_rest_bridge.py").path
        @Sendable func overGRPC(_ host: String) async throws -> [(outcome: String, message: String)] {
            let running = try await ServingProcess.start(command: [python.path, bridge, host], name: "grpc_rest_bridge.py")
            defer { running.stop() }
            return try await Self.replay(operations, host: "127.0.0.1:\(running.port)")
        }
        let expected = try await FirestoreBackend.google.run(overGRPC)
        let actual = try await FirestoreBackend.herald.run(overGRPC)
        Self.compare(expected, actual, operations, transport: "gRPC")
    }

    static func operations(seeds: [UInt64]) -> [Operation] {
        seeds.flatMap { seed in
            var rng = SeededRandom(seed: seed)
            return (0..<Self.operationsPerSeed).map { _ in OperationGenerator.next(&rng, project: "diff-\(seed)") }
        }
    }

    static func compare(
        _ expected: [(outcome: String, message: String)], _ actual: [(outcome: String, message: String)], _ operations: [Operation], transport: String
    ) {
        #expect(expected.count == actual.count)
        var mismatches = 0
        for (i, (e, a)) in zip(expected, actual).enumerated() where e.outcome != a.outcome {
            mismatches += 1
            if mismatches <= 3 {
                Issue.record("\(transport) operation \(i): \(operations[i].summary)\n  Google: \(e.outcome) \(e.message)\n  Herald: \(a.outcome) \(a.message)")
            }
        }
        let errors = expected.filter { $0.outcome.hasPrefix("error") }.count
        print("DifferentialTests (\(transport)): \(operations.count) operations (\(errors) expected errors), \(mismatches) mismatches")
    }

    /// Runs every operation in order and describes each outcome in a backend-neutral way.
    static func replay(_ operations: [Operation], host: String) async throws -> [(outcome: String, message: String)] {
        var outcomes: [(outcome: String, message: String)] = []
        var clients: [String: FirestoreClient] = [:]
        var versions: [DocumentName: Timestamp] = [:]
        for operation in operations {
            let client =
                clients[operation.project]
                ?? FirestoreClient(
                    project: operation.project, endpoint: "http://\(host)", credentials: EmulatorCredentials(),
                    httpClient: .shared, readRetry: RetryPolicy(maximumAttempts: 1), writeRetry: RetryPolicy(maximumAttempts: 1))
            clients[operation.project] = client
            do {
                outcomes.append((try await operation.run(client, &versions), ""))
            } catch let error as GoogleAPIError {
                outcomes.append(("error \(error.status.rawValue)", error.message))
            }
        }
        return outcomes
    }
}
