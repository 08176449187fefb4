import NIOCore
import NIOHTTP1

/// A request to send: method, absolute URL (`http://` or `https://`), headers and an optional body.
public struct HTTPRequest: Sendable {
    public var method: HTTPMethod
    public var url: String
    public var headers: HTTPHeaders
    public var body: ByteBuffer?

    public init(method: HTTPMethod = .GET, url: String, headers: HTTPHeaders = [:], body: ByteBuffer? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// A whole answer: status, headers and the body read to its end.
public struct HTTPResponse: Sendable {
    public var status: HTTPResponseStatus
    public var headers: HTTPHeaders
    public var body: ByteBuffer
    /// Whether the connection may carry another request after this answer (HTTP/1.1 keep-alive).
    var keepAlive = true
}

/// Why a request got no answer. Never carries a header or a body (they may hold tokens).
public struct HTTPTransportError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable, Equatable {
        case invalidURL, connect, timedOut, closed, bodyTooLarge, shutDown, protocolViolation
    }
    public let kind: Kind
    public let description: String

    init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }

    public var timedOut: Bool { kind == .timedOut }
}

/// An absolute `http` or `https` URL: scheme, host and port (the origin: one pool of connections each),
/// and the path with its query. No user information (refused: it would be a password in a URL).
public struct HTTPURL: Hashable, Sendable {
    public struct Origin: Hashable, Sendable {
        public var secure: Bool
        public var host: String
        public var port: Int
        /// The `Host` header: the port only where it is not the scheme's own.
        public var authority: String {
            let name = host.contains(":") ? "[\(host)]" : host
            return port == (secure ? 443 : 80) ? name : "\(name):\(port)"
        }
    }
    /// A URL as messages show it: without its query (URLs carry no secrets today, but a query might).
    public static func redacted(_ url: String) -> String { String(url.split(separator: "?", maxSplits: 1).first ?? "") }

    public var origin: Origin
    public var pathAndQuery: String
    public var hasQuery: Bool { pathAndQuery.contains("?") }

    public init(_ url: String) throws(HTTPTransportError) {
        let shown = Self.redacted(url)
        // A URL with user information may hold a password: it is not repeated.
        let invalid = HTTPTransportError(.invalidURL, shown.contains("@") ? "a URL with credentials in it is refused" : "not an http(s) URL: \(shown)")
        let secure: Bool
        var rest: Substring
        if url.utf8.starts(with: "https://".utf8) {
            secure = true
            rest = url.dropFirst(8)
        } else if url.utf8.starts(with: "http://".utf8) {
            secure = false
            rest = url.dropFirst(7)
        } else {
            throw invalid
        }
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        rest = rest[authorityEnd...]
        if let fragment = rest.firstIndex(of: "#") { rest = rest[..<fragment] }
        guard !authority.contains("@") else { throw invalid }  // credentials in a URL are refused, never sent
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw invalid }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw invalid }
                portText = after.dropFirst()
            }
        } else if let colon = authority.firstIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
        }
        let port: Int
        if let portText {
            guard let number = Int(portText), (1...65535).contains(number) else { throw invalid }
            port = number
        } else {
            port = secure ? 443 : 80
        }
        guard !host.isEmpty, host.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { throw invalid }
        origin = Origin(secure: secure, host: String(host), port: port)
        pathAndQuery = rest.isEmpty ? "/" : (rest.hasPrefix("?") ? "/" + rest : String(rest))
        guard pathAndQuery.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { throw invalid }
    }
}

/// One request and the promise of its whole answer, written into a channel whose last handler is an
/// `HTTPExchangeHandler` (an HTTP/1.1 connection, or one HTTP/2 stream behind its HTTP/1 codec).
struct HTTPExchange: Sendable {
    var head: HTTPRequestHead
    var body: ByteBuffer?
    var answer: EventLoopPromise<HTTPResponse>
    var maximumBodySize: Int
}

