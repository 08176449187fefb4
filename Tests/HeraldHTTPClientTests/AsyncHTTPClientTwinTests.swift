import AsyncHTTPClient
import HeraldTesting
import Hummingbird
import NIOCore
import NIOHTTP1
import Testing

@testable import HeraldHTTPClient

/// HeraldHTTPClient stands in for AsyncHTTPClient in the functions (docs/architecture.md). Its twin
/// here is AsyncHTTPClient itself: the same requests to one server get the same statuses, headers the
/// server set, and bodies (sizes from none to 1 MiB, methods with and without bodies, redirects not
/// followed, errors as statuses).
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

    static func echo(_ request: Request) async throws -> Response {
        let body = try await request.body.collect(upTo: 2 << 20)
        var text = ByteBuffer(string: "\(request.method) \(request.uri.description) \(body.readableBytes) ")
        var copy = body
        text.writeBuffer(&copy)
        return Response(status: .ok, headers: [.init("x-echo")!: "yes"], body: .init(byteBuffer: text))
    }

    @Test func theSameRequestsGetTheSameAnswersAsThroughAsyncHTTPClient() async throws {
        try await withTestHTTPServer(Self.router()) { port in
            let transport = HTTPTransport()
            let reference = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))
            for item in Self.cases {
                let url = "http://127.0.0.1:\(port)\(item.path)"
                let ours = try await transport.execute(
                    HeraldHTTPClient.HTTPRequest(method: item.method, url: url, body: item.body.map { ByteBuffer(bytes: $0) }), timeout: .seconds(30))
                var request = HTTPClientRequest(url: url)
                request.method = item.method
                if let body = item.body { request.body = .bytes(ByteBuffer(bytes: body)) }
                let theirs = try await reference.execute(request, timeout: .seconds(30))
                let theirBody = try await theirs.body.collect(upTo: 4 << 20)
                #expect(ours.status == theirs.status, "\(item.method) \(item.path)")
                #expect(ours.body == theirBody, "\(item.method) \(item.path): \(ours.body.readableBytes) and \(theirBody.readableBytes) bytes")
                for name in ["x-echo", "retry-after", "location", "content-length"] {
                    #expect(ours.headers[name] == theirs.headers[name], "\(item.method) \(item.path): \(name)")
                }
            }
            await transport.shutdown()
            try await reference.shutdown()
        }
    }
}
