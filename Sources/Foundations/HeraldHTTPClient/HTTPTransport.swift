import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// The HTTP client of Google's APIs: pooled connections per origin, HTTP/2 over TLS where the server
/// offers it (up to `streamsPerConnection` requests at once on each connection; more connections as
/// needed), HTTP/1.1 otherwise (one request at a time per connection, at most
/// `http1ConnectionsPerOrigin` connections, later requests wait their turn). Every request has one
/// deadline that covers waiting for a connection, connecting, sending and reading the whole answer.
public final class HTTPTransport: Sendable {
    public let streamsPerConnection: Int
    public let http1ConnectionsPerOrigin: Int
    let group: any EventLoopGroup
    let connectTimeout: Duration
    private let tlsConfiguration: TLSConfiguration
    private let tlsContext = Mutex<NIOSSLContext?>(nil)
    private let pools = Mutex<[HTTPURL.Origin: OriginPool]?>([:])

    /// - tls: the TLS settings of `https` origins (default: the system's trusted roots, host names checked).
    public init(
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, tls: TLSConfiguration = .makeClientConfiguration(),
        streamsPerConnection: Int = 90, http1ConnectionsPerOrigin: Int = 32, connectTimeout: Duration = .seconds(10)
    ) {
        var tls = tls
        tls.applicationProtocols = ["h2", "http/1.1"]
        // Google's APIs take TLS 1.2 and 1.3; a server offering only 1.0 or 1.1 is not one of them.
        if [.tlsv1, .tlsv11].contains(tls.minimumTLSVersion) { tls.minimumTLSVersion = .tlsv12 }
        self.tlsConfiguration = tls
        self.group = group
        self.streamsPerConnection = max(1, streamsPerConnection)
        self.http1ConnectionsPerOrigin = max(1, http1ConnectionsPerOrigin)
        self.connectTimeout = connectTimeout
    }

    /// One transport for a process that needs no settings of its own.
    public static let shared = HTTPTransport()

    /// Sends `request` and reads its whole answer (at most `maximumBodySize` bytes), all within `timeout`.
    public func execute(_ request: HTTPRequest, timeout: Duration, maximumBodySize: Int = 64 << 20) async throws -> HTTPResponse {
        let target = try HTTPURL(request.url)
        var head = HTTPRequestHead(version: .http1_1, method: request.method, uri: target.pathAndQuery, headers: request.headers)
        head.headers.replaceOrAdd(name: "host", value: target.origin.authority)
        if let body = request.body {
            head.headers.replaceOrAdd(name: "content-length", value: String(body.readableBytes))
        } else if request.method == .POST || request.method == .PUT || request.method == .PATCH {
            head.headers.replaceOrAdd(name: "content-length", value: "0")
        }
        let pool = try pool(for: target.origin)
        let url = request.url
        return try await withDeadline(.now + timeout, expired: HTTPTransportError(.timedOut, "no answer within \(timeout) from \(HTTPURL.redacted(url))")) {
            [head] in try await pool.send(head, body: request.body, maximumBodySize: maximumBodySize)
        }
    }

    /// Closes every connection; requests in flight fail, later ones are refused.
    public func shutdown() async {
        let all = pools.withLock { pools in
            defer { pools = nil }
            return pools.map { Array($0.values) } ?? []
        }
        for pool in all { await pool.close() }
    }

    private func pool(for origin: HTTPURL.Origin) throws(HTTPTransportError) -> OriginPool {
        let pool = pools.withLock { pools -> OriginPool? in
            guard pools != nil else { return nil }
            if let pool = pools![origin] { return pool }
            let pool = OriginPool(origin: origin, transport: self)
            pools![origin] = pool
            return pool
        }
        guard let pool else { throw HTTPTransportError(.shutDown, "the HTTP client is shut down") }
        return pool
    }

    /// Made at the first `https` connection, not at start: loading the trusted roots takes milliseconds.
    func tls() throws -> NIOSSLContext {
        try tlsContext.withLock { context in
            if let context { return context }
            let made = try NIOSSLContext(configuration: tlsConfiguration)
            context = made
            return made
        }
    }
}
