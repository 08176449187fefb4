import FirestoreModel
import HeraldHTTPClient
import NIOHTTP1
import WireFormats

/// The Firestore v1 REST API for one database.
public struct FirestoreClient: Sendable {
    public static let productionEndpoint = "https://firestore.googleapis.com"
    public static let maximumWritesPerCommit = 500
    public static let maximumDocumentBytes = DocumentSize.maximumBytes

    public let project: String
    public let database: String
    let endpoint: String
    let http: GoogleHTTP
    public var readRetry: RetryPolicy
    public var writeRetry: RetryPolicy

    /// - endpoint: `https://firestore.googleapis.com`, or `http://HOST:PORT` for an emulator.
    /// - userAgent: how requests name their sender (the local cloud's fault injection can spare one).
    /// - requestTimeout: how long one try may take; the functions pass `HERALD_API_TIMEOUT` (4 s), so
    ///   that an outage is answered in seconds. Tools and apps keep a client library's patience.
    public init(
        project: String, database: String = "(default)", endpoint: String = productionEndpoint,
        credentials: any AccessTokenProvider, httpClient: HTTPTransport,
        readRetry: RetryPolicy = RetryPolicy(), writeRetry: RetryPolicy = RetryPolicy(), requestTimeout: Duration = .seconds(30),
        observer: RequestObserver? = nil, userAgent: String = "herald"
    ) {
        self.project = project
        self.database = database
        self.endpoint = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
        self.http = GoogleHTTP(
            httpClient: httpClient, credentials: credentials, requestTimeout: requestTimeout, observer: observer, userAgent: userAgent,
            breaker: CircuitBreaker(name: "Firestore"))
        self.readRetry = readRetry
        self.writeRetry = writeRetry
    }

    public var databaseName: String { "projects/\(project)/databases/\(database)" }

    /// `HOST:PORT` of the endpoint, as `FIRESTORE_EMULATOR_HOST` names it.
    public var endpointHost: String {
        endpoint.hasPrefix("https://") ? String(endpoint.dropFirst(8)) : endpoint.hasPrefix("http://") ? String(endpoint.dropFirst(7)) : endpoint
    }

    public func name(_ path: String) throws -> DocumentName { try DocumentName(project: project, database: database, path: path) }

    // MARK: Reads

    /// The document, or nil if it does not exist.
    public func get(_ name: DocumentName) async throws -> FirestoreDocument? {
        try await batchGet([name])[name] ?? nil
    }

    /// Many documents in one request: each found (a document) or missing (nil).
    public func batchGet(_ names: [DocumentName], transaction: String? = nil) async throws -> [DocumentName: FirestoreDocument?] {
        guard !names.isEmpty else { return [:] }
        var body: [String: JSONValue] = ["documents": .array(Array(Set(names)).map { .string($0.resourceName) })]
        if let transaction { body["transaction"] = .string(transaction) }
        let items = try await readStream(url("\(databaseName)/documents:batchGet"), body: .object(body))
        var result: [DocumentName: FirestoreDocument?] = [:]
        for item in items {
            if let found = item["found"], let document = try FirestoreJSON.document(from: found, path: "found") {
                result[document.name] = .some(document)
            } else if let missing = item["missing"]?.stringValue {
                result[try DocumentName(resourceName: missing)] = .some(nil)
            }
        }
        return result
    }

    /// Runs a query under `parent` (nil: the database root) and returns every matching document.
    public func runQuery(_ query: StructuredQuery, parent: DocumentName? = nil, transaction: String? = nil) async throws -> [FirestoreDocument] {
        var body: [String: JSONValue] = ["structuredQuery": query.json]
        if let transaction { body["transaction"] = .string(transaction) }
        let items = try await readStream(url("\(parentPath(parent)):runQuery"), body: .object(body))
        return try items.compactMap { item in try item["document"].flatMap { try FirestoreJSON.document(from: $0, path: "document") } }
    }

