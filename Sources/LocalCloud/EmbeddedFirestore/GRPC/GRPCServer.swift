import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP2

/// A gRPC status: how a call ended (https://grpc.github.io/grpc/core/md_doc_statuscodes.html).
public struct GRPCStatus: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: Int
    public var message: String

    public init(_ code: Int, _ message: String) {
        self.code = code
        self.message = message
    }

    public static let ok = GRPCStatus(0, "")
    public static func invalidArgument(_ message: String) -> GRPCStatus { GRPCStatus(3, message) }
    public static func notFound(_ message: String) -> GRPCStatus { GRPCStatus(5, message) }
    public static func resourceExhausted(_ message: String) -> GRPCStatus { GRPCStatus(8, message) }
    public static func unimplemented(_ message: String) -> GRPCStatus { GRPCStatus(12, message) }
    public static func internalError(_ message: String) -> GRPCStatus { GRPCStatus(13, message) }
    public static func unavailable(_ message: String) -> GRPCStatus { GRPCStatus(14, message) }

    static let names = [
        "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
        "UNAUTHENTICATED",
    ]

    /// The code of a canonical status name (`NOT_FOUND`, …), as Google's REST errors carry it.
    public init(name: String, message: String) {
        self.init(Self.names.firstIndex(of: name) ?? 2, message)
    }

    /// The canonical name of the code (`NOT_FOUND`, …).
    public var name: String { Self.names.indices.contains(code) ? Self.names[code] : "UNKNOWN" }

    /// The HTTP status Google's APIs answer this code with (google.rpc.Code's mapping).
    public var httpStatus: Int {
        [200, 499, 500, 400, 504, 404, 409, 403, 429, 400, 409, 400, 501, 500, 503, 500, 401][Self.names.indices.contains(code) ? code : 2]
    }

    public var description: String { "gRPC status \(code): \(message)" }
}

/// One call's request messages, in order; ends when the client half-closes. Each message taken tells
/// the stream's reader, which stops reading while too many bytes wait to be taken (HTTP/2's flow
/// control then holds the client back): a client cannot make the call buffer what it sends faster
/// than the call takes it.
public struct GRPCRequests: AsyncSequence, Sendable {
    public typealias Element = [UInt8]
    let messages: AsyncStream<[UInt8]>
    let taken: @Sendable (Int) -> Void

    static func make(taken: @escaping @Sendable (Int) -> Void) -> (GRPCRequests, AsyncStream<[UInt8]>.Continuation) {
        let (messages, continuation) = AsyncStream.makeStream(of: [UInt8].self)
        return (GRPCRequests(messages: messages, taken: taken), continuation)
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        var messages: AsyncStream<[UInt8]>.AsyncIterator
        let taken: @Sendable (Int) -> Void

        public mutating func next() async -> [UInt8]? {
            let message = await messages.next()
            if let message { taken(message.count) }
            return message
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(messages: messages.makeAsyncIterator(), taken: taken) }
}

/// Writes one call's answers: each message as it is ready, then the status in the trailers.
public final class GRPCResponseWriter: Sendable {
    let channel: any Channel
    let state = NIOLockedValueBox((headersSent: false, finished: false))

    init(channel: any Channel) { self.channel = channel }

    /// Sends one response message (its headers first, once). Throws once the stream is gone.
    public func send(_ message: [UInt8]) async throws {
        var frame = channel.allocator.buffer(capacity: message.count + 5)
        frame.writeInteger(UInt8(0))
        frame.writeInteger(UInt32(message.count))
        frame.writeBytes(message)
        let sendHeaders = state.withLockedValue { state -> Bool in
            defer { state.headersSent = true }
            return !state.headersSent
        }
        if sendHeaders { channel.write(HTTP2Frame.FramePayload.headers(.init(headers: Self.responseHeaders)), promise: nil) }
        try await channel.writeAndFlush(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(frame)))).get()
    }

    /// Ends the call with `status` (trailers only when nothing was sent).
    func finish(_ status: GRPCStatus) async {
        guard let headersSent = claimEnd() else { return }
        await writeTrailers(status, headersSent: headersSent)
    }

    /// Ends the call with `status` whatever its task does after: the end is claimed before this
    /// returns, so the task's own (a cancellation, a request missing) comes second and is not sent.
    func finishFirst(_ status: GRPCStatus) {
        guard let headersSent = claimEnd() else { return }
        Task { await writeTrailers(status, headersSent: headersSent) }
    }

    /// Whether the response headers went out, or nil when the call has already ended.
    private func claimEnd() -> Bool? {
        state.withLockedValue { state -> Bool? in
            guard !state.finished else { return nil }
            state.finished = true
            return state.headersSent
        }
    }

    private func writeTrailers(_ status: GRPCStatus, headersSent: Bool) async {
        var trailers = headersSent ? HPACKHeaders() : Self.responseHeaders
        trailers.add(name: "grpc-status", value: String(status.code))
        if !status.message.isEmpty { trailers.add(name: "grpc-message", value: Self.percentEncoded(status.message)) }
        try? await channel.writeAndFlush(HTTP2Frame.FramePayload.headers(.init(headers: trailers, endStream: true))).get()
    }

    static let responseHeaders: HPACKHeaders = [":status": "200", "content-type": "application/grpc"]

    /// grpc-message is percent-encoded UTF-8: every byte outside printable ASCII, and `%` itself.
    static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8.prefix(4096) {
            if byte >= 0x20, byte < 0x7F, byte != UInt8(ascii: "%") {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = Array("0123456789ABCDEF".utf8)
                out += "%" + String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]], as: UTF8.self)
            }
        }
        return out
    }
}

