import NIOCore
import NIOHTTP1
import WireFormats

/// Collects one request at a time and answers it through the async handler; the answer is written on
/// the channel's event loop.
///
/// Requests a client sends before its previous answer (HTTP/1.1 pipelining) wait their turn here, and
/// reading stops while any wait. NIO's `HTTPServerPipelineHandler` would do this too, but it stops
/// reading for every request in flight, which costs two `epoll_ctl` calls per request.
///
/// Answers are written as bytes, each in one buffer: NIO's `HTTPResponseEncoder` would take a head,
/// a body and an end through the pipeline for each.
final class RequestHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    enum State {
        case idle
        case collecting(HTTPRequestHead, ByteBuffer)
        case discarding(HTTPRequestHead, bytes: Int)
        /// Headers over the limits: the body is read and dropped, then 431 answered and the connection closed.
        case refusingHeaders(HTTPRequestHead, bytes: Int)
        /// The head is being checked (`HTTPServer.HeadCheck`): the body waits, unread, for the verdict.
        case checking
        case answering
    }

    /// More headers than this, or more bytes of them in all, is refused (431) before any handler sees
    /// the request. An event carries about 20 headers and a few KiB (its identity token the largest);
    /// NIO's parser bounds one header line, not their number.
    static let maximumHeaderCount = 100
    static let maximumHeaderBytes = 64 * 1024

    let maximumBodyBytes: Int
    let maximumDiscardedBytes: Int
    let idleTimeout: TimeAmount
    let headCheck: HTTPServer.HeadCheck?
    let handler: HTTPServer.Handler
    var state = State.idle
    /// Parts of requests that came while one was being answered, in order.
    var waiting = CircularBuffer<HTTPServerRequestPart>()
    /// A read the channel asked for while requests wait: made once they are all taken.
    var readDeferred = false
    /// Stopping: the connection closes after the answer being written (at once when none is).
    var quiescing = false
    var idleTimer: Scheduled<Void>?
    var lastActivity = NIODeadline.now()

    init(
        maximumBodyBytes: Int, maximumDiscardedBytes: Int, idleTimeout: TimeAmount, headCheck: HTTPServer.HeadCheck? = nil,
        handler: @escaping HTTPServer.Handler
    ) {
        self.maximumBodyBytes = maximumBodyBytes
        self.maximumDiscardedBytes = maximumDiscardedBytes
        self.idleTimeout = idleTimeout
        self.headCheck = headCheck
        self.handler = handler
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        lastActivity = .now()
        let part = unwrapInboundIn(data)
        if isHolding || !waiting.isEmpty {
            waiting.append(part)
        } else {
            take(part, context: context)
        }
    }

    func read(context: ChannelHandlerContext) {
        if waiting.isEmpty { context.read() } else { readDeferred = true }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is ChannelShouldQuiesceEvent else { return context.fireUserInboundEventTriggered(event) }
        quiescing = true
        // A request being read or answered gets its answer first, then the connection closes.
        if case .idle = state { context.close(promise: nil) }
    }

    /// Takes the requests that waited, in order, until one is being answered again.
    func takeWaiting(context: ChannelHandlerContext) {
        while !isHolding, let part = waiting.popFirst() { take(part, context: context) }
        if waiting.isEmpty, readDeferred {
            readDeferred = false
            context.read()
        }
    }

    func take(_ part: HTTPServerRequestPart, context: ChannelHandlerContext) {
        switch part {
        case .head(let head):
            if Self.headersProblem(head.headers) != nil {
                state = .refusingHeaders(head, bytes: 0)
            } else if let headCheck {
                check(head, with: headCheck, context: context)
            } else {
                start(head, context: context)
            }
        case .body(var part):
            if case .refusingHeaders(let head, let bytes) = state {
                guard bytes + part.readableBytes <= maximumDiscardedBytes else { return context.close(promise: nil) }
                state = .refusingHeaders(head, bytes: bytes + part.readableBytes)
                return
            }
            if case .discarding(let head, let bytes) = state {
                // Read and dropped, so the answer can be sent; a sender that never stops is cut off.
                guard bytes + part.readableBytes <= maximumDiscardedBytes else { return context.close(promise: nil) }
                state = .discarding(head, bytes: bytes + part.readableBytes)
                return
            }
            guard case .collecting(let head, var body) = state else { return }
            if body.readableBytes + part.readableBytes > maximumBodyBytes {
                state = .discarding(head, bytes: body.readableBytes + part.readableBytes)
            } else {
                state = .answering  // not to copy the buffer on write (it is uniquely held while out of `state`)
                body.writeBuffer(&part)
                state = .collecting(head, body)
            }
        case .end:
            switch state {
            case .collecting(let head, let body):
                answer(context: context, head: head, .complete(Self.request(head, body: Array(buffer: body))))
            case .discarding(let head, _):
                answer(context: context, head: head, .tooLarge(Self.request(head, body: [])))
            case .refusingHeaders(let head, _):
                state = .answering
                let message = Self.headersProblem(head.headers) ?? "the request's headers are over the limits"
                let body: JSONValue = ["error": ["code": 431, "status": "INVALID_ARGUMENT", "message": .string(message)]]
                write(
                    HTTPServer.Response(status: 431, headers: [("content-type", "application/json")], body: body.serializedBytes()), version: head.version,
                    keepAlive: false, context: context)
            case .idle, .checking, .answering:
                return
            }
        }
    }

    /// Reads the body of a request whose head is accepted: kept up to the limit, or read and dropped.
    func start(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let declared = head.headers.first(name: "content-length").flatMap { Int($0) }
        if let declared, declared > maximumBodyBytes {
            state = .discarding(head, bytes: 0)
        } else {
            state = .collecting(head, context.channel.allocator.buffer(capacity: min(declared ?? 0, 1 << 20)))
            if head.headers.first(name: "expect")?.lowercased() == "100-continue" {
                var buffer = context.channel.allocator.buffer(capacity: 32)
                buffer.writeResponseHead(version: head.version, status: 100, headers: [])
                context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
            }
        }
    }

    /// Checks the head before the body is read (an identity token, say): meanwhile what arrives waits
    /// and reading stops, so a caller that is refused never has its body buffered. Refused: the answer
    /// goes out and the connection closes; accepted: the body is read as usual.
    func check(_ head: HTTPRequestHead, with headCheck: @escaping HTTPServer.HeadCheck, context: ChannelHandlerContext) {
        state = .checking
        let promise = context.eventLoop.makePromise(of: HTTPServer.Response?.self)
        let request = Self.request(head, body: [])
        promise.completeWithTask { await headCheck(request) }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        promise.futureResult.whenSuccess { refusal in
            let (handler, context) = bound.value
            if let refusal {
                handler.write(refusal, version: head.version, keepAlive: false, context: context)
            } else {
                handler.start(head, context: context)
                handler.takeWaiting(context: context)
            }
        }
    }

    func channelActive(context: ChannelHandlerContext) {
        restartIdleTimer(context: context)
        context.fireChannelActive()
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { restartIdleTimer(context: context) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        idleTimer?.cancel()
        idleTimer = nil
        context.fireChannelInactive()
    }

    /// A connection that sends nothing for `idleTimeout` while none of its requests is being answered
    /// is closed; a request being answered may take its time. Reads only note the time: the timer looks
    /// at it when it fires and waits again for what is left.
    func restartIdleTimer(context: ChannelHandlerContext) {
        idleTimer?.cancel()
        lastActivity = .now()
        scheduleIdleCheck(context: context, after: idleTimeout)
    }

    func scheduleIdleCheck(context: ChannelHandlerContext, after delay: TimeAmount) {
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        idleTimer = context.eventLoop.scheduleTask(in: delay) {
            let (handler, context) = bound.value
            let idle = NIODeadline.now() - handler.lastActivity
            if handler.isHolding || idle < handler.idleTimeout {
                handler.scheduleIdleCheck(context: context, after: handler.isHolding ? handler.idleTimeout : handler.idleTimeout - idle)
            } else {
                context.close(promise: nil)
            }
        }
    }

    /// A request that cannot be parsed gets 400 (unless an answer is being written) and the connection
    /// is closed: nothing more can be read from it.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is HTTPParserError, !isHolding {
            state = .answering
            var buffer = context.channel.allocator.buffer(capacity: 96)
            buffer.writeResponseHead(version: .http1_1, status: 400, headers: [], contentLength: 0, closing: true)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(buffer)).whenComplete { _ in channel.close(promise: nil) }
            return
        }
        context.close(promise: nil)
    }

    /// A request is being checked or answered: what arrives meanwhile waits its turn.
    var isHolding: Bool {
        switch state {
        case .answering, .checking: true
        default: false
        }
    }

    func answer(context: ChannelHandlerContext, head: HTTPRequestHead, _ body: HTTPServer.Body) {
        state = .answering
        let handler = handler
        let keepAlive = head.isKeepAlive
        let version = head.version
        let promise = context.eventLoop.makePromise(of: HTTPServer.Response.self)
        promise.completeWithTask { await handler(body) }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        promise.futureResult.whenSuccess { response in
            let (handler, context) = bound.value
            handler.write(response, version: version, keepAlive: keepAlive, context: context)
        }
    }

    func write(_ response: HTTPServer.Response, version: HTTPVersion, keepAlive requested: Bool, context: ChannelHandlerContext) {
        state = .idle
        lastActivity = .now()
        let keepAlive = requested && !quiescing
        var buffer = context.channel.allocator.buffer(capacity: 128 + response.body.count)
        buffer.writeResponseHead(version: version, status: response.status, headers: response.headers, contentLength: response.body.count, closing: !keepAlive)
        buffer.writeBytes(response.body)
        let written = context.writeAndFlush(wrapOutboundOut(buffer))
        if !keepAlive {
            waiting.removeAll()
            let channel = context.channel
            written.whenComplete { _ in channel.close(promise: nil) }
        } else if !waiting.isEmpty || readDeferred {
            takeWaiting(context: context)
        }
    }

    /// Why the headers are refused (over `maximumHeaderCount` or `maximumHeaderBytes`, names and values
    /// counted), or nil.
    static func headersProblem(_ headers: HTTPHeaders) -> String? {
        guard headers.count <= maximumHeaderCount else {
            return "the request has \(headers.count) headers; the limit is \(maximumHeaderCount) (and \(maximumHeaderBytes) bytes of them)"
        }
        var bytes = 0
        for (name, value) in headers { bytes += name.utf8.count + value.utf8.count + 4 }
        guard bytes <= maximumHeaderBytes else {
            return "the request's headers are \(bytes) bytes; the limit is \(maximumHeaderBytes) (and \(maximumHeaderCount) headers)"
        }
        return nil
    }

    static func request(_ head: HTTPRequestHead, body: [UInt8]) -> HTTPServer.Request {
        var headers = [String: String](minimumCapacity: head.headers.count)
        // Backwards, so the first of repeated names is the one kept, with one lookup per header.
        for (name, value) in head.headers.reversed() { headers[name.asciiLowercased] = value }
        let path = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? "/"
        return HTTPServer.Request(method: head.method, path: path, headers: headers, body: body)
    }
}

