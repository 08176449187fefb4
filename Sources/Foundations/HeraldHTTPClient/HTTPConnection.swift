import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS
import Synchronization

/// One connection to an origin: HTTP/2 where TLS negotiates it (Google's APIs), HTTP/1.1 otherwise
/// (cleartext: emulators, the metadata server, `herald dev`).
enum HTTPConnection: Sendable {
    case http1(any Channel)
    case http2(any Channel, NIOHTTP2Handler.AsyncStreamMultiplexer<Void>)

    var channel: any Channel {
        switch self {
        case .http1(let channel), .http2(let channel, _): channel
        }
    }

    /// Opens a connection; `tls` is given for an `https` origin. `connectTimeout` bounds the TCP connect
    /// and, for TLS, the handshake and protocol negotiation too: a server that accepts and then says
    /// nothing must not hold the origin's one attempt (and every request waiting on it) for ever.
    static func open(
        to origin: HTTPURL.Origin, group: any EventLoopGroup, tls: NIOSSLContext?, connectTimeout: Duration
    ) async throws -> HTTPConnection {
        // TCP_NODELAY is ClientBootstrap's default. (Set as a socket-level option it would be SO_DEBUG,
        // which a container without CAP_NET_ADMIN refuses: every connection failed in the image.)
        let bootstrap = ClientBootstrap(group: group).connectTimeout(.nanoseconds(Int64(connectTimeout / .nanoseconds(1))))
        var recorder: TLSFailureRecorder?
        do {
            guard let tls else {
                return try await bootstrap.connect(host: origin.host, port: origin.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHTTP1Exchanges()
                        return HTTPConnection.http1(channel)
                    }
                }
            }
            let handshakeLimit = TimeAmount.nanoseconds(Int64(connectTimeout / .nanoseconds(1)))
            let tlsFailure = TLSFailureRecorder()
            recorder = tlsFailure
            let negotiated = try await bootstrap.connect(host: origin.host, port: origin.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    // No server name for an address (SNI is for names); the certificate is still checked against it.
                    let isAddress = (try? SocketAddress(ipAddress: origin.host, port: 0)) != nil
                    try channel.pipeline.syncOperations.addHandler(
                        NIOSSLClientHandler(context: tls, serverHostname: isAddress ? nil : origin.host))
                    try channel.pipeline.syncOperations.addHandler(tlsFailure)
                }.flatMap {
                    channel.configureHTTP2AsyncSecureUpgrade(
                        http1ConnectionInitializer: { channel in
                            channel.eventLoop.makeCompletedFuture {
                                try channel.pipeline.syncOperations.addHTTP1Exchanges()
                                return channel
                            }
                        },
                        http2ConnectionInitializer: { channel in
                            var configuration = NIOHTTP2Handler.Configuration()
                            // No server push: a client that asked for none refuses any stream the server opens.
                            configuration.connection.initialSettings = [
                                HTTP2Setting(parameter: .enablePush, value: 0),
                                HTTP2Setting(parameter: .maxConcurrentStreams, value: 100),
                                HTTP2Setting(parameter: .maxHeaderListSize, value: 1 << 16),
                            ]
                            return channel.configureAsyncHTTP2Pipeline(mode: .client, configuration: configuration) { stream in
                                stream.close()
                            }.map { multiplexer -> HTTP2Connection in HTTP2Connection(channel: channel, multiplexer: multiplexer) }
                        })
                }.map { negotiation in
                    let limit = channel.eventLoop.scheduleTask(in: handshakeLimit) { channel.close(promise: nil) }
                    negotiation.whenComplete { _ in limit.cancel() }
                    return negotiation
                }
            }.get()
            switch negotiated {
            case .http1_1(let channel): return .http1(channel)
            case .http2(let connection): return .http2(connection.channel, connection.multiplexer)
            }
        } catch {
            // A failed handshake closes the channel, and the negotiation only sees it closed: the TLS
            // error itself says why (a certificate not trusted, a protocol too old).
            if let failure = recorder?.failure {
                throw HTTPTransportError(.connect, "cannot connect to \(origin.authority): TLS failed: \(TLSFailureRecorder.reason(failure))")
            }
            throw HTTPTransportError(.connect, "cannot connect to \(origin.authority): \(error)")
        }
    }

    /// Sends one request on this connection (a new stream of an HTTP/2 one) and waits for its whole answer.
    func exchange(_ head: HTTPRequestHead, body: ByteBuffer?, maximumBodySize: Int) async throws -> HTTPResponse {
        switch self {
        case .http1(let channel):
            return try await channel.exchange(head, body: body, maximumBodySize: maximumBodySize)
        case .http2(_, let multiplexer):
            let stream: any Channel
            do {
                stream = try await multiplexer.openStream { stream in
                    stream.eventLoop.makeCompletedFuture {
                        try stream.pipeline.syncOperations.addHandler(HTTP2FramePayloadToHTTP1ClientCodec(httpProtocol: .https))
                        try stream.pipeline.syncOperations.addHandler(HTTPExchangeHandler())
                        return stream
                    }
                }
            } catch {
                // Nothing was sent: the connection is going away (GOAWAY) or gone.
                throw StreamRefused(underlying: error)
            }
            return try await stream.exchange(head, body: body, maximumBodySize: maximumBodySize)
        }
    }

    struct HTTP2Connection: Sendable {
        var channel: any Channel
        var multiplexer: NIOHTTP2Handler.AsyncStreamMultiplexer<Void>
    }

    /// A stream that could not be opened, or a connection closed before the request was written: it
    /// was not sent, so it can go on another connection.
    struct StreamRefused: Error {
        var underlying: any Error
    }
}

extension ChannelPipeline.SynchronousOperations {
    fileprivate func addHTTP1Exchanges() throws {
        try addHTTPClientHandlers()
        try addHandler(HTTPExchangeHandler())
    }
}

/// Keeps the first error the TLS handler reports on a connection being opened.
final class TLSFailureRecorder: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny
    private let recorded = Mutex<(any Error)?>(nil)

    var failure: (any Error)? { recorded.withLock { $0 } }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is NIOSSLError || error is BoringSSLError { recorded.withLock { if $0 == nil { $0 = error } } }
        context.fireErrorCaught(error)
    }

    /// The handshake's error as a person can act on it: BoringSSL's reason (`CERTIFICATE_VERIFY_FAILED`,
    /// `UNSUPPORTED_PROTOCOL`, `TLSV1_ALERT_PROTOCOL_VERSION`…) and what it means.
    static func reason(_ error: any Error) -> String {
        let text = "\(error)"
        let meanings: [(String, String)] = [
            ("CERTIFICATE_VERIFY_FAILED", "the server's certificate is not trusted (an unknown issuer, expired, or for another name)"),
            ("UNSUPPORTED_PROTOCOL", "the server offers only TLS versions older than 1.2"),
            ("PROTOCOL_VERSION", "the server offers only TLS versions older than 1.2"),
            ("WRONG_VERSION_NUMBER", "the server does not speak TLS on this port (plain http?)"),
            ("NO_SHARED_CIPHER", "the server and the client share no cipher"),
        ]
        for (code, meaning) in meanings where text.contains(code) { return "\(meaning) [\(code)]" }
        if case NIOSSLError.unableToValidateCertificate = error { return "the server's certificate is not trusted [\(text)]" }
        return text
    }
}
