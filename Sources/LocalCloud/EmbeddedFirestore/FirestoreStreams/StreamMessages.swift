import SwiftProtobuf

/// One request of a Firestore stream (Listen, Write) as its transport carries it: a protobuf message
/// in a gRPC frame, or proto3's JSON mapping of the same message in a WebChannel map. The streams read
/// both; what they mean is the same.
enum StreamRequest: Sendable {
    case protobuf([UInt8])
    case json(String)

    func decode<Message: SwiftProtobuf.Message>(_: Message.Type = Message.self) throws(GRPCStatus) -> Message {
        do {
            switch self {
            case .protobuf(let bytes): return try Message(serializedBytes: bytes)
            case .json(let text): return try Message(jsonString: text)
            }
        } catch {
            throw .invalidArgument("the request is not a \(Message.protoMessageName): \(error)")
        }
    }
}

/// Where a stream's answers go: a gRPC call's frames, or a WebChannel session's arrays. `send` waits
/// while the client is behind (HTTP/2's flow control, or WebChannel arrays not yet acknowledged), and
/// throws once the client is gone.
struct StreamAnswers: Sendable {
    let send: @Sendable (any SwiftProtobuf.Message) async throws -> Void

    static func grpc(_ writer: GRPCResponseWriter) -> StreamAnswers {
        StreamAnswers { message in try await writer.send(try message.serializedBytes()) }
    }
}

extension GRPCRequests {
    /// The call's messages as stream requests (each still taken one at a time).
    var streamRequests: AsyncMapSequence<GRPCRequests, StreamRequest> { map { StreamRequest.protobuf($0) } }
}
