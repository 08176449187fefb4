import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHPACK
import NIOHTTP2
import ServiceLifecycle

/// One port speaks HTTP/1.1 (Firestore's REST API and whatever else the server routes: the local
/// cloud's FCM, console and admin API)
/// and cleartext HTTP/2 with gRPC (Firestore's gRPC API, the default transport of Google's SDKs), told
/// apart by a connection's first bytes, as Google's emulator does: HTTP/2 starts with its preface.
struct HTTP1OrGRPCChannel: ServerChildChannel {
    /// A connection, and what its first bytes will say it is.
    struct Value: ServerChildChannelValue {
        let channel: any Channel
        let protocolSpoken: EventLoopFuture<Spoken>
    }

    enum Spoken: Sendable {
        case http1(HTTP1Channel.Value)
        case grpc
    }

    let http1: HTTP1Channel
    let grpc: any GRPCService

    /// Adds the sniffer and returns at once: the connection is registered (and read) only after this.
    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let spoken = channel.eventLoop.makePromise(of: Spoken.self)
        let http1 = http1
        let grpc = grpc
        let sniffer = ProtocolSniffer { kind, channel in
            switch kind {
            case .http1:
                return http1.setup(channel: channel, logger: logger).map { Spoken.http1($0) }
            case .http2:
                return channel.eventLoop.makeCompletedFuture {
                    // A client that goes away closes the connection (HTTP/1 keeps half-closed ones for its answers).
                    try channel.syncOptions?.setOption(.allowRemoteHalfClosure, value: false)
                    // An app's one channel carries every listener as a stream of its own, and its writes besides:
                    // HTTP/2's usual 100 concurrent streams would leave the 101st call waiting.
                    var connection = NIOHTTP2Handler.ConnectionConfiguration()
                    connection.initialSettings = [
                        HTTP2Setting(parameter: .maxConcurrentStreams, value: 10_000),
                        HTTP2Setting(parameter: .maxHeaderListSize, value: HPACKDecoder.defaultMaxHeaderListSize),
                    ]
                    _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
                        mode: .server, connectionConfiguration: connection, streamConfiguration: .init()
                    ) { stream in
                        stream.eventLoop.makeCompletedFuture {
                            try stream.pipeline.syncOperations.addHandler(GRPCStreamHandler(service: grpc, logger: logger))
                        }
                    }
                    return Spoken.grpc
                }
            }
        } decided: {
            spoken.completeWith($0)
        }
        return channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(sniffer)
            return Value(channel: channel, protocolSpoken: spoken.futureResult)
        }
    }

    func handle(value: Value, logger: Logger) async {
        // A connection that has said nothing yet must not hold up a stop or a cancelled task: it is closed then.
        let channel = value.channel
        let spoken = await withTaskCancellationOrGracefulShutdownHandler {
            try? await value.protocolSpoken.get()
        } onCancelOrGracefulShutdown: {
            channel.close(promise: nil)
        }
        switch spoken {
        case .http1(let http1Value)?: await http1.handle(value: http1Value, logger: logger)
        case .grpc?:
            // Until the client leaves, or the local cloud stops (then the connection is closed: GOAWAY).
            await withTaskCancellationOrGracefulShutdownHandler {
                try? await channel.closeFuture.get()
            } onCancelOrGracefulShutdown: {
                channel.close(promise: nil)
            }
        case nil: try? await value.channel.close()
        }
    }
}

extension HTTPServerBuilder {
    /// HTTP/1.1, and gRPC over cleartext HTTP/2 on the same port.
    static func http1AndGRPC(_ grpc: any GRPCService) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in HTTP1OrGRPCChannel(http1: HTTP1Channel(responder: responder), grpc: grpc) }
    }

    /// HTTP/1.1 for the server's own routes, and Firestore's gRPC API over HTTP/2 on the same port.
    package static func http1AndFirestoreGRPC(_ host: FirestoreStreamHost) -> HTTPServerBuilder { http1AndGRPC(FirestoreGRPC(host: host)) }
}

/// Holds a connection's first bytes until they say which protocol it speaks, has the pipeline set up
/// for it, then hands the bytes on and leaves. A connection that says nothing for a minute is closed.
final class ProtocolSniffer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    enum Kind { case http1, http2 }
    typealias Configure = (Kind, any Channel) -> EventLoopFuture<HTTP1OrGRPCChannel.Spoken>

    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    let configure: Configure
    let decided: (Result<HTTP1OrGRPCChannel.Spoken, any Error>) -> Void
    var buffered: ByteBuffer?
    var deciding = false
    var timeout: Scheduled<Void>?

    init(configure: @escaping Configure, decided: @escaping (Result<HTTP1OrGRPCChannel.Spoken, any Error>) -> Void) {
        self.configure = configure
        self.decided = decided
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        timeout = context.eventLoop.scheduleTask(in: .seconds(60)) { channel.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        if buffered == nil { buffered = bytes } else { buffered!.writeBuffer(&bytes) }
        guard !deciding, let seen = buffered?.readableBytesView.prefix(Self.preface.count) else { return }
        let http2 = seen.elementsEqual(Self.preface.prefix(seen.count))
        guard !http2 || seen.count == Self.preface.count else { return }  // a prefix of the preface: wait for more
        deciding = true
        timeout?.cancel()
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        configure(http2 ? .http2 : .http1, context.channel).hop(to: context.eventLoop).whenComplete { result in
            let (sniffer, context) = bound.value
            if case .success = result, let bytes = sniffer.buffered {
                sniffer.buffered = nil
                context.fireChannelRead(sniffer.wrapInboundOut(bytes))
                context.fireChannelReadComplete()
                context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            }
            sniffer.decided(result)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        timeout?.cancel()
        if !deciding { decided(.failure(ChannelError.inputClosed)) }
        context.fireChannelInactive()
    }
}
