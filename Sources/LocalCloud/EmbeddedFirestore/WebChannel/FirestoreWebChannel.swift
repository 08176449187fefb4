import FirestoreModel
import HTTPTypes
import Hummingbird
import NIOCore
import SwiftProtobuf
import WireFormats

/// Firestore's streams over WebChannel, the transport of firebase-js-sdk in browsers and React Native,
/// on the local cloud's one port as Google's emulator serves them:
/// `/google.firestore.v1.Firestore/Listen/channel` and `/Write/channel`. The streams are the ones gRPC
/// carries (`FirestoreListen`, `FirestoreWriteStream`): one semantics, a third wire format.
///
/// - Handshake: a POST without `SID` opens a session, its body the first messages; the answer is
///   array 0, `["c", SID, …]`.
/// - Forward channel: a POST with `SID` carries more messages; the answer is
///   `[back channel open, last array id, units held]`.
/// - Back channel: `GET …&RID=rpc&SID=…&AID=…&TYPE=xmlhttp` answers the arrays after `AID`: with
///   `CI=0` as a stream that stays open (a keep-alive `["noop"]` every 20 s), with `CI=1` (long polling,
///   which React Native and proxies that buffer need) ending after the first arrays.
/// - `TYPE=terminate` ends the session; an unknown `SID` is 400 `Unknown SID`, which the client takes
///   as the session gone and opens another. A stream's error is a message `{"error": {…}}`.
package struct FirestoreWebChannel {
    let host: FirestoreStreamHost

    package init(host: FirestoreStreamHost) { self.host = host }

    static let service = "google.firestore.v1.Firestore"
    static let noopInterval: Duration = .seconds(20)
    /// A streaming back channel ends after this much, so the client opens the next one and says (AID)
    /// how far it got: what it acknowledged is let go.
    static let streamingBytesPerBackChannel = 1024 * 1024

    var sessions: WebChannelSessions { host.webChannels }

    /// The stream a request's path names (`/google.firestore.v1.Firestore/Listen/channel`), if any.
    package static func stream(of request: LocalRequest) -> WebChannelSession.Stream? {
        let s = request.segments
        guard s.count == 3, s[0] == service, s[2] == "channel" else { return nil }
        return WebChannelSession.Stream(rawValue: s[1])
    }

    package func respond(_ request: LocalRequest, stream: WebChannelSession.Stream) async -> Response {
        let query = request.query
        let sessionID = query["SID"]?.first
        if query["TYPE"]?.first == "terminate" {
            if let sessionID, let session = sessions.session(sessionID) { sessions.close(session, .terminated) }
            return Self.text("")
        }
        guard let sessionID, sessionID != "null" else {
            guard request.method == "POST" else { return Self.error(.invalidArgument("A WebChannel session opens with a POST (its handshake).")) }
            return await handshake(request, stream: stream)
        }
        guard let session = sessions.session(sessionID), session.stream == stream else {
            return Self.text("Unknown SID", status: 400)
        }
        let acknowledged = query["AID"]?.first.flatMap { Int($0) }
        if let acknowledged { session.acknowledge(acknowledged) }
        if request.method == "GET", query["RID"]?.first == "rpc" {
            return backChannel(session, after: acknowledged ?? 0, longPolling: query["CI"]?.first == "1")
        }
        guard request.method == "POST" else { return Self.error(.invalidArgument("A WebChannel back channel is GET …&RID=rpc; messages are POSTs.")) }
        let body: WebChannelWire.ForwardBody
        do { body = try WebChannelWire.forwardBody(request.body) } catch { return Self.error(error) }
        guard session.receive(body.maps) else {
            return Self.error(LocalAPIError(code: 503, status: "UNAVAILABLE", message: "The stream is behind on its messages.", retryAfterSeconds: 1))
        }
        let (last, units, open) = session.outstanding()
        return Self.text(WebChannelWire.frame("[\(open ? 1 : 0),\(last),\(units)]"))
    }

    func handshake(_ request: LocalRequest, stream: WebChannelSession.Stream) async -> Response {
        guard let database = request.query["database"]?.first else {
            return Self.error(.invalidArgument("A WebChannel handshake names its database: database=projects/P/databases/D."))
        }
        let parts = database.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "projects", parts[2] == "databases", !parts[1].isEmpty, !parts[3].isEmpty else {
            return Self.error(.invalidArgument("database must be projects/PROJECT/databases/DATABASE, not \(database.prefix(200))"))
        }
        do { try host.checkServed(String(parts[1])) } catch { return Self.error(error) }
        let body: WebChannelWire.ForwardBody
        do { body = try WebChannelWire.forwardBody(request.body) } catch { return Self.error(error) }
        var metadata = request.headers
        if let overwritten = request.query["$httpHeaders"]?.first { metadata.merge(WebChannelWire.headerLines(overwritten)) { $1 } }
        metadata.merge(body.headers) { $1 }
        metadata[":authority"] = request.headers["host"]
        let host = host
        let opened = sessions.open(stream: stream, database: database, metadata: metadata, firstMapID: body.maps.first?.id ?? 0) { session in
            await Self.run(stream, of: session, host: host)
        }
        guard let session = opened else {
            return Self.error(
                LocalAPIError(
                    code: 503, status: "UNAVAILABLE", message: "herald dev holds \(sessions.maximumSessions) WebChannel sessions already.",
                    retryAfterSeconds: 1))
        }
        guard session.receive(body.maps) else {
            sessions.close(session, .terminated)
            return Self.error(
                .invalidArgument("A WebChannel handshake carries at most \(WebChannelSession.queuedRequestsLimit) messages, not \(body.maps.count)."))
        }
        return Self.text(WebChannelWire.frame(WebChannelWire.handshake(session: session.id)))
    }

    /// Runs the session's stream to its end; an error goes to the client as the stream's last message.
    static func run(_ stream: WebChannelSession.Stream, of session: WebChannelSession, host: FirestoreStreamHost) async {
        let requests = session.requests.map { request in
            session.took()
            return request
        }
        let answers = StreamAnswers { message in try await session.send(try message.jsonString()) }
        do throws(GRPCStatus) {
            switch stream {
            case .listen: try await FirestoreListen(host: host, metadata: session.metadata).run(requests: requests, answers: answers)
            case .write: try await FirestoreWriteStream(host: host, metadata: session.metadata).run(requests: requests, answers: answers)
            }
        } catch {
            guard session.end == nil else { return }
            let message: JSONValue = [
                "error": ["code": .integer(Int64(error.httpStatus)), "message": .string(error.message), "status": .string(error.name)]
            ]
            try? await session.send(message.serialized())
        }
    }

    func backChannel(_ session: WebChannelSession, after acknowledged: Int, longPolling: Bool) -> Response {
        let (number, signals) = session.attachBackChannel()
        let sessions = sessions
        return Response(
            status: .ok, headers: Self.headers,
            body: ResponseBody { writer in
                defer { session.detachBackChannel(number) }
                var cursor = acknowledged
                var written = 0
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        while !Task.isCancelled {
                            try? await Task.sleep(for: Self.noopInterval)
                            if !Task.isCancelled { session.sendNoop() }
                        }
                    }
                    defer { group.cancelAll() }
                    for await _ in signals {
                        let (texts, last, finished) = session.arrays(after: cursor)
                        if !texts.isEmpty {
                            let frame = WebChannelWire.frame(WebChannelWire.arrays(texts))
                            try await writer.write(ByteBuffer(string: frame))
                            cursor = last
                            written += frame.utf8.count
                        }
                        if finished {
                            sessions.close(session, .terminated)
                            break
                        }
                        if longPolling ? !texts.isEmpty : written >= Self.streamingBytesPerBackChannel { break }
                    }
                }
                try await writer.finish(nil)
            })
    }

    static let headers: HTTPFields = [
        .contentType: "text/plain; charset=utf-8", HTTPField.Name("X-Content-Type-Options")!: "nosniff", .cacheControl: "private, max-age=0",
    ]

    static func text(_ text: String, status: Int = 200) -> Response {
        Response(status: .init(code: status), headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    static func error(_ error: LocalAPIError) -> Response { Response(LocalResponse(error)) }
}
