import NIOCore
import NIOEmbedded
import NIOHTTP1
import Synchronization
import Testing

@testable import HeraldHTTPClient

/// What held herald dev's deliveries `in_flight` for ever when function processes were killed: a
/// request written to a connection in the moment after it closed, and a deadline that waited for it.
@Suite struct ExchangeRaceTests {
    @Test func aRequestWrittenAfterTheConnectionClosedIsRefusedNotLeftWithoutAnAnswer() throws {
        let channel = EmbeddedChannel(handler: HTTPExchangeHandler())
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 80)).wait()
        // The peer went away: the handler has seen the channel go inactive, and is still in the pipeline
        // (NIO removes handlers a moment after), when a request chosen just before is written.
        channel.pipeline.fireChannelInactive()
        let answer = channel.eventLoop.makePromise(of: HTTPResponse.self)
        let written = channel.writeAndFlush(
            HTTPExchange(head: HTTPRequestHead(version: .http1_1, method: .POST, uri: "/"), body: nil, answer: answer, maximumBodySize: 1024))
        channel.embeddedEventLoop.run()
        // Refused, so the pool sends it elsewhere (before the fix: accepted, and its answer never came).
        #expect(throws: ChannelError.ioOnClosedChannel) { try written.wait() }
        answer.fail(CancellationError())
        _ = try? channel.finish()
    }

    @Test func aRequestWhoseSendingFailsGetsItsAnswerFailed() throws {
        let channel = EmbeddedChannel(handlers: [FailingWrites(), HTTPExchangeHandler()])
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 80)).wait()
        let answer = channel.eventLoop.makePromise(of: HTTPResponse.self)
        let seen = Mutex<String?>(nil)
        answer.futureResult.whenFailure { error in seen.withLock { $0 = "\(error)" } }
        _ = channel.writeAndFlush(
            HTTPExchange(head: HTTPRequestHead(version: .http1_1, method: .POST, uri: "/"), body: nil, answer: answer, maximumBodySize: 1024))
        channel.embeddedEventLoop.run()
        #expect(seen.withLock { $0 }?.contains("could not be sent") == true)
        _ = try? channel.finish()
    }

    @Test func theDeadlineAnswersEvenWhenTheOperationIgnoresItsCancellation() async throws {
        let release = Gate()
        let clock = ContinuousClock()
        let start = clock.now
        let releaser = Task {
            try await Task.sleep(for: .seconds(30))
            release.open()
        }
        await #expect(throws: HTTPTransportError.self) {
            try await withDeadline(.now + .milliseconds(100), expired: HTTPTransportError(.timedOut, "no answer")) {
                // Deaf to cancellation until the test lets it go.
                await withCheckedContinuation { release.hold($0) }
                return 1
            }
        }
        // Without the fix the call returns only when the operation is let go, 30 s later.
        #expect(clock.now - start < .seconds(15))
        release.open()
        releaser.cancel()
    }
}

/// Holds a continuation until opened.
private final class Gate: Sendable {
    private let waiting = Mutex<CheckedContinuation<Void, Never>?>(nil)
    func hold(_ continuation: CheckedContinuation<Void, Never>) { waiting.withLock { $0 = continuation } }
    func open() { waiting.withLock { $0.take() }?.resume() }
}

/// Fails every write that reaches it, as the head of a closed channel does.
private final class FailingWrites: ChannelOutboundHandler {
    typealias OutboundIn = HTTPClientRequestPart
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        promise?.fail(ChannelError.ioOnClosedChannel)
    }
}
