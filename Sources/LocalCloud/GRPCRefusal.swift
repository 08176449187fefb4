import Hummingbird
import HummingbirdCore
import Logging
import NIOCore

/// The local cloud speaks HTTP/1.1 (Firestore's REST API). A gRPC client (the default transport of
/// Google's Firestore SDKs) opens the connection with HTTP/2's preface instead; the HTTP/1 parser used
/// to drop it, and the client retried in silence until its deadline (40 s and more). This child
/// channel looks at the first bytes: HTTP/1 goes on as before; HTTP/2 gets a real answer at once, a
/// gRPC `UNIMPLEMENTED` status on the first call saying which transport works, then GOAWAY.
struct HTTP1ChannelRefusingGRPC: ServerChildChannel {
    let http1: HTTP1Channel

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<HTTP1Channel.Value> {
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(HTTP2PrefaceRefuser(), position: .first)
        }.flatMap { self.http1.setup(channel: channel, logger: logger) }
    }

    func handle(value: HTTP1Channel.Value, logger: Logger) async { await http1.handle(value: value, logger: logger) }
}

extension HTTPServerBuilder {
    /// HTTP/1.1, with gRPC clients answered rather than dropped.
    static var http1RefusingGRPC: HTTPServerBuilder {
        HTTPServerBuilder { responder in HTTP1ChannelRefusingGRPC(http1: HTTP1Channel(responder: responder)) }
    }
}

/// Passes HTTP/1 bytes through untouched; answers an HTTP/2 connection itself (RFC 9113 frames, RFC 7541
/// literal header fields) and closes it.
final class HTTP2PrefaceRefuser: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
    static let message =
        "herald dev serves Firestore's REST API only, not gRPC: use your client's REST transport "
        + "(google-cloud-firestore: transport='rest'), or run Google's emulator behind herald dev --firestore HOST:PORT"
    /// More than a client's preface, settings and first call; a peer that sends more without a call is dropped.
    static let maximumBuffered = 64 * 1024

    enum State { case sniffing, http1, http2, answered }
    var state = State.sniffing
    var buffer: ByteBuffer?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        switch state {
        case .http1:
            context.fireChannelRead(data)
        case .answered:
            break
        case .sniffing, .http2:
            if buffer == nil { buffer = bytes } else { buffer!.writeBuffer(&bytes) }
            process(context: context)
        }
    }

    func process(context: ChannelHandlerContext) {
        guard var buffered = buffer else { return }
        if state == .sniffing {
            let seen = buffered.readableBytesView.prefix(Self.preface.count)
            guard seen.elementsEqual(Self.preface.prefix(seen.count)) else {
                state = .http1
                buffer = nil
                context.fireChannelRead(wrapInboundOut(buffered))
                return
            }
            guard seen.count == Self.preface.count else { return }
            buffered.moveReaderIndex(forwardBy: Self.preface.count)
            state = .http2
            context.write(wrapOutboundOut(Self.frame(type: 0x4, flags: 0, stream: 0, payload: [])), promise: nil)
        }
        while buffered.readableBytes >= 9 {
            let header = buffered.getBytes(at: buffered.readerIndex, length: 9)!
            let length = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
            guard buffered.readableBytes >= 9 + length else { break }
            buffered.moveReaderIndex(forwardBy: 9 + length)
            let (type, flags) = (header[3], header[4])
            let stream = UInt32(header[5] & 0x7F) << 24 | UInt32(header[6]) << 16 | UInt32(header[7]) << 8 | UInt32(header[8])
            if type == 0x4, flags & 0x1 == 0 {
                context.write(wrapOutboundOut(Self.frame(type: 0x4, flags: 0x1, stream: 0, payload: [])), promise: nil)
            } else if type == 0x1, stream != 0 {
                answer(context: context, stream: stream)
                return
            }
        }
        buffer = buffered
        context.flush()
        if buffered.readableBytes > Self.maximumBuffered { context.close(promise: nil) }
    }

    /// A trailers-only gRPC response on the first call's stream, then GOAWAY naming it as the last.
    func answer(context: ChannelHandlerContext, stream: UInt32) {
        state = .answered
        buffer = nil
        var block: [UInt8] = [0x88]  // :status 200, from HPACK's static table
        block += Self.literal("content-type", "application/grpc")
        block += Self.literal("grpc-status", "12")
        block += Self.literal("grpc-message", Self.message)
        context.write(wrapOutboundOut(Self.frame(type: 0x1, flags: 0x5, stream: stream, payload: block)), promise: nil)
        let goAway = Self.bigEndian(stream) + [0, 0, 0, 0]
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(Self.frame(type: 0x7, flags: 0, stream: 0, payload: goAway))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }

    static func frame(type: UInt8, flags: UInt8, stream: UInt32, payload: [UInt8]) -> ByteBuffer {
        var frame = ByteBuffer()
        frame.writeBytes([UInt8(payload.count >> 16 & 0xFF), UInt8(payload.count >> 8 & 0xFF), UInt8(payload.count & 0xFF), type, flags])
        frame.writeBytes(bigEndian(stream & 0x7FFF_FFFF))
        frame.writeBytes(payload)
        return frame
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }

    /// A literal header field without indexing, with a new name (RFC 7541, 6.2.2), no Huffman coding.
    static func literal(_ name: String, _ value: String) -> [UInt8] {
        [0x00] + integer(name.utf8.count) + Array(name.utf8) + integer(value.utf8.count) + Array(value.utf8)
    }

    /// An HPACK integer with a 7-bit prefix (RFC 7541, 5.1).
    static func integer(_ value: Int) -> [UInt8] {
        guard value >= 127 else { return [UInt8(value)] }
        var bytes: [UInt8] = [127]
        var rest = value - 127
        while rest >= 128 {
            bytes.append(UInt8(rest % 128 + 128))
            rest /= 128
        }
        return bytes + [UInt8(rest)]
    }
}