    /// Every match of `query`, handed to `body` `pageSize` documents at a time, each page read with a
    /// cursor after the last document, so a large result never has to fit in one answer.
    public func forEachPage(
        of query: StructuredQuery, parent: DocumentName? = nil, pageSize: Int = 300,
        _ body: ([FirestoreDocument]) async throws -> Void
    ) async throws {
        var page = query
        if !page.orderBy.contains(where: { $0.field == FieldPath("__name__") }) {
            page.orderBy.append(StructuredQuery.Order(FieldPath("__name__"), page.orderBy.last?.direction ?? .ascending))
        }
        var delivered = 0
        // Each page starts after the last one's end, so ends never repeat: a server whose pages do (a
        // broken proxy, a hostile endpoint) is stopped, not followed forever.
        var ends: Set<StructuredQuery.Cursor> = []
        while true {
            let size = min(pageSize, query.limit.map { $0 - delivered } ?? pageSize)
            guard size > 0 else { return }
            page.limit = size
            let documents = try await runQuery(page, parent: parent)
            if !documents.isEmpty { try await body(documents) }
            delivered += documents.count
            guard documents.count == size, let last = documents.last else { return }
            page.offset = nil
            let end = StructuredQuery.Cursor(
                values: page.orderBy.map { order in
                    order.field == FieldPath("__name__") ? .reference(last.name.resourceName) : last.value(at: order.field.segments) ?? .null
                }, before: false)
            guard ends.insert(end).inserted else {
                throw TransportError(
                    "\(endpointHost) answered page \(ends.count + 1) of a query on \(query.collectionID) ending at \(last.name.path), where an earlier page ended: its pages do not advance; stopped"
                )
            }
            page.startAt = end
        }
    }

    /// `COUNT(*)` of a query, without reading the documents.
    public func count(_ query: StructuredQuery, parent: DocumentName? = nil) async throws -> Int64 {
        let body: JSONValue = ["structuredAggregationQuery": ["structuredQuery": query.json, "aggregations": [["alias": "count", "count": [:]]]]]
        let items = try await readStream(url("\(parentPath(parent)):runAggregationQuery"), body: body)
        return items.compactMap { $0["result"]?["aggregateFields"]?["count"]?["integerValue"]?.int64Value }.first ?? 0
    }

    // MARK: Writes

    public struct CommitResult: Sendable, Equatable {
        public var commitTime: Timestamp
        /// Each write's resulting update time (nil for a delete of a missing document), in order.
        public var updateTimes: [Timestamp?]
        /// Each write's `transformResults`: the value each of its field transforms produced, in the
        /// transforms' order (an increment's new total, a server time), as Firestore committed them.
        public var transformResults: [[FirestoreValue]]

        public init(commitTime: Timestamp, updateTimes: [Timestamp?], transformResults: [[FirestoreValue]] = []) {
            self.commitTime = commitTime
            self.updateTimes = updateTimes
            self.transformResults = transformResults
        }
    }

    /// Applies the writes atomically. More than 500 writes, or a document over 1 MiB, is refused before
    /// anything is sent: splitting would break the atomicity the caller asked for.
    public func commit(_ writes: [Write], transaction: String? = nil) async throws -> CommitResult {
        try Self.checkLimits(writes)
        var body: [String: JSONValue] = ["writes": .array(writes.map(\.json))]
        if let transaction { body["transaction"] = .string(transaction) }
        let request = JSONValue.object(body)
        // A commit is retried only when Google says it was not applied: throttled or unavailable.
        // A transport failure is ambiguous and goes back to the caller, whose preconditions make a redo safe.
        let bytes = try await http.call(
            .POST, url("\(databaseName)/documents:commit"), body: request,
            retry: transaction == nil ? writeRetry : .none, isRetryable: { FailureKind($0).allowsAnyCall })
        return try Self.commitResult(bytes)
    }

