import Foundation
import HeraldTesting
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization
import Testing

@testable import HeraldHTTPClient

/// The functions' own HTTP client, against servers that misbehave on purpose: HTTP/1.1 in the clear,
/// HTTP/2 and HTTP/1.1 over TLS (a certificate made for the test by `openssl`).
@Suite struct HTTPTransportTests {
    @Test func http1ConnectionsAreReusedAndNeverMoreThanTheLimit() async throws {
        let server = try await ScriptedServer.start()
        let transport = HTTPTransport(http1ConnectionsPerOrigin: 2)
        for i in 0..<20 {
            let answer = try await transport.execute(HTTPRequest(url: "\(server.url)/n\(i)"), timeout: .seconds(10))
            #expect(String(buffer: answer.body) == "GET /n\(i) HTTP/1.1 host=127.0.0.1:\(server.port)")
        }
        #expect(server.connections == 1)
        let answers = try await withThrowingTaskGroup(of: HTTPResponseStatus.self) { group in
            for _ in 0..<10 { group.addTask { try await transport.execute(HTTPRequest(url: "\(server.url)/slow"), timeout: .seconds(10)).status } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers == Array(repeating: .ok, count: 10))
        #expect(server.connections == 2)
        #expect(server.mostAtOnce == 2)
        await transport.shutdown()
        await server.stop()
    }

    @Test func aConnectionTheServerClosedWhileIdleIsNotUsedAgain() async throws {
        let server = try await ScriptedServer.start()
        let transport = HTTPTransport()
        #expect(try await transport.execute(HTTPRequest(url: "\(server.url)/then-close"), timeout: .seconds(10)).status == .ok)
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await transport.execute(HTTPRequest(url: "\(server.url)/next"), timeout: .seconds(10)).status == .ok)
        #expect(server.connections == 2)
        await transport.shutdown()
        await server.stop()
    }

