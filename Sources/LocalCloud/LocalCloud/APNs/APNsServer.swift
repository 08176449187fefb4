import EmbeddedFirestore
import Logging
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import ServiceLifecycle

/// The APNs stand-in's server: TLS, then HTTP/2 on every connection as Apple's is (a client that
/// negotiates no protocol speaks HTTP/2 all the same), each stream a request to `APNsSink`. Written on
/// NIO's HTTP/2 frames rather than an HTTP/1-shaped server because Apple's answers are frames: a 200
/// is a HEADERS frame that ends the stream, with no DATA frame (clients such as aioapns read any DATA
/// frame as a JSON error body).
struct APNsServer: Service {
    let sink: APNsSink
    let tls: TLSConfiguration
    let port: Int
    let logger: Logger
    let onRunning: @Sendable (Int) async -> Void

    func run() async throws {
        let context = try NIOSSLContext(configuration: tls)
        let sink = self.sink
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
                        mode: .server, connectionConfiguration: .init(), streamConfiguration: .init()
                    ) { stream in
                        stream.eventLoop.makeCompletedFuture { try stream.pipeline.syncOperations.addHandler(APNsStreamHandler(sink: sink)) }
                    }
                }
            }
            .bind(host: "127.0.0.1", port: port).get()
        await onRunning(channel.localAddress?.port ?? port)
        // A cancelled task stops it as a graceful shutdown does: waiting on the channel alone would outlive it.
        await withTaskCancellationOrGracefulShutdownHandler {
            try? await channel.closeFuture.get()
        } onCancelOrGracefulShutdown: {
            channel.close(promise: nil)
        }
    }
}

/// One HTTP/2 stream: its headers and body gathered, then the sink's answer written as frames.
final class APNsStreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    let sink: APNsSink
    var headers = HPACKHeaders()
    var body: [UInt8] = []
    static let maximumBody = 64 << 10

    init(sink: APNsSink) { self.sink = sink }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let payload = unwrapInboundIn(data)
        let ended: Bool
        switch payload {
        case .headers(let frame):
            headers.add(contentsOf: frame.headers)
            ended = frame.endStream
        case .data(let frame):
            if case .byteBuffer(var buffer) = frame.data, body.count + buffer.readableBytes <= Self.maximumBody {
                body += buffer.readBytes(length: buffer.readableBytes) ?? []
            }
            ended = frame.endStream
        default:
            ended = false
        }
        guard ended else { return }
        var fields: [String: String] = [:]
        for (name, value, _) in headers where !name.hasPrefix(":") && fields[name.lowercased()] == nil { fields[name.lowercased()] = value }
        let path = headers.first(name: ":path") ?? "/"
        let parts = path.split(separator: "?", maxSplits: 1).map(String.init)
        let request = LocalRequest(
            method: headers.first(name: ":method") ?? "GET", path: parts[0], query: parts.count > 1 ? parts[1] : nil, headers: fields, body: body)
        let sink = self.sink
        let loop = context.eventLoop
        let bound = NIOLoopBound((self, context), eventLoop: loop)
        Task {
            let answer = await sink.handle(request)
            loop.execute {
                let (handler, context) = bound.value
                handler.respond(answer, context: context)
            }
        }
    }

    func respond(_ answer: LocalResponse, context: ChannelHandlerContext) {
        var head = HPACKHeaders([(":status", String(answer.status))])
        for (name, value) in answer.headers { head.add(name: name.lowercased(), value: value) }
        guard !answer.body.isEmpty else {
            context.writeAndFlush(wrapOutboundOut(.headers(.init(headers: head, endStream: true))), promise: nil)
            return
        }
        head.add(name: "content-type", value: answer.contentType)
        context.write(wrapOutboundOut(.headers(.init(headers: head))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(ByteBuffer(string: answer.body)), endStream: true))), promise: nil)
    }
}