/// Answers gRPC calls: `method` is the request's `:path` (`/package.Service/Method`).
public protocol GRPCService: Sendable {
    func handle(method: String, metadata: [String: String], requests: GRPCRequests, responses: GRPCResponseWriter) async throws(GRPCStatus)
}

/// One HTTP/2 stream as one gRPC call: its headers pick the method, its DATA frames carry
/// length-prefixed messages (uncompressed; at most `maximumMessageBytes` each), and the call runs as
/// a task that ends the stream with the status in the trailers. A stream the client resets cancels it.
final class GRPCStreamHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    static let maximumMessageBytes = 16 << 20
    /// Request bytes delivered and not yet taken by the call above which the stream is not read.
    static let readPauseBytes = 4 << 20

    let service: any GRPCService
    let logger: Logger
    var buffer = ByteBuffer()
    var requests: AsyncStream<[UInt8]>.Continuation?
    /// Request bytes delivered to the call and not yet taken (the call's task takes them).
    let untaken = NIOLockedValueBox(0)
    /// A read the channel asked for while too many bytes were untaken: made once the call takes them.
    var readPaused = false
    var writer: GRPCResponseWriter?
    var call: Task<Void, Never>?
    var refused = false

    init(service: any GRPCService, logger: Logger) {
        self.service = service
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        switch unwrapInboundIn(data) {
        case .headers(let headers):
            if call == nil { start(context: context, headers: headers.headers) }
            if headers.endStream { requests?.finish() }
        case .data(let data):
            guard case .byteBuffer(var bytes) = data.data else { return }
            buffer.writeBuffer(&bytes)
            deliverMessages(context: context)
            if data.endStream { requests?.finish() }
        default:
            break
        }
    }

    func start(context: ChannelHandlerContext, headers: HPACKHeaders) {
        var metadata: [String: String] = [:]
        for (name, value, _) in headers where metadata[name] == nil { metadata[name] = value }
        let method = metadata[":path"] ?? ""
        let resume = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let (stream, continuation) = GRPCRequests.make { [untaken] count in
            let before = untaken.withLockedValue { value in
                defer { value -= count }
                return value
            }
            if before > Self.readPauseBytes, before - count <= Self.readPauseBytes {
                resume.eventLoop.execute {
                    let (handler, context) = resume.value
                    handler.resumeReading(context: context)
                }
            }
        }
        requests = continuation
        let writer = GRPCResponseWriter(channel: context.channel)
        self.writer = writer
        guard metadata["content-type"]?.hasPrefix("application/grpc") == true else {
            refuse(context: context, .internalError("content-type must be application/grpc, not \(metadata["content-type"] ?? "none")"))
            return
        }
        let service = service
        call = Task {
            let status: GRPCStatus
            do {
                try await service.handle(method: method, metadata: metadata, requests: stream, responses: writer)
                status = .ok
            } catch let error as GRPCStatus {
                status = error
            } catch {
                status = .internalError("\(error)")
            }
            await writer.finish(status)
        }
    }

    /// Splits the buffered bytes into messages (a flag byte, a 4-byte length, the message).
    func deliverMessages(context: ChannelHandlerContext) {
        while buffer.readableBytes >= 5 {
            let compressed = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self)!
            let length = Int(buffer.getInteger(at: buffer.readerIndex + 1, as: UInt32.self)!)
            guard compressed == 0 else {
                return refuse(context: context, .unimplemented("compressed messages are not supported: send them uncompressed"))
            }
            guard length <= Self.maximumMessageBytes else {
                return refuse(context: context, .resourceExhausted("a message of \(length) bytes is over the limit of \(Self.maximumMessageBytes)"))
            }
            guard buffer.readableBytes >= 5 + length else { return }
            buffer.moveReaderIndex(forwardBy: 5)
            untaken.withLockedValue { $0 += length }
            requests?.yield(buffer.readBytes(length: length)!)
        }
        buffer.discardReadBytes()
    }

    func read(context: ChannelHandlerContext) {
        // A refused call's remaining messages are read and dropped.
        if !refused, untaken.withLockedValue({ $0 }) > Self.readPauseBytes {
            readPaused = true
        } else {
            context.read()
        }
    }

    func resumeReading(context: ChannelHandlerContext) {
        guard readPaused else { return }
        readPaused = false
        context.read()
    }

    /// Ends the call at once with `status`, the client's messages unread.
    func refuse(context: ChannelHandlerContext, _ status: GRPCStatus) {
        refused = true
        (writer ?? GRPCResponseWriter(channel: context.channel)).finishFirst(status)
        requests?.finish()
        call?.cancel()
        resumeReading(context: context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        requests?.finish()
        call?.cancel()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.debug("gRPC stream closed: \(error)")
        context.close(promise: nil)
    }
}