    /// A server that closes a kept-alive connection just as the next request arrives (no byte of answer):
    /// an idempotent request goes again on a new connection; a POST fails, since it may have been acted on.
    @Test func aRequestMetByAnIdleCloseIsSentAgainOnlyWhenIdempotent() async throws {
        let server = try await ScriptedServer.start()
        let transport = HTTPTransport()
        #expect(try await transport.execute(HTTPRequest(url: "\(server.url)/close-on-next"), timeout: .seconds(10)).status == .ok)
        let answer = try await transport.execute(HTTPRequest(url: "\(server.url)/after"), timeout: .seconds(10))
        #expect(String(buffer: answer.body).hasPrefix("GET /after "), "sent again on a new connection")
        #expect(server.connections == 2)
        #expect(try await transport.execute(HTTPRequest(url: "\(server.url)/close-on-next"), timeout: .seconds(10)).status == .ok)
        await #expect(throws: HTTPTransportError.self) {
            _ = try await transport.execute(HTTPRequest(method: .POST, url: "\(server.url)/post", body: ByteBuffer(string: "x")), timeout: .seconds(10))
        }
        await transport.shutdown()
        await server.stop()
    }

    /// TCP_NODELAY, and nothing that needs privileges: set at the socket level, option 1 is SO_DEBUG,
    /// which needs CAP_NET_ADMIN, so every connection of the function failed inside its container.
    @Test func connectionsAskForNoDelayAndNoPrivilegedOption() async throws {
        let server = try await ScriptedServer.start()
        let connection = try await HTTPConnection.open(
            to: HTTPURL(server.url).origin, group: MultiThreadedEventLoopGroup.singleton, tls: nil, connectTimeout: .seconds(5))
        #expect(try await connection.channel.getOption(.tcpOption(.tcp_nodelay)) == 1)
        #expect(try await connection.channel.getOption(.socketOption(NIOBSDSocket.Option(rawValue: SO_DEBUG))) == 0)
        try await connection.channel.close()
        await server.stop()
    }

    @Test func aBodyIsSentWithItsLength() async throws {
        let server = try await ScriptedServer.start()
        let transport = HTTPTransport()
        let answer = try await transport.execute(
            HTTPRequest(method: .POST, url: "\(server.url)/echo?x=1", headers: ["content-type": "application/json"], body: ByteBuffer(string: "{\"a\":1}")),
            timeout: .seconds(10))
        #expect(String(buffer: answer.body) == "POST /echo?x=1 HTTP/1.1 host=127.0.0.1:\(server.port) length=7 {\"a\":1}")
        await transport.shutdown()
        await server.stop()
    }

    @Test func aDeadlineEndsARequestThatGetsNoAnswerAndTheNextOneWorks() async throws {
        let server = try await ScriptedServer.start()
        let transport = HTTPTransport(http1ConnectionsPerOrigin: 1)
        let started = ContinuousClock.now
        await #expect {
            _ = try await transport.execute(HTTPRequest(url: "\(server.url)/never"), timeout: .milliseconds(300))
        } throws: { ($0 as? HTTPTransportError)?.timedOut == true }
        #expect(ContinuousClock.now - started < .seconds(30), "the server never answers: only the deadline ends it")
        // The one connection allowed was closed with the request, so the next one gets a new one.
        #expect(try await transport.execute(HTTPRequest(url: "\(server.url)/after"), timeout: .seconds(10)).status == .ok)
        await transport.shutdown()
        await server.stop()
    }

    @Test func anAnswerLargerThanAllowedOrCutShortIsAnErrorNotAHang() async throws {
        let server = try await ScriptedServer.start()
        let transport = HTTPTransport()
        await #expect {
            _ = try await transport.execute(HTTPRequest(url: "\(server.url)/big"), timeout: .seconds(10), maximumBodySize: 1000)
        } throws: { ($0 as? HTTPTransportError)?.kind == .bodyTooLarge }
        await #expect {
            _ = try await transport.execute(HTTPRequest(url: "\(server.url)/cut"), timeout: .seconds(10))
        } throws: { ($0 as? HTTPTransportError)?.kind == .closed }
        #expect(try await transport.execute(HTTPRequest(url: "\(server.url)/big"), timeout: .seconds(10)).body.readableBytes == 1 << 20)
        await transport.shutdown()
        await server.stop()
    }

    @Test func badURLsAreRefusedWithoutEchoingCredentials() async throws {
        let transport = HTTPTransport()
        for url in ["ftp://example.com/", "http://user:secret@example.com/", "http://example.com:99999/", "http:///path", "example.com"] {
            await #expect {
                _ = try await transport.execute(HTTPRequest(url: url), timeout: .seconds(1))
            } throws: { error in
                (error as? HTTPTransportError)?.kind == .invalidURL && !"\(error)".contains("secret")
            }
        }
        await transport.shutdown()
        await #expect {
            _ = try await transport.execute(HTTPRequest(url: "http://127.0.0.1:1/"), timeout: .seconds(1))
        } throws: { ($0 as? HTTPTransportError)?.kind == .shutDown }
    }

    @Test func http2OverTLSCarriesManyRequestsOnFewConnections() async throws {
        let certificate = try await TestCertificate.make()
        let server = try await ScriptedServer.start(tls: certificate, protocols: ["h2"])
        let transport = HTTPTransport(tls: certificate.trustingClient, streamsPerConnection: 90)
        let bodies = try await withThrowingTaskGroup(of: String.self) { group in
            for i in 0..<200 {
                group.addTask { String(buffer: try await transport.execute(HTTPRequest(url: "\(server.url)/slow\(i)"), timeout: .seconds(20)).body) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(bodies.count == 200)
        #expect(bodies.allSatisfy { $0.hasSuffix("HTTP/2.0 host=localhost:\(server.port)") })
        // 200 at once, at most 90 per connection: three connections (fewer if some finished first).
        #expect((1...3).contains(server.connections))
        #expect(server.mostAtOnce <= 90 * server.connections)
        await transport.shutdown()
        await server.stop()
    }

    @Test func http1OverTLSWhereTheServerOffersNoHTTP2() async throws {
        let certificate = try await TestCertificate.make()
        let server = try await ScriptedServer.start(tls: certificate, protocols: ["http/1.1"])
        let transport = HTTPTransport(tls: certificate.trustingClient)
        let answer = try await transport.execute(HTTPRequest(url: "\(server.url)/plain"), timeout: .seconds(10))
        #expect(String(buffer: answer.body) == "GET /plain HTTP/1.1 host=localhost:\(server.port)")
        await transport.shutdown()
        await server.stop()
    }

    /// A server that accepts the connection and never answers the TLS handshake fails the attempt at the
    /// connect limit, and the next request tries again (the origin is not held by the stalled attempt).
    @Test func aTLSHandshakeThatNeverEndsFailsAtTheConnectLimit() async throws {
        let silent = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { $0.eventLoop.makeSucceededVoidFuture() }
            .bind(host: "127.0.0.1", port: 0).get()
        let url = "https://localhost:\(silent.localAddress!.port!)/"
        let transport = HTTPTransport(connectTimeout: .milliseconds(300))
        // Far from the request's own limit, not close to the connect limit: a busy machine may take
        // seconds to load the trust roots for the first attempt (3.4 s once in CI).
        for _ in 0..<2 {
            let started = ContinuousClock.now
            await #expect {
                _ = try await transport.execute(HTTPRequest(url: url), timeout: .seconds(120))
            } throws: { ($0 as? HTTPTransportError)?.kind == .connect }
            #expect(ContinuousClock.now - started < .seconds(40))
        }
        await transport.shutdown()
        try await silent.close()
    }

    /// Refused, and saying why: every TLS failure was "cannot connect …: Output closed", so a
    /// certificate error looked like a network error.
    @Test func aCertificateNobodyTrustsIsRefusedAndSaysSo() async throws {
        let certificate = try await TestCertificate.make()
        let server = try await ScriptedServer.start(tls: certificate, protocols: ["h2"])
        let transport = HTTPTransport()  // the system's roots: the test's certificate is not among them
        await #expect {
            _ = try await transport.execute(HTTPRequest(url: "\(server.url)/"), timeout: .seconds(10))
        } throws: {
            let error = $0 as? HTTPTransportError
            return error?.kind == .connect && "\($0)".contains("TLS failed: the server's certificate is not trusted")
        }
        await transport.shutdown()
        await server.stop()
    }

    /// A server that offers only TLS 1.0 and 1.1 is not one of Google's: refused, naming the versions.
    @Test func aServerOfferingOnlyTLS11IsRefused() async throws {
        let certificate = try await TestCertificate.make()
        let server = try await ScriptedServer.start(tls: certificate, protocols: ["http/1.1"], maximumTLSVersion: .tlsv11)
        let transport = HTTPTransport(tls: certificate.trustingClient)
        await #expect {
            _ = try await transport.execute(HTTPRequest(url: "\(server.url)/"), timeout: .seconds(10))
        } throws: { "\($0)".contains("TLS failed: the server offers only TLS versions older than 1.2") }
        await server.stop()
        // The same server with TLS 1.2 allowed is taken.
        let modern = try await ScriptedServer.start(tls: certificate, protocols: ["http/1.1"], maximumTLSVersion: .tlsv12)
        let answer = try await transport.execute(HTTPRequest(url: "\(modern.url)/ok"), timeout: .seconds(10))
        #expect(String(buffer: answer.body).hasPrefix("GET /ok"))
        await transport.shutdown()
        await modern.stop()
    }
}