    static func commitResult(_ bytes: [UInt8]) throws -> CommitResult {
        let json = try JSONValue(parsing: bytes)
        let commitTime = try json["commitTime"].map { try FirestoreJSON.timestamp($0, path: "commitTime") } ?? Timestamp(seconds: 0)
        let results = json["writeResults"]?.arrayValue ?? []
        return CommitResult(
            commitTime: commitTime,
            updateTimes: try results.map { result in
                try result["updateTime"].map { try FirestoreJSON.timestamp($0, path: "updateTime") }
            },
            transformResults: try results.enumerated().map { index, result in
                try (result["transformResults"]?.arrayValue ?? []).map { try FirestoreJSON.value(from: $0, path: "writeResults[\(index)].transformResults") }
            })
    }

    /// Like `commit`, but retried also after a failure that leaves unknown whether the writes were
    /// applied (a reset connection, a timeout, DEADLINE_EXCEEDED). Only for writes that give the same
    /// result when applied twice: no transforms that add up, no create-only preconditions.
    /// - deadline: when the call, retries included, must be over.
    /// - essential: tried even while the circuit breaker has stopped other calls (a record of pushes sent).
    public func commitIdempotent(
        _ writes: [Write], retry: RetryPolicy? = nil, deadline: ContinuousClock.Instant? = nil,
        essential: Bool = false
    ) async throws -> CommitResult {
        try Self.checkLimits(writes)
        let request: JSONValue = ["writes": .array(writes.map(\.json))]
        let bytes = try await http.call(
            .POST, url("\(databaseName)/documents:commit"), body: request, retry: retry ?? writeRetry,
            isRetryable: { FailureKind($0).allowsIdempotentWrite }, deadline: deadline, essential: essential)
        return try Self.commitResult(bytes)
    }

    /// What became of one write of a `batchWrite`.
    public enum WriteOutcome: Sendable, Equatable {
        case applied(updateTime: Timestamp?)
        case failed(GoogleAPIError)
    }

    /// Applies each write on its own, not atomically (`documents:batchWrite`): a write whose precondition
    /// fails does not hold the others back. Any number of writes, sent 500 per request (nothing atomic is
    /// lost by splitting); the outcomes are in the writes' order.
    public func batchWrite(_ writes: [Write]) async throws -> [WriteOutcome] {
        var outcomes: [WriteOutcome] = []
        for start in stride(from: 0, to: writes.count, by: Self.maximumWritesPerCommit) {
            outcomes += try await batchWriteRequest(Array(writes[start..<min(writes.count, start + Self.maximumWritesPerCommit)]))
        }
        return outcomes
    }

    func batchWriteRequest(_ writes: [Write]) async throws -> [WriteOutcome] {
        try Self.checkLimits(writes)
        let request: JSONValue = ["writes": .array(writes.map(\.json))]
        let bytes = try await http.call(
            .POST, url("\(databaseName)/documents:batchWrite"), body: request, retry: writeRetry,
            isRetryable: { FailureKind($0).allowsAnyCall })
        let json = try JSONValue(parsing: bytes)
        let results = json["writeResults"]?.arrayValue ?? []
        let statuses = json["status"]?.arrayValue ?? []
        return try writes.indices.map { i in
            let status = i < statuses.count ? statuses[i] : JSONValue.object([:])
            if let code = status["code"]?.int64Value, code != 0 {
                let name = GoogleAPIError.Status.named(grpcCode: Int(code))
                return .failed(GoogleAPIError(httpStatus: 200, status: name, message: status["message"]?.stringValue ?? "write \(i) failed"))
            }
            let time = i < results.count ? results[i]["updateTime"] : nil
            return .applied(updateTime: try time.map { try FirestoreJSON.timestamp($0, path: "writeResults[\(i)].updateTime") })
        }
    }

    /// Commits any number of writes in batches of at most 500. Not atomic as a whole: for sweeps.
    public func commitInBatches(_ writes: [Write]) async throws -> [CommitResult] {
        var results: [CommitResult] = []
        for start in stride(from: 0, to: writes.count, by: Self.maximumWritesPerCommit) {
            results.append(try await commit(Array(writes[start..<min(writes.count, start + Self.maximumWritesPerCommit)])))
        }
        return results
    }

