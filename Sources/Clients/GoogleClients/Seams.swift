import FirestoreModel

/// The Firestore calls Herald's runtime makes: `FirestoreClient` makes them over Google's REST API;
/// anything else behind this protocol (a test's double, a recorder) can stand in for it.
public protocol FirestoreAPI: Sendable {
    var project: String { get }
    var database: String { get }
    func batchGet(_ names: [DocumentName], transaction: String?) async throws -> [DocumentName: FirestoreDocument?]
    func runQuery(_ query: StructuredQuery, parent: DocumentName?, transaction: String?) async throws -> [FirestoreDocument]
    func forEachPage(
        of query: StructuredQuery, parent: DocumentName?, pageSize: Int,
        _ body: ([FirestoreDocument]) async throws -> Void) async throws
    func commit(_ writes: [Write], transaction: String?) async throws -> FirestoreClient.CommitResult
    func commitIdempotent(
        _ writes: [Write], retry: RetryPolicy?, deadline: ContinuousClock.Instant?,
        essential: Bool
    ) async throws -> FirestoreClient.CommitResult
    func batchWrite(_ writes: [Write]) async throws -> [FirestoreClient.WriteOutcome]
}

extension FirestoreClient: FirestoreAPI {}
