import Dispatch
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
    /// Looks at a request's head (its body empty) before any of its body is read: a refusal to send
    /// instead (the connection is then closed), or nil to read the body and handle the request.
    public typealias HeadCheck = @Sendable (Request) async -> Response?

    public let host: String
    public let port: Int
    public let maximumBodyBytes: Int
    /// A body over the limit is read and dropped (so its refusal can be answered) up to this many bytes;
    /// past them the connection is closed.
    public let maximumDiscardedBytes: Int
    /// How long a connection may send nothing while no request of it is being answered.
    public let idleTimeout: TimeAmount
    let handler: Handler
    let headCheck: HeadCheck?

    public init(
        host: String, port: Int, maximumBodyBytes: Int, maximumDiscardedBytes: Int = 64 << 20, idleTimeout: TimeAmount = .seconds(75),
        headCheck: HeadCheck? = nil, handler: @escaping Handler
    ) {
        self.host = host
        self.port = port
        self.maximumBodyBytes = maximumBodyBytes
        self.maximumDiscardedBytes = maximumDiscardedBytes
        self.idleTimeout = idleTimeout
        self.headCheck = headCheck
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
        let headCheck = headCheck
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelOption(.maxMessagesPerRead, value: 16)
            .childChannelInitializer { channel in
                connections.add(channel)
                return channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    // Two handlers, no more: each new handler type costs a search of the executable's protocol
                    // conformances on the first connection, which is the first request's time. The handler
                    // answers what the error and idle handlers would, keeps pipelined requests in order and
                    // writes its answers as bytes itself (no response encoder).
                    try sync.addHandler(ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes)))
                    try sync.addHandler(
                        RequestHandler(
                            maximumBodyBytes: limits.body, maximumDiscardedBytes: limits.discarded, idleTimeout: idleTimeout, headCheck: headCheck,
                            handler: handler))
                }
            }
        // A numeric address is bound as it is: resolving it (getaddrinfo) asks the kernel for the
        // machine's addresses first, which is time before the port opens.
        let address = try? SocketAddress(ipAddress: host, port: port)
        let channel = try await (address.map { bootstrap.bind(to: $0) } ?? bootstrap.bind(host: host, port: port)).get()
        await onRunning(channel.localAddress?.port ?? port)
        await stop.wait()
        try? await channel.close()
        await connections.quiesce()
    }
}

/// The connections a server holds, for its graceful stop: each is told to quiesce (its `RequestHandler`
/// then closes it at once when idle, after its answer when busy), and the stop waits until all
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
