import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldHTTPServer
import HeraldRuntime
import Logging
import NIOCore
import NIOHTTP1

/// A function's HTTP server running in the test's own process, on a free port.
public struct TestFunctionServer: Sendable {
    public let port: Int
    public var baseURL: String { "http://127.0.0.1:\(port)" }
    let stop: StopSignal

    /// Stops accepting and lets in-flight requests finish, as SIGTERM does in a deployed function.
    public func beginGracefulShutdown() async { stop.fire() }
}

/// Starts the server, runs `body` against it, and shuts it down however `body` ends.
public func withFunctionServer<Function: EventFunction, Result: Sendable>(
    _ function: Function,
    gateway: any DocumentGateway,
    logSink: LineSink = LineSink { _ in },
    _ body: @Sendable (TestFunctionServer) async throws -> Result
) async throws -> Result {
    let logger = Logger(label: Function.name) { label in CloudLogHandler(label: label, level: .debug, format: .json, sink: logSink) }
    return try await withFunctionServer(
        FunctionServer(host: EventFunctionHost(processor: EventProcessor(function: function, gateway: gateway, project: "herald-test")), logger: logger),
        body)
}

/// Runs any function server (events, sweeps, identity checks) on a free port around `body`.
public func withFunctionServer<Host: FunctionHost, Result: Sendable>(
    _ server: FunctionServer<Host>, _ body: @Sendable (TestFunctionServer) async throws -> Result
) async throws -> Result {
    let stop = StopSignal()
    let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
    return try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask {
            defer { portContinuation.finish() }
            try await server.run(host: "127.0.0.1", port: 0, stop: stop) { portContinuation.yield($0) }
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            try await tasks.waitForAll()
            throw CancellationError()
        }
        do {
            let result = try await body(TestFunctionServer(port: port, stop: stop))
            stop.fire()
            try await tasks.waitForAll()
            return result
        } catch {
            stop.fire()
            tasks.cancelAll()
            throw error
        }
    }
}

/// A plain HTTP/1.1 answer.
public struct TestResponse: Sendable {
    public var status: Int
    public var headers: [String: String]
    public var body: String

    public init(status: Int, headers: [String: String], body: String) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

extension HTTPClient {
    /// POSTs bytes with headers and collects the answer (up to 16 MiB).
    public func post(_ url: String, headers: [String: String] = [:], body: [UInt8], timeout: Duration = .seconds(30)) async throws -> TestResponse {
        try await send("POST", url, headers: headers, body: body, timeout: timeout)
    }

    /// Any request, its answer collected (up to 16 MiB), header names lowercased.
    public func send(_ method: String, _ url: String, headers: [String: String] = [:], body: [UInt8]? = nil, timeout: Duration = .seconds(30))
        async throws -> TestResponse
    {
        var request = HTTPClientRequest(url: url)
        request.method = .init(rawValue: method)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await execute(request, timeout: .init(timeout))
        let bytes = try await response.body.collect(upTo: 16 * 1024 * 1024)
        var responseHeaders: [String: String] = [:]
        for header in response.headers { responseHeaders[header.name.lowercased()] = header.value }
        return TestResponse(status: Int(response.status.code), headers: responseHeaders, body: String(buffer: bytes))
    }

    public func get(_ url: String) async throws -> TestResponse {
        let response = try await execute(HTTPClientRequest(url: url), timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 256 * 1024 * 1024)
        return TestResponse(status: Int(response.status.code), headers: [:], body: String(buffer: bytes))
    }
}
