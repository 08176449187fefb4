import Dispatch
import FirestoreModel
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A small HTTP/1.1 server on SwiftNIO, all a function needs: one request at a time per connection
/// (pipelined requests wait their turn), its body collected up to a limit, an async handler per request,
/// keep-alive, and a graceful stop that closes idle connections at once and busy ones after their answer.
/// No router, no service framework: what they cost a function in size and start-up is more than they do.
public struct HTTPServer: Sendable {
    public struct Request: Sendable {
        public var method: HTTPMethod
        /// The path without its query.
        public var path: String
        /// Header names in lower case; a repeated header keeps its first value.
        public var headers: [String: String]
        public var body: [UInt8]
    }

    public struct Response: Sendable {
        public var status: Int
        public var headers: [(String, String)]
        public var body: [UInt8]

        public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
            self.status = status
            self.headers = headers
            self.body = body
        }
    }

    /// A body over `maximumBodyBytes` is not kept: the handler hears of it once the request ends.
    public enum Body: Sendable {
        case complete(Request)
        case tooLarge(Request)
    }

    public typealias Handler = @Sendable (Body) async -> Response

    public let host: String
    public let port: Int
    public let maximumBodyBytes: Int
    /// A body over the limit is read and dropped (so its refusal can be answered) up to this many bytes;
    /// past them the connection is closed.
    public let maximumDiscardedBytes: Int
    /// How long a connection may send nothing while no request of it is being answered.
    public let idleTimeout: TimeAmount
    let handler: Handler

    public init(
        host: String, port: Int, maximumBodyBytes: Int, maximumDiscardedBytes: Int = 64 << 20, idleTimeout: TimeAmount = .seconds(75),
        handler: @escaping Handler
    ) {
        self.host = host
        self.port = port
        self.maximumBodyBytes = maximumBodyBytes
        self.maximumDiscardedBytes = maximumDiscardedBytes
        self.idleTimeout = idleTimeout
        self.handler = handler
    }

    /// Serves until `stop` fires (or the task is cancelled), then stops accepting, lets the requests in
    /// flight finish, and returns once every connection is closed.
    public func run(stop: StopSignal, onRunning: @Sendable (Int) async -> Void = { _ in }) async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let connections = OpenConnections()
        let limits = (body: maximumBodyBytes, discarded: maximumDiscardedBytes)
        let idleTimeout = idleTimeout
        let handler = handler
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelOption(.maxMessagesPerRead, value: 16)
            .childChannelInitializer { channel in
                connections.add(channel)
                return channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    // Four handlers, no more: each new handler type costs a search of the executable's protocol
                    // conformances on the first connection, which is the first request's time. The handler
                    // answers what the error and idle handlers would, and writes only headers it knows are valid.
                    try sync.configureHTTPServerPipeline(withErrorHandling: false, withOutboundHeaderValidation: false)
                    try sync.addHandler(
                        RequestHandler(maximumBodyBytes: limits.body, maximumDiscardedBytes: limits.discarded, idleTimeout: idleTimeout, handler: handler))
                }
            }
            .bind(host: host, port: port).get()
        await onRunning(channel.localAddress?.port ?? port)
        await stop.wait()
        try? await channel.close()
        await connections.quiesce()
    }
}

/// The connections a server holds, for its graceful stop: each is told to quiesce (NIO's HTTP/1 server
/// pipeline then closes it at once when idle, after its answer when busy), and the stop waits until all
/// have closed. One accepted while stopping is closed at once.
final class OpenConnections: Sendable {
    private let state = Mutex((channels: [ObjectIdentifier: any Channel](), stopping: false))

    func add(_ channel: any Channel) {
        let accepted = state.withLock { state in
            guard !state.stopping else { return false }
            state.channels[ObjectIdentifier(channel)] = channel
            return true
        }
        guard accepted else { return channel.close(promise: nil) }
        channel.closeFuture.whenComplete { _ in self.state.withLock { _ = $0.channels.removeValue(forKey: ObjectIdentifier(channel)) } }
    }

    func quiesce() async {
        let channels = state.withLock { state in
            state.stopping = true
            return Array(state.channels.values)
        }
        for channel in channels { channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent()) }
        for channel in channels { try? await channel.closeFuture.get() }
    }
}

