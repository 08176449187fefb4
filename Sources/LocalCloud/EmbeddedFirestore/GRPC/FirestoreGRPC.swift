import FirestoreModel
import FirestoreProtos
import Foundation
import SwiftProtobuf
import WireFormats

/// Firestore's gRPC API (`google.firestore.v1.Firestore`) over the same semantics as the REST API: each
/// call's request is read as protobuf, turned into the REST request it stands for (proto3's JSON
/// mapping is the REST API's format), answered by the host's own routing (`FirestoreStreamHost.answer`:
/// in the local cloud identity, single-project mode, injected faults, the store, preconditions,
/// transforms, triggers) and the answer turned back into protobuf. One implementation of Firestore,
/// two wire formats. The streams are `FirestoreListen` and
/// `FirestoreWriteStream`, which WebChannel carries too.
struct FirestoreGRPC: GRPCService {
    static let service = "/google.firestore.v1.Firestore/"
    let host: FirestoreStreamHost

    func handle(method: String, metadata: [String: String], requests: GRPCRequests, responses: GRPCResponseWriter) async throws(GRPCStatus) {
        guard method.hasPrefix(Self.service) else { throw .unimplemented("herald dev serves google.firestore.v1.Firestore, not \(method)") }
        let name = String(method.dropFirst(Self.service.count))
        if name == "Listen" {
            try await FirestoreListen(host: host, metadata: metadata).run(requests: requests.streamRequests, answers: .grpc(responses))
            return
        }
        if name == "Write" {
            try await FirestoreWriteStream(host: host, metadata: metadata).run(requests: requests.streamRequests, answers: .grpc(responses))
            return
        }
        guard let message = try await Self.only(requests) else { throw .invalidArgument("\(name) takes one request message") }
        switch name {
        case "GetDocument":
            let request: Google_Firestore_V1_GetDocumentRequest = try Self.decode(message)
            var query = Self.mask(request.hasMask ? request.mask : nil)
            if !request.transaction.isEmpty { query["transaction"] = [request.transaction.base64EncodedString()] }
            try await unary(Google_Firestore_V1_Document.self, "GET", request.name, query: query, metadata: metadata, responses: responses)
        case "ListDocuments":
            let request: Google_Firestore_V1_ListDocumentsRequest = try Self.decode(message)
            var query = Self.mask(request.hasMask ? request.mask : nil)
            if request.pageSize > 0 { query["pageSize"] = [String(request.pageSize)] }
            if !request.pageToken.isEmpty { query["pageToken"] = [request.pageToken] }
            try await unary(
                Google_Firestore_V1_ListDocumentsResponse.self, "GET", request.parent + "/" + request.collectionID, query: query, metadata: metadata,
                responses: responses)
        case "CreateDocument":
            let request: Google_Firestore_V1_CreateDocumentRequest = try Self.decode(message)
            var query = Self.mask(request.hasMask ? request.mask : nil)
            if !request.documentID.isEmpty { query["documentId"] = [request.documentID] }
            try await unary(
                Google_Firestore_V1_Document.self, "POST", request.parent + "/" + request.collectionID, query: query, body: request.document,
                metadata: metadata, responses: responses)
        case "UpdateDocument":
            let request: Google_Firestore_V1_UpdateDocumentRequest = try Self.decode(message)
            var query = Self.mask(request.hasMask ? request.mask : nil)
            if request.hasUpdateMask { query["updateMask.fieldPaths"] = request.updateMask.fieldPaths }
            query.merge(Self.precondition(request.hasCurrentDocument ? request.currentDocument : nil)) { $1 }
            try await unary(
                Google_Firestore_V1_Document.self, "PATCH", request.document.name, query: query, body: request.document, metadata: metadata,
                responses: responses)
        case "DeleteDocument":
            let request: Google_Firestore_V1_DeleteDocumentRequest = try Self.decode(message)
            let query = Self.precondition(request.hasCurrentDocument ? request.currentDocument : nil)
            try await unary(SwiftProtobuf.Google_Protobuf_Empty.self, "DELETE", request.name, query: query, metadata: metadata, responses: responses)
        case "BatchGetDocuments":
            let request: Google_Firestore_V1_BatchGetDocumentsRequest = try Self.decode(message)
            try await stream(
                Google_Firestore_V1_BatchGetDocumentsResponse.self, request.database + "/documents:batchGet", body: request, without: "database",
                metadata: metadata, responses: responses)
        case "BeginTransaction":
            let request: Google_Firestore_V1_BeginTransactionRequest = try Self.decode(message)
            try await unary(
                Google_Firestore_V1_BeginTransactionResponse.self, "POST", request.database + "/documents:beginTransaction", body: request,
                without: "database", metadata: metadata, responses: responses)
        case "Commit":
            let request: Google_Firestore_V1_CommitRequest = try Self.decode(message)
            try await unary(
                Google_Firestore_V1_CommitResponse.self, "POST", request.database + "/documents:commit", body: request, without: "database",
                metadata: metadata, responses: responses)
        case "Rollback":
            let request: Google_Firestore_V1_RollbackRequest = try Self.decode(message)
            try await unary(
                SwiftProtobuf.Google_Protobuf_Empty.self, "POST", request.database + "/documents:rollback", body: request, without: "database",
                metadata: metadata, responses: responses)
        case "RunQuery":
            let request: Google_Firestore_V1_RunQueryRequest = try Self.decode(message)
            try await stream(
                Google_Firestore_V1_RunQueryResponse.self, request.parent + ":runQuery", body: request, without: "parent", metadata: metadata,
                responses: responses)
        case "RunAggregationQuery":
            let request: Google_Firestore_V1_RunAggregationQueryRequest = try Self.decode(message)
            try await stream(
                Google_Firestore_V1_RunAggregationQueryResponse.self, request.parent + ":runAggregationQuery", body: request, without: "parent",
                metadata: metadata, responses: responses)
        case "ListCollectionIds":
            let request: Google_Firestore_V1_ListCollectionIdsRequest = try Self.decode(message)
            try await unary(
                Google_Firestore_V1_ListCollectionIdsResponse.self, "POST", request.parent + ":listCollectionIds", body: request, without: "parent",
                metadata: metadata, responses: responses)
        case "BatchWrite":
            let request: Google_Firestore_V1_BatchWriteRequest = try Self.decode(message)
            try await unary(
                Google_Firestore_V1_BatchWriteResponse.self, "POST", request.database + "/documents:batchWrite", body: request, without: "database",
                metadata: metadata, responses: responses)
        default:
            throw .unimplemented(
                "herald dev does not serve Firestore's \(name) over gRPC (it serves Get/List/Create/Update/DeleteDocument, "
                    + "BatchGetDocuments, BeginTransaction, Commit, Rollback, RunQuery, RunAggregationQuery, ListCollectionIds, BatchWrite, Listen and Write)")
        }
    }

