import FirestoreModel
import GoogleClients
import HeraldHTTPClient
import HeraldTesting
import Testing

/// Cases the differential test's gRPC leg found where Herald answered otherwise than Google's
/// emulator, pinned down: each runs on Herald, and on Google's emulator too where it is installed,
/// and expects what Google's emulator answers.
@Suite(.serialized) struct EmulatorParityTests {
    static var backends: [FirestoreBackend] { GoogleFirestoreEmulator.isInstalled ? FirestoreBackend.allCases : [.herald] }

    static func client(_ host: String) -> FirestoreClient {
        FirestoreClient(
            project: "parity", endpoint: "http://\(host)", credentials: EmulatorCredentials(), httpClient: .shared,
            readRetry: RetryPolicy(maximumAttempts: 1), writeRetry: RetryPolicy(maximumAttempts: 1))
    }

    static func status(_ body: () async throws -> Void) async -> String {
        do {
            try await body()
            return "OK"
        } catch let error as GoogleAPIError {
            return error.status.rawValue
        } catch {
            return "\(error)"
        }
    }

    /// A write that needs the document to exist, after a delete of it in the same commit, is refused
    /// before any precondition is looked at, even one that would fail on another document.
    @Test func aDeleteThenAConditionalWriteInOneCommitIsRefused() async throws {
        for backend in Self.backends {
            let outcomes = try await backend.run { host in
                let db = Self.client(host)
                let (d, other) = (try db.name("c/d"), try db.name("c/other"))
                _ = try await db.commit([Write(.update(d, fields: [:], mask: nil)), Write(.update(other, fields: [:], mask: nil))])
                let stale = Write(.update(other, fields: [:], mask: nil), precondition: .updateTime(Timestamp(seconds: 1_000_000_000)))
                return [
                    await Self.status {
                        _ = try await db.commit([stale, Write(.delete(d)), Write(.update(d, fields: [:], mask: nil), precondition: .exists(true))])
                    },
                    await Self.status { _ = try await db.commit([Write(.delete(d)), Write(.delete(d), precondition: .exists(true))]) },
                    await Self.status {
                        _ = try await db.commit([
                            Write(.delete(d)), Write(.update(d, fields: [:], mask: nil), precondition: .updateTime(Timestamp(seconds: 5))),
                        ])
                    },
                    await Self.status { _ = try await db.commit([Write(.delete(d)), Write(.update(d, fields: [:], mask: nil))]) },
                    await Self.status {
                        _ = try await db.commit([Write(.delete(d)), Write(.update(d, fields: [:], mask: nil), precondition: .exists(false))])
                    },
                ]
            }
            #expect(outcomes == ["INVALID_ARGUMENT", "INVALID_ARGUMENT", "INVALID_ARGUMENT", "OK", "OK"], "\(backend)")
        }
    }

    /// Stored timestamps keep microseconds. A filter's timestamps inside an array or map operand are cut
    /// the same way (so they find what was stored from the same value); a bare timestamp is not.
    @Test func timestampsInsideAFiltersArrayOrMapAreCutToTheMicrosecond() async throws {
        let precise = FirestoreValue.timestamp(Timestamp(seconds: 978_307_201, nanos: 5_999))
        for backend in Self.backends {
            let counts = try await backend.run { host in
                let db = Self.client(host)
                _ = try await db.commit([
                    Write(.update(try db.name("t/scalar"), fields: ["a": precise], mask: nil)),
                    Write(.update(try db.name("t/array"), fields: ["a": .array([precise])], mask: nil)),
                    Write(.update(try db.name("t/map"), fields: ["a": .map(["t": precise])], mask: nil)),
                ])
                func count(_ op: StructuredQuery.Operator, _ value: FirestoreValue) async throws -> Int64 {
                    var query = StructuredQuery(collectionID: "t")
                    query.filter = .field(FieldPath("a"), op, value)
                    return try await db.count(query)
                }
                return [
                    try await count(.equal, precise), try await count(.in, .array([precise])), try await count(.notIn, .array([precise])),
                    try await count(.arrayContains, precise), try await count(.arrayContainsAny, .array([precise])),
                    try await count(.equal, .array([precise])), try await count(.equal, .map(["t": precise])),
                ]
            }
            #expect(counts == [0, 1, 2, 0, 1, 1, 1], "\(backend)")
        }
    }

    /// At most one NOT_EQUAL, NOT_IN, IS_NOT_NAN or IS_NOT_NULL filter in a whole query, in any branch;
    /// other inequalities may sit beside it.
    @Test func aQueryHoldsAtMostOneNegation() async throws {
        let (a, b) = (FieldPath("a"), FieldPath("b"))
        let filters: [StructuredQuery.Filter] = [
            .and([.field(a, .notEqual, .integer(1)), .field(b, .notEqual, .integer(1))]),
            .and([.field(a, .notIn, .array([.integer(1)])), .unary(b, .isNotNull)]),
            .or([.unary(a, .isNotNull), .unary(b, .isNotNaN)]),
            .and([.field(a, .notEqual, .integer(1)), .field(b, .lessThan, .integer(1))]),
            .or([.field(a, .notEqual, .integer(1)), .field(b, .equal, .integer(1))]),
        ]
        for backend in Self.backends {
            let outcomes = try await backend.run { host in
                let db = Self.client(host)
                var outcomes: [String] = []
                for filter in filters {
                    var query = StructuredQuery(collectionID: "c")
                    query.filter = filter
                    outcomes.append(await Self.status { _ = try await db.runQuery(query) })
                }
                return outcomes
            }
            #expect(outcomes == ["INVALID_ARGUMENT", "INVALID_ARGUMENT", "INVALID_ARGUMENT", "OK", "OK"], "\(backend)")
        }
    }
}