/// Fires once: on `fire()`, on SIGTERM or SIGINT once `listenForTermination()` was called, or for
/// a waiter whose task is cancelled.
public final class StopSignal: Sendable {
    private struct State: Sendable {
        var fired = false
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var next: UInt64 = 0
    }
    private let state = Mutex(State())

    public init() {}

    public var hasFired: Bool { state.withLock { $0.fired } }

    public func fire() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard !state.fired else { return [] }
            state.fired = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// SIGTERM (Cloud Run stopping an instance) and SIGINT (Ctrl-C) fire the signal instead of ending the process.
    public func listenForTermination() {
        for number in [SIGTERM, SIGINT] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number)
            // The handler holds its source, so it lives as long as the process (one per signal).
            source.setEventHandler { [self] in
                withExtendedLifetime(source) { fire() }
            }
            source.resume()
        }
    }

    /// Waits until fired, or until the waiting task is cancelled.
    public func wait() async {
        let id = state.withLock { state -> UInt64 in
            state.next += 1
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.fired || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}

/// Collects one request at a time and answers it through the async handler; the answer is written on
/// the channel's event loop.
final class RequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    enum State {
        case idle
        case collecting(HTTPRequestHead, ByteBuffer)
        case discarding(HTTPRequestHead, bytes: Int)
        case answering
    }

    let maximumBodyBytes: Int
    let maximumDiscardedBytes: Int
    let idleTimeout: TimeAmount
    let handler: HTTPServer.Handler
    var state = State.idle
    var idleTimer: Scheduled<Void>?
    var lastActivity = NIODeadline.now()

    init(maximumBodyBytes: Int, maximumDiscardedBytes: Int, idleTimeout: TimeAmount, handler: @escaping HTTPServer.Handler) {
        self.maximumBodyBytes = maximumBodyBytes
        self.maximumDiscardedBytes = maximumDiscardedBytes
        self.idleTimeout = idleTimeout
        self.handler = handler
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        lastActivity = .now()
        switch unwrapInboundIn(data) {
        case .head(let head):
            let declared = head.headers.first(name: "content-length").flatMap { Int($0) }
            if let declared, declared > maximumBodyBytes {
                state = .discarding(head, bytes: 0)
            } else {
                state = .collecting(head, context.channel.allocator.buffer(capacity: min(declared ?? 0, 1 << 20)))
                if head.headers.first(name: "expect")?.lowercased() == "100-continue" {
                    context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .continue))), promise: nil)
                }
            }
        case .body(var part):
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
            case .idle, .answering:
                return
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
            if handler.isAnswering || idle < handler.idleTimeout {
                handler.scheduleIdleCheck(context: context, after: handler.isAnswering ? handler.idleTimeout : handler.idleTimeout - idle)
            } else {
                context.close(promise: nil)
            }
        }
    }

    /// A request that cannot be parsed gets 400 (unless an answer is being written) and the connection
    /// is closed: nothing more can be read from it.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is HTTPParserError, !isAnswering {
            state = .answering
            var headers = HTTPHeaders()
            headers.add(name: "connection", value: "close")
            headers.add(name: "content-length", value: "0")
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .badRequest, headers: headers))), promise: nil)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
            return
        }
        context.close(promise: nil)
    }

    var isAnswering: Bool {
        if case .answering = state { true } else { false }
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

    func write(_ response: HTTPServer.Response, version: HTTPVersion, keepAlive: Bool, context: ChannelHandlerContext) {
        state = .idle
        lastActivity = .now()
        var headers = HTTPHeaders()
        headers.reserveCapacity(response.headers.count + 2)
        for (name, value) in response.headers { headers.add(name: name, value: value) }
        headers.add(name: "content-length", value: String(response.body.count))
        if !keepAlive { headers.add(name: "connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: version, status: .init(statusCode: response.status), headers: headers))), promise: nil)
        if !response.body.isEmpty {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: response.body)))), promise: nil)
        }
        let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let channel = context.channel
            written.whenComplete { _ in channel.close(promise: nil) }
        }
    }

    static func request(_ head: HTTPRequestHead, body: [UInt8]) -> HTTPServer.Request {
        var headers = [String: String](minimumCapacity: head.headers.count)
        // Backwards, so the first of repeated names is the one kept, with one lookup per header.
        for (name, value) in head.headers.reversed() { headers[name.asciiLowercased] = value }
        let path = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? "/"
        return HTTPServer.Request(method: head.method, path: path, headers: headers, body: body)
    }
}
