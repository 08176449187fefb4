import FirestoreModel
import Foundation
import WireFormats

/// One HTTP request, as the local cloud's handlers see it.
public struct LocalRequest: Sendable {
    public var method: String
    /// Path segments, percent-decoded.
    public var segments: [String]
    /// Query parameters; a repeated name keeps every value.
    public var query: [String: [String]]
    public var headers: [String: String]
    public var body: [UInt8]

    public init(method: String, path: String, query: String?, headers: [String: String], body: [UInt8]) {
        self.method = method
        self.segments = path.split(separator: "/").map { String($0).removingPercentEncoding ?? String($0) }
        var parameters: [String: [String]] = [:]
        for pair in (query ?? "").split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0)
            }
            parameters[parts[0], default: []].append(parts.count > 1 ? parts[1] : "")
        }
        self.query = parameters
        self.headers = headers
        self.body = body
    }

    /// A request made inside the local cloud (a gRPC call standing for its REST request): segments
    /// and parameters as they are, nothing to decode.
    init(method: String, segments: [String], query: [String: [String]], headers: [String: String], body: [UInt8]) {
        self.method = method
        self.segments = segments
        self.query = query
        self.headers = headers
        self.body = body
    }

    package func json() throws(LocalAPIError) -> JSONValue {
        if body.isEmpty { return .object([:]) }
        do { return try JSONValue(parsing: body) } catch { throw .invalidArgument("Invalid JSON payload received. \(error)") }
    }
}

/// A handler's answer: a status and a JSON body (or plain text).
public struct LocalResponse: Sendable {
    public var status: Int
    public var body: String
    public var contentType = "application/json; charset=UTF-8"
    public var headers: [String: String] = [:]

    public init(status: Int = 200, json: JSONValue) {
        self.status = status
        self.body = json.serialized()
    }

    public init(status: Int = 200, text: String, contentType: String) {
        self.status = status
        self.body = text
        self.contentType = contentType
    }

    public init(_ error: LocalAPIError) {
        self.init(status: error.code, json: error.json)
        if let after = error.retryAfterSeconds { headers["retry-after"] = String(after) }
    }
}

