import FirestoreProtos
import Foundation
import SwiftProtobuf

/// Firestore's `Write` stream, the one the SDKs send their writes on (gRPC for the mobile SDKs,
/// WebChannel for the web SDK): the first request opens it (the answer is the stream's id and a token),
/// each later one is a commit of its writes (the answer: their results, the commit time and the next
/// token), or with no writes just asks for a token. A stream cannot be resumed from an old token: a
/// client opens a new one and sends what was not acknowledged. Each commit is the REST API's.
struct FirestoreWriteStream {
    let host: FirestoreStreamHost
    let metadata: [String: String]

    func run(requests: some AsyncSequence<StreamRequest, Never>, answers: StreamAnswers) async throws(GRPCStatus) {
        var database: String?
        var sequence = 0
        let streamID = FirestoreREST.autoID()
        let bridge = FirestoreGRPC(host: host)
        for await message in requests {
            let request: Google_Firestore_V1_WriteRequest = try message.decode()
            var response = Google_Firestore_V1_WriteResponse()
            if let database {
                guard request.database.isEmpty || request.database == database else {
                    throw .invalidArgument("a Write stream serves one database, \(database)")
                }
                if !request.writes.isEmpty {
                    var commit = Google_Firestore_V1_CommitRequest()
                    commit.writes = request.writes
                    let answer = try await bridge.rest("POST", database + "/documents:commit", body: commit, metadata: metadata)
                    let result = try FirestoreGRPC.message(Google_Firestore_V1_CommitResponse.self, answer)
                    response.writeResults = result.writeResults
                    response.commitTime = result.commitTime
                }
            } else {
                guard request.streamID.isEmpty else {
                    throw GRPCStatus(name: "NOT_FOUND", message: "stream \(request.streamID) cannot be resumed here: open a new one")
                }
                guard !request.database.isEmpty else { throw .invalidArgument("WriteRequest.database is required on a stream's first request") }
                guard request.writes.isEmpty else { throw .invalidArgument("a Write stream's first request carries no writes") }
                database = request.database
            }
            sequence += 1
            response.streamID = streamID
            response.streamToken = withUnsafeBytes(of: UInt64(sequence).bigEndian) { Data($0) }
            do { try await answers.send(response) } catch { throw .unavailable("the stream closed: \(error)") }
        }
    }
}
