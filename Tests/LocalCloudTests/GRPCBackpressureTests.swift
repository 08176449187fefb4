import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Testing

@testable import EmbeddedFirestore
@testable import LocalCloud

/// A gRPC call that takes its requests slower than the client sends them: the stream stops being
/// read (HTTP/2's flow control then holds the client back) instead of buffering what the client sends.
@Suite struct GRPCBackpressureTests {
    /// Counts the reads that reach the HTTP/2 stream (the handler holds back the ones it pauses).
    final class ReadCounter: ChannelOutboundHandler, @unchecked Sendable {
        typealias OutboundIn = HTTP2Frame.FramePayload
        let reads = NIOLockedValueBox(0)
        func read(context: ChannelHandlerContext) {
            reads.withLockedValue { $0 += 1 }
            context.read()
        }
    }

    /// Takes no request until `open` is signalled, then takes them all.
    struct SlowService: GRPCService {
        let open: AsyncStream<Void>
        let taken = NIOLockedValueBox(0)
        func handle(method: String, metadata: [String: String], requests: GRPCRequests, responses: GRPCResponseWriter) async throws(GRPCStatus) {
            for await _ in open { break }
            for await _ in requests { taken.withLockedValue { $0 += 1 } }
        }
    }

    static func message(_ size: Int) -> HTTP2Frame.FramePayload {
        var frame = ByteBuffer()
        frame.writeInteger(UInt8(0))
        frame.writeInteger(UInt32(size))
        frame.writeRepeatingByte(0x61, count: size)
        return .data(.init(data: .byteBuffer(frame)))
    }

    @Test func aCallThatDoesNotTakeItsRequestsStopsTheReading() async throws {
        let (open, opener) = AsyncStream.makeStream(of: Void.self)
        let service = SlowService(open: open)
        let counter = ReadCounter()
        let channel = NIOAsyncTestingChannel()
        try await channel.pipeline.addHandler(counter)
        try await channel.testingEventLoop.executeInContext {
            try channel.pipeline.syncOperations.addHandler(GRPCStreamHandler(service: service, logger: .init(label: "test")))
        }
        let headers: HPACKHeaders = [":method": "POST", ":path": "/test.Service/Stream", "content-type": "application/grpc"]
        try await channel.writeInbound(HTTP2Frame.FramePayload.headers(.init(headers: headers)))
        // 2 MiB is under the pause: reading goes on.
        try await channel.writeInbound(Self.message(2 << 20))
        channel.read()
        await channel.testingEventLoop.run()
        #expect(counter.reads.withLockedValue { $0 } == 1)
        // 6 MiB untaken is over it: the next read is held back.
        try await channel.writeInbound(Self.message(4 << 20))
        channel.read()
        await channel.testingEventLoop.run()
        #expect(counter.reads.withLockedValue { $0 } == 1, "a read went through with 6 MiB untaken")
        // The call takes both: the held read is made.
        opener.yield()
        let deadline = ContinuousClock.now + .seconds(10)
        while counter.reads.withLockedValue({ $0 }) < 2, ContinuousClock.now < deadline {
            await channel.testingEventLoop.run()
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(service.taken.withLockedValue { $0 } == 2)
        #expect(counter.reads.withLockedValue { $0 } == 2, "the held read was not made once the call took its requests")
        opener.finish()
        _ = try? await channel.finish()
    }
}