/// The Firestore v1 REST API over `LocalFirestore`: `/v1/projects/P/databases/D/documents…`.
package struct FirestoreREST: Sendable {
    package let firestore: LocalFirestore

    package init(firestore: LocalFirestore) { self.firestore = firestore }

    package func handle(_ request: LocalRequest) async throws(LocalAPIError) -> LocalResponse {
        // v1 / projects / P / databases / D / documents[:method] / path…[:method]
        let s = request.segments
        guard s.count >= 6, s[0] == "v1", s[1] == "projects", s[3] == "databases" else { throw .notFound("Unknown resource path.") }
        let databaseName = "projects/\(s[2])/databases/\(s[4])"
        var rest = Array(s[5...])
        var method: String?
        if let last = rest.last, let colon = last.lastIndex(of: ":") {
            method = String(last[last.index(after: colon)...])
            rest[rest.count - 1] = String(last[..<colon])
        }
        guard rest.first == "documents" else { throw .notFound("Unknown resource path.") }
        let path = Array(rest.dropFirst())
        if let method {
            guard request.method == "POST" else { throw .notFound("\(method) takes POST.") }
            guard path.count % 2 == 0 else { throw .invalidArgument("\(method) needs a document (or the database root) as its parent.") }
            return try await call(
                method, parent: path.joined(separator: "/"), databaseName: databaseName, body: try request.json(),
                trace: TraceParent.traceID(request.headers["traceparent"]))
        }
        if path.count % 2 == 0 {
            guard !path.isEmpty else { throw .notFound("Unknown resource path.") }
            let name = try documentName(databaseName, path)
            switch request.method {
            case "GET": return try await get(name, request)
            case "PATCH": return try await patch(name, request)
            case "DELETE": return try await delete(name, request)
            default: throw .notFound("\(request.method) is not supported on a document.")
            }
        }
        let parent = path.dropLast().joined(separator: "/")
        switch request.method {
        case "GET": return try await list(databaseName: databaseName, parent: parent, collectionID: path.last!, request)
        case "POST": return try await create(databaseName: databaseName, collectionPath: path, request)
        default: throw .notFound("\(request.method) is not supported on a collection.")
        }
    }

    func documentName(_ databaseName: String, _ path: [String]) throws(LocalAPIError) -> DocumentName {
        let parts = databaseName.split(separator: "/").map(String.init)
        do { return try DocumentName(project: parts[1], database: parts[3], segments: path) } catch { throw .invalidArgument(error.description) }
    }

    func mask(_ request: LocalRequest) throws(LocalAPIError) -> [FieldPath]? {
        guard let paths = request.query["mask.fieldPaths"] else { return nil }
        return try parse(paths)
    }

    func parse(_ fieldPaths: [String]) throws(LocalAPIError) -> [FieldPath] {
        var result: [FieldPath] = []
        for p in fieldPaths { result.append(try parse(p)) }
        return result
    }

    func parse(_ fieldPath: String) throws(LocalAPIError) -> FieldPath {
        do { return try FieldPath(parsing: fieldPath) } catch { throw .invalidArgument(error.description) }
    }

    func masked(_ document: FirestoreDocument, _ mask: [FieldPath]?) -> JSONValue {
        FirestoreJSON.json(mask.map { QueryEvaluation.project(document, $0) } ?? document)
    }

    /// Who a request is billed to: the function whose event's trace it carries, else "app".
    func requester(of request: LocalRequest) -> String { firestore.writer(TraceParent.traceID(request.headers["traceparent"])) }

    func readTime() -> JSONValue { .string(Timestamp.now().rfc3339) }

    // MARK: Document resources

    func get(_ name: DocumentName, _ request: LocalRequest) async throws(LocalAPIError) -> LocalResponse {
        let found = try await firestore.get([name], transaction: request.query["transaction"]?.first)
        firestore.billed.read(1, by: requester(of: request))
        guard let document = found[name] else { throw .notFound("Document \"\(name.resourceName)\" not found.") }
        return LocalResponse(json: masked(document, try mask(request)))
    }

    func patch(_ name: DocumentName, _ request: LocalRequest) async throws(LocalAPIError) -> LocalResponse {
        let body = try request.json()
        let fields: [String: FirestoreValue]
        do { fields = try FirestoreJSON.fields(body.member("fields") ?? .null) } catch { throw .invalid(error) }
        let updateMask = try request.query["updateMask.fieldPaths"].map { p throws(LocalAPIError) in try parse(p) }
        var precondition: Precondition?
        if let exists = request.query["currentDocument.exists"]?.first { precondition = .exists(exists == "true") }
        if let time = request.query["currentDocument.updateTime"]?.first {
            guard let t = Timestamp(rfc3339: time) else { throw .invalidArgument("currentDocument.updateTime must be an RFC 3339 timestamp") }
            precondition = .updateTime(t)
        }
        _ = try await firestore.commit([Write(.update(name, fields: fields, mask: updateMask), precondition: precondition)], databaseName: name.databaseName)
        let stored = try await firestore.get([name])[name]
        guard let stored else { throw .internalError("the document vanished after its write") }
        return LocalResponse(json: masked(stored, try mask(request)))
    }

    func delete(_ name: DocumentName, _ request: LocalRequest) async throws(LocalAPIError) -> LocalResponse {
        var precondition: Precondition?
        if let exists = request.query["currentDocument.exists"]?.first { precondition = .exists(exists == "true") }
        if let time = request.query["currentDocument.updateTime"]?.first, let t = Timestamp(rfc3339: time) { precondition = .updateTime(t) }
        _ = try await firestore.commit([Write(.delete(name), precondition: precondition)], databaseName: name.databaseName)
        return LocalResponse(json: .object([:]))
    }

    func create(databaseName: String, collectionPath: [String], _ request: LocalRequest) async throws(LocalAPIError) -> LocalResponse {
        let id = request.query["documentId"]?.first.flatMap { $0.isEmpty ? nil : $0 } ?? Self.autoID()
        let name = try documentName(databaseName, collectionPath + [id])
        let body = try request.json()
        let fields: [String: FirestoreValue]
        do { fields = try FirestoreJSON.fields(body.member("fields") ?? .null) } catch { throw .invalid(error) }
        _ = try await firestore.commit([Write(.update(name, fields: fields, mask: nil), precondition: .exists(false))], databaseName: databaseName)
        guard let stored = try await firestore.get([name])[name] else { throw .internalError("the document vanished after its write") }
        return LocalResponse(json: masked(stored, try mask(request)))
    }

    func list(databaseName: String, parent: String, collectionID: String, _ request: LocalRequest) async throws(LocalAPIError) -> LocalResponse {
        var documents = try await firestore.list(parent: parent, database: databaseName, collectionID: collectionID)
        if let token = request.query["pageToken"]?.first, !token.isEmpty {
            guard let data = Data(base64Encoded: token), let after = String(data: data, encoding: .utf8) else { throw .invalidArgument("invalid page token") }
            documents.removeAll { ValueOrder.referencePaths($0.name.path, after) <= 0 }
        }
        var members: [String: JSONValue] = [:]
        if let size = request.query["pageSize"]?.first.flatMap({ Int($0) }), size > 0, documents.count > size {
            documents = Array(documents.prefix(size))
            members["nextPageToken"] = .string(Data(documents.last!.name.path.utf8).base64EncodedString())
        }
        let mask = try mask(request)
        firestore.billed.queried(returning: documents.count, by: requester(of: request))
        if !documents.isEmpty { members["documents"] = .array(documents.map { masked($0, mask) }) }
        return LocalResponse(json: .object(members))
    }

    static func autoID() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        return String((0..<20).map { _ in alphabet.randomElement()! })
    }

    // MARK: Methods (`documents:commit`, `…/doc:runQuery`, …)

    func call(_ method: String, parent: String, databaseName: String, body: JSONValue, trace: String? = nil) async throws(LocalAPIError)
        -> LocalResponse
    {
        let requester = firestore.writer(trace)
        switch method {
        case "batchGet": return try await batchGet(databaseName, body, requester: requester)
        case "commit": return try await commit(databaseName, body, trace: trace)
        case "batchWrite": return try await batchWrite(databaseName, body, trace: trace)
        case "beginTransaction":
            let readOnly = body.member("options")?.member("readOnly") != nil
            return LocalResponse(json: ["transaction": .string(firestore.beginTransaction(readOnly: readOnly))])
        case "rollback":
            guard let id = body.member("transaction")?.stringValue else { throw .invalidArgument("transaction is required") }
            try firestore.rollback(id)
            return LocalResponse(json: .object([:]))
        case "runQuery": return try await runQuery(databaseName, parent, body, requester: requester)
        case "runAggregationQuery": return try await runAggregation(databaseName, parent, body, requester: requester)
        case "listCollectionIds":
            let ids = try await firestore.collectionIDs(parent: parent, database: databaseName)
            return LocalResponse(json: ids.isEmpty ? .object([:]) : ["collectionIds": .array(ids.map { .string($0) })])
        default: throw .notFound("Method \(method.prefix(60)) is not part of the Firestore API here.")
        }
    }

    /// The transaction a read runs in: an existing one, or one it begins (`newTransaction`).
    func readTransaction(_ body: JSONValue) throws(LocalAPIError) -> (id: String?, isNew: Bool) {
        if let id = body.member("transaction")?.stringValue { return (id, false) }
        if let options = body.member("newTransaction") { return (firestore.beginTransaction(readOnly: options.member("readOnly") != nil), true) }
        return (nil, false)
    }

    func batchGet(_ databaseName: String, _ body: JSONValue, requester: String) async throws(LocalAPIError) -> LocalResponse {
        var names: [DocumentName] = []
        for (i, item) in (body.member("documents")?.arrayValue ?? []).enumerated() {
            do { names.append(try RequestDecoding.name(item, path: "documents[\(i)]")) } catch { throw .invalid(error) }
        }
        let transaction = try readTransaction(body)
        let mask = try body.member("mask")?.member("fieldPaths")?.arrayValue.map { p throws(LocalAPIError) in try parse(p.map { $0.stringValue ?? "" }) }
        let found = try await firestore.get(names, transaction: transaction.id)
        firestore.billed.read(names.count, by: requester)
        let time = readTime()
        var items: [JSONValue] = names.map { name in
            if let document = found[name] { return ["found": masked(document, mask), "readTime": time] }
            return ["missing": .string(name.resourceName), "readTime": time]
        }
        if transaction.isNew, let id = transaction.id {
            items.insert(["transaction": .string(id), "readTime": time], at: 0)
        }
        return LocalResponse(json: .array(items))
    }

    func writes(_ body: JSONValue) throws(LocalAPIError) -> [Write] {
        var writes: [Write] = []
        for (i, item) in (body.member("writes")?.arrayValue ?? []).enumerated() {
            do { writes.append(try RequestDecoding.write(item, path: "writes[\(i)]")) } catch { throw .invalid(error) }
        }
        return writes
    }

    func commit(_ databaseName: String, _ body: JSONValue, trace: String?) async throws(LocalAPIError) -> LocalResponse {
        let result = try await firestore.commit(
            try writes(body), databaseName: databaseName, transaction: body.member("transaction")?.stringValue, trace: trace)
        let writeResults: [JSONValue] = result.writeResults.map { r in
            var members: [String: JSONValue] = [:]
            if let t = r.updateTime { members["updateTime"] = .string(t.rfc3339) }
            if !r.transformResults.isEmpty { members["transformResults"] = .array(r.transformResults.map { FirestoreJSON.json($0) }) }
            return .object(members)
        }
        return LocalResponse(json: ["writeResults": .array(writeResults), "commitTime": .string(result.commitTime.rfc3339)])
    }

    /// Writes applied one by one, not atomically, each with its own status, as `batchWrite` does.
    func batchWrite(_ databaseName: String, _ body: JSONValue, trace: String?) async throws(LocalAPIError) -> LocalResponse {
        var results: [JSONValue] = []
        var statuses: [JSONValue] = []
        let writes = try writes(body)
        // Google refuses the whole request, not the second write (checked against its emulator).
        guard Set(writes.map(\.document)).count == writes.count else {
            throw .invalidArgument("the same document cannot be written more than once in a single request")
        }
        guard writes.count <= LocalFirestore.maximumWrites else {
            throw .invalidArgument("maximum \(LocalFirestore.maximumWrites) writes allowed per request")
        }
        for outcome in try await firestore.applyEach(writes, databaseName: databaseName, trace: trace) {
            switch outcome {
            case .success(let r):
                results.append(r.writeResults.first?.updateTime.map { ["updateTime": .string($0.rfc3339)] } ?? .object([:]))
                statuses.append(.object([:]))
            case .failure(let error):
                results.append(.object([:]))
                statuses.append(["code": .integer(Self.grpcCode(error.status)), "message": .string(error.message)])
            }
        }
        return LocalResponse(json: ["writeResults": .array(results), "status": .array(statuses)])
    }

    static func grpcCode(_ status: String) -> Int {
        [
            "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED",
            "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE",
        ].firstIndex(of: status) ?? 2
    }

    func query(_ json: JSONValue?) throws(LocalAPIError) -> StructuredQuery {
        guard let json else { throw .invalidArgument("structuredQuery is required") }
        do { return try StructuredQuery(json: json) } catch { throw .invalid(error) }
    }

    func runQuery(_ databaseName: String, _ parent: String, _ body: JSONValue, requester: String) async throws(LocalAPIError) -> LocalResponse {
        let query = try query(body.member("structuredQuery"))
        let transaction = try readTransaction(body)
        let documents = try await firestore.runQuery(query, parent: parent, database: databaseName, transaction: transaction.id)
        firestore.billed.queried(returning: documents.count, by: requester)
        let time = readTime()
        var items: [JSONValue] = documents.map { ["document": FirestoreJSON.json($0), "readTime": time] }
        if items.isEmpty { items = [["readTime": time]] }
        if transaction.isNew, let id = transaction.id { items[0] = .object((items[0].objectValue ?? [:]).merging(["transaction": .string(id)]) { a, _ in a }) }
        return LocalResponse(json: .array(items))
    }

    /// `count`, `sum` and `avg` aggregations over a structured query.
    func runAggregation(_ databaseName: String, _ parent: String, _ body: JSONValue, requester: String) async throws(LocalAPIError) -> LocalResponse {
        guard let aggregation = body.member("structuredAggregationQuery") else { throw .invalidArgument("structuredAggregationQuery is required") }
        var query = try query(aggregation.member("structuredQuery"))
        let documents = try await firestore.runQuery(query, parent: parent, database: databaseName, transaction: body.member("transaction")?.stringValue)
        firestore.billed.aggregated(counting: documents.count, by: requester)
        query.limit = nil
        var fields: [String: JSONValue] = [:]
        for (i, item) in (aggregation.member("aggregations")?.arrayValue ?? []).enumerated() {
            let alias = item.member("alias")?.stringValue ?? "field_\(i + 1)"
            if let count = item.member("count") {
                let upTo = count.member("upTo").flatMap { ($0.member("value") ?? $0).int64Value } ?? Int64.max
                fields[alias] = FirestoreJSON.json(.integer(min(Int64(documents.count), upTo)))
            } else if let spec = item.member("sum") ?? item.member("avg") {
                let path = try parse(spec.member("field")?.member("fieldPath")?.stringValue ?? "")
                let numbers = documents.compactMap { FieldPath.value(in: $0.fields, at: path.segments[...]) }.filter { ValueOrder.typeRank($0) == 2 }
                fields[alias] = FirestoreJSON.json(Self.aggregate(numbers, average: item.member("avg") != nil))
            } else {
                throw .invalidArgument("aggregations[\(i)] must be count, sum or avg")
            }
        }
        return LocalResponse(json: [["result": ["aggregateFields": .object(fields)], "readTime": readTime()]])
    }

    static func aggregate(_ numbers: [FirestoreValue], average: Bool) -> FirestoreValue {
        if average {
            guard !numbers.isEmpty else { return .null }
            let total = numbers.reduce(0.0) { $0 + double($1) }
            return .double(total / Double(numbers.count))
        }
        if numbers.allSatisfy({ $0.integerValue != nil }) {
            var sum: Int64 = 0
            for n in numbers {
                let (s, overflow) = sum.addingReportingOverflow(n.integerValue!)
                if overflow { return .double(numbers.reduce(0.0) { $0 + double($1) }) }
                sum = s
            }
            return .integer(sum)
        }
        return .double(numbers.reduce(0.0) { $0 + double($1) })
    }

    static func double(_ value: FirestoreValue) -> Double {
        switch value {
        case .integer(let i): Double(i)
        case .double(let d): d
        default: 0
        }
    }
}