/// A server whose answers depend on the path: `/slow` (after 200 ms), `/never`, `/big` (1 MiB), `/cut`
/// (closes mid-answer), `/then-close` (closes the idle connection 50 ms after answering), anything else
/// echoes the request line, host and body.
struct ScriptedServer {
    let channel: any Channel
    let port: Int
    let secure: Bool
    let counters: Counters

    var url: String { secure ? "https://localhost:\(port)" : "http://127.0.0.1:\(port)" }
    var connections: Int { counters.state.withLock { $0.connections } }
    var mostAtOnce: Int { counters.state.withLock { $0.mostAtOnce } }

    final class Counters: Sendable {
        let state = Mutex((connections: 0, inFlight: 0, mostAtOnce: 0))
        let children = Mutex<[any Channel]>([])
        func started() {
            state.withLock {
                $0.inFlight += 1
                $0.mostAtOnce = max($0.mostAtOnce, $0.inFlight)
            }
        }
        func ended() { state.withLock { $0.inFlight -= 1 } }
    }

    static func start(
        tls certificate: TestCertificate? = nil, protocols: [String] = [], maximumTLSVersion: TLSVersion? = nil, port: Int = 0
    ) async throws -> ScriptedServer {
        let counters = Counters()
        var context: NIOSSLContext?
        if let certificate {
            var configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: [.certificate(certificate.certificate)], privateKey: .privateKey(certificate.key))
            configuration.applicationProtocols = protocols
            if let maximumTLSVersion {
                configuration.maximumTLSVersion = maximumTLSVersion
                configuration.minimumTLSVersion = .tlsv1
            }
            context = try NIOSSLContext(configuration: configuration)
        }
        let http2 = protocols.contains("h2")
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { [context] channel in
                counters.state.withLock { $0.connections += 1 }
                counters.children.withLock { $0.append(channel) }
                return channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let context { try pipeline.addHandler(NIOSSLServerHandler(context: context)) }
                    if http2 {
                        _ = try pipeline.configureHTTP2Pipeline(
                            mode: .server, connectionConfiguration: .init(), streamConfiguration: .init()
                        ) { stream in
                            stream.eventLoop.makeCompletedFuture {
                                try stream.pipeline.syncOperations.addHandler(HTTP2FramePayloadToHTTP1ServerCodec())
                                try stream.pipeline.syncOperations.addHandler(ScriptedHandler(counters: counters))
                            }
                        }
                    } else {
                        try pipeline.configureHTTPServerPipeline()
                        try pipeline.addHandler(ScriptedHandler(counters: counters))
                    }
                }
            }
            .bind(host: "127.0.0.1", port: port).get()
        return ScriptedServer(channel: channel, port: channel.localAddress!.port!, secure: certificate != nil, counters: counters)
    }

    /// Stops as a killed process does: the listening socket and every connection closed at once.
    func stop() async {
        try? await channel.close()
        for child in counters.children.withLock({ $0 }) { try? await child.close() }
    }
}