    /// The one message of a unary or server-streaming call (nil when the client sent none or several).
    static func only(_ requests: GRPCRequests) async throws(GRPCStatus) -> [UInt8]? {
        var messages: [[UInt8]] = []
        for await message in requests {
            messages.append(message)
            if messages.count > 1 { return nil }
        }
        return messages.first
    }

    static func decode<Message: SwiftProtobuf.Message>(_ bytes: [UInt8]) throws(GRPCStatus) -> Message {
        try StreamRequest.protobuf(bytes).decode()
    }

    static func mask(_ mask: Google_Firestore_V1_DocumentMask?) -> [String: [String]] {
        guard let mask else { return [:] }
        return ["mask.fieldPaths": mask.fieldPaths]
    }

    static func precondition(_ precondition: Google_Firestore_V1_Precondition?) -> [String: [String]] {
        switch precondition?.conditionType {
        case .exists(let exists)?: ["currentDocument.exists": [exists ? "true" : "false"]]
        case .updateTime(let time)?: ["currentDocument.updateTime": [Timestamp(seconds: time.seconds, nanos: time.nanos).rfc3339]]
        case nil: [:]
        }
    }

    /// The REST request a call stands for: `path` is a resource name (`projects/…`) with the REST
    /// method after a colon, `body` the request message (less the fields the path carries).
    func rest(
        _ method: String, _ path: String, query: [String: [String]] = [:], body: (any SwiftProtobuf.Message)?, without: String? = nil,
        metadata: [String: String]
    ) async throws(GRPCStatus) -> JSONValue {
        var json = JSONValue.object([:])
        if let body {
            do {
                json = try JSONValue(parsing: Array(try body.jsonString().utf8))
            } catch {
                throw .internalError("cannot read the request: \(error)")
            }
            if let without, case .object(var members) = json {
                members[without] = nil
                json = .object(members)
            }
        }
        var headers = metadata.filter { !$0.key.hasPrefix(":") && $0.key != "content-type" && $0.key != "te" }
        headers["content-type"] = "application/json"
        headers["host"] = metadata[":authority"]
        let request = LocalRequest(
            method: method, segments: ["v1"] + path.split(separator: "/", omittingEmptySubsequences: false).map(String.init), query: query,
            headers: headers, body: body == nil ? [] : Array(json.serialized().utf8))
        if let refusal = RequestGuard(allowedHosts: host.allowedHosts).refusal(of: request) {
            throw GRPCStatus(name: refusal.status, message: refusal.message)
        }
        switch await host.answer(request) {
        case .reset: throw .unavailable("the connection was reset (a fault herald dev injected)")
        case .response(let response):
            let answer = (try? JSONValue(parsing: Array(response.body.utf8))) ?? .null
            guard (200..<300).contains(response.status) else {
                throw GRPCStatus(
                    name: answer["error"]?["status"]?.stringValue ?? "UNKNOWN", message: answer["error"]?["message"]?.stringValue ?? response.body)
            }
            return answer
        }
    }

    func unary<Response: SwiftProtobuf.Message>(
        _: Response.Type, _ method: String, _ path: String, query: [String: [String]] = [:], body: (any SwiftProtobuf.Message)? = nil,
        without: String? = nil, metadata: [String: String], responses: GRPCResponseWriter
    ) async throws(GRPCStatus) {
        let answer = try await rest(method, path, query: query, body: body, without: without, metadata: metadata)
        try await send(Self.message(Response.self, answer), to: responses)
    }

    /// A server-streaming call: the REST answer is the array of its messages.
    func stream<Response: SwiftProtobuf.Message>(
        _: Response.Type, _ path: String, body: any SwiftProtobuf.Message, without: String, metadata: [String: String], responses: GRPCResponseWriter
    ) async throws(GRPCStatus) {
        let answer = try await rest("POST", path, body: body, without: without, metadata: metadata)
        for element in answer.arrayValue ?? [answer] { try await send(Self.message(Response.self, element), to: responses) }
    }

    static func message<Response: SwiftProtobuf.Message>(_: Response.Type, _ json: JSONValue) throws(GRPCStatus) -> Response {
        var options = JSONDecodingOptions()
        options.ignoreUnknownFields = true
        do { return try Response(jsonString: json.serialized(), options: options) } catch {
            throw .internalError("cannot write the answer as a \(Response.protoMessageName): \(error)")
        }
    }

    func send(_ message: any SwiftProtobuf.Message, to responses: GRPCResponseWriter) async throws(GRPCStatus) {
        do {
            try await responses.send(try message.serializedBytes())
        } catch {
            throw .unavailable("the stream closed: \(error)")
        }
    }
}
