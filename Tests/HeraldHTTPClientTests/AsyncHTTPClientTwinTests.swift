import AsyncHTTPClient
import HeraldTesting
import Hummingbird
import HummingbirdHTTP2
import NIOCore
import NIOHTTP1
import NIOSSL
import Testing

@testable import HeraldHTTPClient

/// HeraldHTTPClient stands in for AsyncHTTPClient in the functions (docs/architecture.md). Its twin
/// here is AsyncHTTPClient itself: the same requests to one server get the same statuses, headers the
/// server set, and bodies (sizes from none to 1 MiB, methods with and without bodies, redirects not
/// followed, errors as statuses): over HTTP/1.1 in the clear, and over HTTP/2 with TLS, which is what
/// the functions speak to Google (the server says which protocol each request came on).
@Suite struct AsyncHTTPClientTwinTests {
    struct Case: Sendable {
        var method: HTTPMethod
        var path: String
        var body: [UInt8]?
    }

    static let cases: [Case] = [
        Case(method: .GET, path: "/echo", body: nil),
        Case(method: .POST, path: "/echo?x=1&y=%2F", body: Array("hello".utf8)),
        Case(method: .PUT, path: "/echo", body: []),
        Case(method: .DELETE, path: "/echo", body: nil),
        Case(method: .POST, path: "/echo", body: (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }),
        Case(method: .GET, path: "/status/404", body: nil),
        Case(method: .GET, path: "/status/503", body: nil),
        Case(method: .GET, path: "/redirect", body: nil),
        Case(method: .PATCH, path: "/echo/%E2%82%AC", body: Array("{\"a\":1}".utf8)),
    ]

    static func router() -> Router<BasicRequestContext> {
        let router = Router()
        for method in [HTTPRequest.Method.get, .post, .put, .delete, .patch] {
            router.on("/echo/**", method: method) { request, _ in try await echo(request) }
            router.on("/echo", method: method) { request, _ in try await echo(request) }
        }
        router.get("/status/:code") { _, context -> Response in
            let code = Int(context.parameters.get("code") ?? "") ?? 500
            return Response(status: .init(code: code), headers: [.retryAfter: "7"], body: .init(byteBuffer: ByteBuffer(string: "status \(code)")))
        }
        router.get("/redirect") { _, _ in Response(status: .found, headers: [.location: "/echo"]) }
        return router
    }

    /// The server's echo: method, target, body size, the protocol, then the body. "h2" when the request
    /// came with HTTP/2's `:scheme` of https: Hummingbird's HTTP/1.1 codec always reads a request as
    /// `http`, over TLS or not.
    static func echo(_ request: Request) async throws -> Response {
        let body = try await request.body.collect(upTo: 2 << 20)
        let version = request.head.scheme == "https" ? "h2" : "http/1.1"
        var text = ByteBuffer(string: "\(request.method) \(request.uri.description) \(body.readableBytes) \(version) ")
        var copy = body
        text.writeBuffer(&copy)
        return Response(status: .ok, headers: [.init("x-echo")!: "yes"], body: .init(byteBuffer: text))
    }

    @Test func theSameRequestsGetTheSameAnswersAsThroughAsyncHTTPClient() async throws {
        try await withTestHTTPServer(Self.router()) { port in
            let transport = HTTPTransport()
            let reference = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))
            await Self.compare(origin: "http://127.0.0.1:\(port)", version: "http/1.1", transport, reference)
            await transport.shutdown()
            try await reference.shutdown()
        }
    }

    @Test func overHTTP2AndTLSTheAnswersAreTheSameToo() async throws {
        let certificate = try await TestCertificate.make()
        let server = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(certificate.certificate)], privateKey: .privateKey(certificate.key))
        try await withTestHTTPServer(Self.router(), server: try .http2Upgrade(tlsConfiguration: server)) { port in
            let transport = HTTPTransport(tls: certificate.trustingClient)
            let reference = HTTPClient(
                eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: certificate.trustingClient, redirectConfiguration: .disallow))
            await Self.compare(origin: "https://127.0.0.1:\(port)", version: "h2", transport, reference)
            await transport.shutdown()
            try await reference.shutdown()
        }
    }

    /// Every case through both clients: the same status, body and headers, each request on `version`.
    static func compare(origin: String, version: String, _ transport: HTTPTransport, _ reference: HTTPClient) async {
        for item in cases {
            let url = origin + item.path
            do {
                let ours = try await transport.execute(
                    HeraldHTTPClient.HTTPRequest(method: item.method, url: url, body: item.body.map { ByteBuffer(bytes: $0) }), timeout: .seconds(30))
                var request = HTTPClientRequest(url: url)
                request.method = item.method
                if let body = item.body { request.body = .bytes(ByteBuffer(bytes: body)) }
                let theirs = try await reference.execute(request, timeout: .seconds(30))
                let theirBody = try await theirs.body.collect(upTo: 4 << 20)
                #expect(ours.status == theirs.status, "\(item.method) \(item.path)")
                #expect(ours.body == theirBody, "\(item.method) \(item.path): \(ours.body.readableBytes) and \(theirBody.readableBytes) bytes")
                if item.path.hasPrefix("/echo") {
                    #expect(String(buffer: ours.body).contains(" \(version) "), "\(item.method) \(item.path): \(String(buffer: ours.body).prefix(80))")
                }
                for name in ["x-echo", "retry-after", "location", "content-length"] {
                    #expect(ours.headers[name] == theirs.headers[name], "\(item.method) \(item.path): \(name)")
                }
            } catch {
                Issue.record("\(item.method) \(item.path) over \(version): \(error)")
            }
        }
    }
}
