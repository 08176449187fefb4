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

    /// An HTTP/2 connection that received GOAWAY refuses new streams: the head's write fails, nothing of
    /// the request left, and the pool sends it on another connection (it was failed as "could not be
    /// sent", and the caller's retries, and APNs's circuit breaker, counted it against the service).
    @Test func aRequestWhoseHeadCannotBeWrittenIsRefusedToGoElsewhere() throws {
        let channel = EmbeddedChannel(handlers: [FailingWrites(), HTTPExchangeHandler()])
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 80)).wait()
        let answer = channel.eventLoop.makePromise(of: HTTPResponse.self)
        let refused = Mutex<Bool?>(nil)
        answer.futureResult.whenFailure { error in refused.withLock { $0 = error is HTTPConnection.StreamRefused } }
        _ = channel.writeAndFlush(
            HTTPExchange(head: HTTPRequestHead(version: .http1_1, method: .POST, uri: "/"), body: nil, answer: answer, maximumBodySize: 1024))
        channel.embeddedEventLoop.run()
        #expect(refused.withLock { $0 } == true)
        _ = try? channel.finish()
    }

    /// Once the head is out, a failed write of the rest says nothing of the request's arrival (HTTP/2's
    /// last frame can fail after the stream ended): the answer that follows is the answer.
    @Test func anAnswerThatFollowsAFailedLastWriteIsTheAnswer() throws {
        let channel = EmbeddedChannel(handlers: [FailingWrites(onlyTheEnd: true), HTTPExchangeHandler()])
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 80)).wait()
        let answer = channel.eventLoop.makePromise(of: HTTPResponse.self)
        let seen = Mutex<String?>(nil)
        answer.futureResult.whenComplete { result in seen.withLock { $0 = (try? result.get()).map { "\($0.status.code)" } ?? "failed" } }
        _ = channel.writeAndFlush(
            HTTPExchange(head: HTTPRequestHead(version: .http1_1, method: .POST, uri: "/"), body: nil, answer: answer, maximumBodySize: 1024))
        channel.embeddedEventLoop.run()
        #expect(seen.withLock { $0 } == nil, "the exchange was ended by its failed write")
        try channel.writeInbound(HTTPClientResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok)))
        try channel.writeInbound(HTTPClientResponsePart.end(nil))
        #expect(seen.withLock { $0 } == "200")
        _ = try? channel.finish()
    }

    /// Without an answer, the channel's close fails it: it may have arrived, so not "could not be sent".
    @Test func aRequestWhoseLastWriteFailedIsFailedWhenItsChannelCloses() throws {
        let channel = EmbeddedChannel(handlers: [FailingWrites(onlyTheEnd: true), HTTPExchangeHandler()])
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 80)).wait()
        let answer = channel.eventLoop.makePromise(of: HTTPResponse.self)
        let seen = Mutex<String?>(nil)
        answer.futureResult.whenFailure { error in seen.withLock { $0 = "\(error)" } }
        _ = channel.writeAndFlush(
            HTTPExchange(head: HTTPRequestHead(version: .http1_1, method: .POST, uri: "/"), body: nil, answer: answer, maximumBodySize: 1024))
        channel.embeddedEventLoop.run()
        channel.pipeline.fireChannelInactive()
        #expect(seen.withLock { $0 }?.contains("closed before the answer was complete") == true)
        _ = try? channel.finish()
    }

    /// Every HTTP/2 request ended in RST_STREAM: an HTTP/2 answer has no keep-alive header, so it read as
    /// "close", and the handler closed its stream. After 200 resets NIO's server (the APNs stand-in)
    /// answered GOAWAY and dropped the streams in flight, pushes it had taken among them.
    @Test func anHTTP2AnswerLeavesItsStreamToEndByItself() throws {
        let channel = EmbeddedChannel(handler: HTTPExchangeHandler())
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 80)).wait()
        let answer = channel.eventLoop.makePromise(of: HTTPResponse.self)
        _ = channel.writeAndFlush(
            HTTPExchange(head: HTTPRequestHead(version: .http1_1, method: .POST, uri: "/"), body: nil, answer: answer, maximumBodySize: 1024))
        channel.embeddedEventLoop.run()
        try channel.writeInbound(HTTPClientResponsePart.head(HTTPResponseHead(version: .init(major: 2, minor: 0), status: .ok)))
        try channel.writeInbound(HTTPClientResponsePart.end(nil))
        #expect(try answer.futureResult.wait().status == .ok)
        #expect(channel.isActive, "the stream was closed (reset) by the client")
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

/// Fails every write that reaches it, as the head of a closed channel does; or only the request's end,
/// as HTTP/2 may once the stream is over.
private final class FailingWrites: ChannelOutboundHandler {
    typealias OutboundIn = HTTPClientRequestPart
    let onlyTheEnd: Bool
    init(onlyTheEnd: Bool = false) { self.onlyTheEnd = onlyTheEnd }
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        var isEnd = false
        if case .end = unwrapOutboundIn(data) { isEnd = true }
        if onlyTheEnd && !isEnd {
            context.write(data, promise: promise)
        } else {
            promise?.fail(ChannelError.ioOnClosedChannel)
        }
    }
}