final class ScriptedHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    let counters: ScriptedServer.Counters
    var head: HTTPRequestHead?
    var body = ""

    var closeOnNext = false

    init(counters: ScriptedServer.Counters) { self.counters = counters }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let received):
            head = received
            body = ""
        case .body(let part):
            body += String(buffer: part)
        case .end:
            guard let head else { return }
            counters.started()
            let length = head.headers.first(name: "content-length").map { " length=\($0) \(body)" } ?? ""
            let echo = "\(head.method) \(head.uri) \(head.version) host=\(head.headers.first(name: "host") ?? "-")\(length)"
            let path = head.uri
            if closeOnNext {
                // The keep-alive race, made certain: the server closes the connection as idle just as the
                // next request arrives, without a byte of answer.
                context.close(promise: nil)
                return
            }
            if path.hasPrefix("/close-on-next") { closeOnNext = true }
            if path.hasPrefix("/never") { return }
            if path.hasPrefix("/slow") {
                let loop = context.eventLoop
                let bound = NIOLoopBound((self, context), eventLoop: loop)
                loop.scheduleTask(in: .milliseconds(200)) { bound.value.0.answer(bound.value.1, echo) }
            } else if path.hasPrefix("/big") {
                answer(context, String(repeating: "x", count: 1 << 20))
            } else if path.hasPrefix("/then-close") {
                answer(context, echo)
                let loop = context.eventLoop
                let bound = NIOLoopBound(context, eventLoop: loop)
                loop.scheduleTask(in: .milliseconds(50)) { bound.value.close(promise: nil) }
            } else if path.hasPrefix("/cut") {
                var headers = HTTPHeaders()
                headers.add(name: "content-length", value: "100")
                context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .ok, headers: headers))), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: "only ten b")))), promise: nil)
                context.close(promise: nil)
            } else {
                answer(context, echo)
            }
        }
    }

    func answer(_ context: ChannelHandlerContext, _ text: String) {
        counters.ended()
        var headers = HTTPHeaders()
        headers.add(name: "content-length", value: String(text.utf8.count))
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head?.version ?? .http1_1, status: .ok, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: text)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}

/// A self-signed certificate for `localhost`, made by `openssl` for one test.
struct TestCertificate {
    let certificate: NIOSSLCertificate
    let key: NIOSSLPrivateKey

    /// openssl makes an RSA key: a blocking wait of up to a second, kept off Swift's cooperative pool.
    static func make() async throws -> TestCertificate { try await offThePool { try makeNow() } }

    private static func makeNow() throws -> TestCertificate {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-cert-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
            "-keyout", directory.appendingPathComponent("key.pem").path, "-out", directory.appendingPathComponent("cert.pem").path,
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw CertificateError() }
        return TestCertificate(
            certificate: try NIOSSLCertificate.fromPEMFile(directory.appendingPathComponent("cert.pem").path)[0],
            key: try NIOSSLPrivateKey(file: directory.appendingPathComponent("key.pem").path, format: .pem))
    }

    /// A client's TLS settings that trust only this certificate.
    var trustingClient: TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .certificates([certificate])
        return configuration
    }

    struct CertificateError: Error {}
}