    public func beginTransaction(readOnly: Bool = false) async throws -> String {
        let body: JSONValue = ["options": readOnly ? ["readOnly": [:]] : ["readWrite": [:]]]
        let bytes = try await http.call(
            .POST, url("\(databaseName)/documents:beginTransaction"), body: body, retry: readRetry,
            isRetryable: { FailureKind($0).allowsRead })
        guard let id = try JSONValue(parsing: bytes)["transaction"]?.stringValue else {
            throw GoogleAPIError(httpStatus: 200, status: .internal, message: "beginTransaction answered without a transaction")
        }
        return id
    }

    public func rollback(_ transaction: String) async throws {
        _ = try await http.call(
            .POST, url("\(databaseName)/documents:rollback"), body: ["transaction": .string(transaction)], retry: .none,
            isRetryable: { _ in false })
    }

    /// Runs `body` in a read-write transaction and commits the writes it returns; starts again when
    /// Firestore answers ABORTED (a conflicting write), up to `maximumAttempts` times.
    public func runTransaction<T: Sendable>(
        maximumAttempts: Int = 5, _ body: (Transaction) async throws -> (writes: [Write], result: T)
    ) async throws -> T {
        var attempt = 0
        while true {
            attempt += 1
            let id = try await beginTransaction()
            let transaction = Transaction(client: self, id: id)
            let outcome: (writes: [Write], result: T)
            do { outcome = try await body(transaction) } catch {
                try? await rollback(id)
                throw error
            }
            do {
                _ = try await commit(outcome.writes, transaction: id)
                return outcome.result
            } catch let error as GoogleAPIError where error.status == .aborted && attempt < maximumAttempts {
                try await Task.sleep(for: RetryPolicy().delay(afterAttempt: attempt, retryAfterSeconds: nil))
            }
        }
    }

    public struct Transaction: Sendable {
        let client: FirestoreClient
        public let id: String
        public func get(_ names: [DocumentName]) async throws -> [DocumentName: FirestoreDocument?] {
            try await client.batchGet(names, transaction: id)
        }
        public func runQuery(_ query: StructuredQuery, parent: DocumentName? = nil) async throws -> [FirestoreDocument] {
            try await client.runQuery(query, parent: parent, transaction: id)
        }
    }

    // MARK: Plumbing

    static func checkLimits(_ writes: [Write]) throws {
        guard writes.count <= maximumWritesPerCommit else {
            throw GoogleAPIError(
                httpStatus: 400, status: .invalidArgument,
                message: "a commit takes at most \(maximumWritesPerCommit) writes, not \(writes.count)")
        }
        for write in writes {
            if case .update(let name, let fields, _) = write.operation {
                let size = DocumentSize.of(name: name, fields: fields)
                guard size <= maximumDocumentBytes else {
                    throw GoogleAPIError(
                        httpStatus: 400, status: .invalidArgument,
                        message: "document \(name.path) would be \(size) bytes; Firestore's limit is \(maximumDocumentBytes)")
                }
            }
        }
    }

    /// POSTs a request whose answer is a JSON array (batchGet, runQuery), with read retries.
    func readStream(_ url: String, body: JSONValue) async throws -> [JSONValue] {
        let bytes = try await http.call(.POST, url, body: body, retry: readRetry, isRetryable: { FailureKind($0).allowsRead })
        let json = try JSONValue(parsing: bytes)
        // The stream is an array; a single object is accepted too.
        return json.arrayValue ?? [json]
    }

    func parentPath(_ parent: DocumentName?) -> String {
        parent.map { $0.resourceName } ?? "\(databaseName)/documents"
    }

    func url(_ resourcePath: String) -> String {
        let encoded = resourcePath.split(separator: "/", omittingEmptySubsequences: false).map { segment in
            // Keep the `:method` suffix of the last segment readable; escape everything else a path can't hold.
            PercentEncoding.encode(String(segment), allowed: PercentEncoding.isPathSegmentByte)
        }.joined(separator: "/")
        return "\(endpoint)/v1/\(encoded)"
    }

}