extension ByteBuffer {
    /// An HTTP/1 answer's status line, headers and the blank line after them. The names and values are
    /// the server's own (no line breaks), so they are written as they are. Assembled as an array and
    /// written once: each small write to a buffer checks its capacity and uniqueness again.
    mutating func writeResponseHead(version: HTTPVersion, status: Int, headers: [(String, String)], contentLength: Int? = nil, closing: Bool = false) {
        var head: [UInt8] = []
        head.reserveCapacity(128)
        head.append(contentsOf: "HTTP/".utf8)
        head.appendDecimal(Int64(version.major))
        head.append(UInt8(ascii: "."))
        head.appendDecimal(Int64(version.minor))
        head.append(UInt8(ascii: " "))
        head.appendDecimal(Int64(status))
        head.append(UInt8(ascii: " "))
        head.append(contentsOf: HTTPResponseStatus(statusCode: status).reasonPhrase.utf8)
        head.append(contentsOf: "\r\n".utf8)
        for (name, value) in headers {
            head.append(contentsOf: name.utf8)
            head.append(contentsOf: ": ".utf8)
            head.append(contentsOf: value.utf8)
            head.append(contentsOf: "\r\n".utf8)
        }
        if let contentLength {
            head.append(contentsOf: "content-length: ".utf8)
            head.appendDecimal(Int64(contentLength))
            head.append(contentsOf: "\r\n".utf8)
        }
        if closing { head.append(contentsOf: "connection: close\r\n".utf8) }
        head.append(contentsOf: "\r\n".utf8)
        writeBytes(head)
    }
}