/// Sends one exchange at a time and collects its answer, up to a size; fails the answer if the channel
/// closes first. A connection out of step (an answer nobody asked for, a body too large) is closed.
final class HTTPExchangeHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTPExchange
    typealias OutboundOut = HTTPClientRequestPart

    private var pending: HTTPExchange?
    private var head: HTTPResponseHead?
    private var body: ByteBuffer?
    private var reusable = true
    private var closed = false
    /// Answers this connection completed: after one, the server may close it while idle, and a request
    /// written in that instant finds it closing (the keep-alive race).
    private var answered = 0

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let exchange = unwrapOutboundIn(data)
        guard pending == nil else {
            exchange.answer.fail(HTTPTransportError(.protocolViolation, "a request was written while another was in flight"))
            promise?.succeed(())
            return
        }
        // This handler is the pipeline's last, so a write reaches it even after the channel closed: then
        // nothing is sent and nothing would ever answer. Refused here, the request may go elsewhere.
        guard !closed, context.channel.isActive else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        pending = exchange
        head = nil
        body = nil
        // Accepted: from here the answer is this handler's to complete, whatever happens to the writes.
        promise?.succeed(())
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        // The head not written, nothing of the request left (an HTTP/2 connection that received GOAWAY
        // refuses new streams so): it may go on another connection.
        let headSent = context.eventLoop.makePromise(of: Void.self)
        headSent.futureResult.whenFailure { error in
            guard handler.value.pending?.answer.futureResult === exchange.answer.futureResult else { return }
            handler.value.reusable = false
            let refused = HTTPTransportError(.closed, "the request could not be sent: \(error)")
            handler.value.finish(.failure(HTTPConnection.StreamRefused(underlying: refused)))
        }
        context.write(wrapOutboundOut(.head(exchange.head)), promise: headSent)
        if let body = exchange.body { context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
        // Once the head is out, a failed write of the rest does not say the request did not arrive (a
        // server may act on what it got): the answer is awaited still, and the channel's close, or the
        // request's deadline, ends the wait.
        let sent = context.eventLoop.makePromise(of: Void.self)
        sent.futureResult.whenFailure { _ in handler.value.reusable = false }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: sent)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let exchange = pending else {
            // An answer nobody asked for: the connection is out of step, so it is not used again.
            reusable = false
            context.close(promise: nil)
            return
        }
        switch unwrapInboundIn(data) {
        case .head(let received):
            if received.status.code / 100 == 1 { return }  // 100 Continue and the like: the answer follows
            head = received
            // An HTTP/2 stream ends with its answer, and its connection goes on: closing the stream here
            // would reset it (RST_STREAM) after every request, and a server counts those as an attack
            // (NIO's and Google's answer GOAWAY, dropping the streams in flight).
            reusable = received.version.major >= 2 || received.isKeepAlive
        case .body(var part):
            if (body?.readableBytes ?? 0) + part.readableBytes > exchange.maximumBodySize {
                finish(.failure(HTTPTransportError(.bodyTooLarge, "the answer is larger than \(exchange.maximumBodySize) bytes")))
                reusable = false
                context.close(promise: nil)
                return
            }
            if body == nil { body = part } else { body!.writeBuffer(&part) }
        case .end:
            guard let head else {
                finish(.failure(HTTPTransportError(.protocolViolation, "the answer ended before its head")))
                return
            }
            finish(.success(HTTPResponse(status: head.status, headers: head.headers, body: body ?? ByteBuffer(), keepAlive: reusable)))
            if !reusable { context.close(promise: nil) }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        closed = true
        reusable = false
        let closedWhenReused = HTTPTransportError(.closed, "the connection closed before the answer was complete")
        // Not one byte of an answer on a reused connection: the server closed it as idle while the request
        // was on its way. An idempotent request (RFC 9110, 9.2.2) then goes on another connection.
        if head == nil, answered > 0, let method = pending?.head.method, [.GET, .HEAD, .OPTIONS, .PUT, .DELETE].contains(method) {
            finish(.failure(HTTPConnection.StreamRefused(underlying: closedWhenReused)))
        } else {
            finish(.failure(closedWhenReused))
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        reusable = false
        finish(.failure(HTTPTransportError(.closed, "the connection failed: \(error)")))
        context.close(promise: nil)
    }

    private func finish(_ result: Result<HTTPResponse, any Error>) {
        guard let exchange = pending else { return }
        pending = nil
        head = nil
        body = nil
        if case .success = result { answered += 1 }
        exchange.answer.completeWith(result)
    }
}

extension Channel {
    /// Writes `request` into this channel (whose last handler is an `HTTPExchangeHandler`) and waits for
    /// the whole answer. Cancelling the task closes the channel: an HTTP/2 stream is reset, an HTTP/1.1
    /// connection closed (its answer would arrive out of step otherwise).
    func exchange(_ head: HTTPRequestHead, body: ByteBuffer?, maximumBodySize: Int) async throws -> HTTPResponse {
        let answer = eventLoop.makePromise(of: HTTPResponse.self)
        // A write that fails here never reached the handler: nothing was sent, so it may go elsewhere.
        writeAndFlush(HTTPExchange(head: head, body: body, answer: answer, maximumBodySize: maximumBodySize)).whenFailure { error in
            answer.fail(HTTPConnection.StreamRefused(underlying: error))
        }
        return try await withTaskCancellationHandler {
            try await answer.futureResult.get()
        } onCancel: {
            self.close(promise: nil)
        }
    }
}
