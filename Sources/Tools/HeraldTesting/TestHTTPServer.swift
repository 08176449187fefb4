import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle

/// Runs any Hummingbird router on a free loopback port for the duration of `body`: a stand-in
/// for Google's token endpoint, metadata server or FCM in tests. `server` is HTTP/1.1 in the clear
/// unless another is given (HummingbirdHTTP2's `.http2Upgrade`: HTTP/2 over TLS, as Google serves).
public func withTestHTTPServer<Result: Sendable>(
    _ router: Router<BasicRequestContext>,
    server: HTTPServerBuilder = .http1(),
    _ body: @Sendable (_ port: Int) async throws -> Result
) async throws -> Result {
    let logger = Logger(label: "test-server") { _ in SwiftLogNoOpLogHandler() }
    return try await withRunningApplication(
        logger: logger,
        { onRunning in
            Application(
                router: router, server: server, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                onServerRunning: { await onRunning($0.localAddress?.port ?? 0) }, logger: logger)
        }, { port, _ in try await body(port) })
}

/// Starts the application made by `makeApplication` (which must report its port through the callback
/// it is given), runs `body`, and shuts the application down gracefully however `body` ends.
func withRunningApplication<App: ApplicationProtocol, Result: Sendable>(
    logger: Logger,
    alongside services: [any Service] = [],
    _ makeApplication: (_ onRunning: @escaping @Sendable (Int) async -> Void) -> App,
    _ body: @Sendable (_ port: Int, _ group: ServiceGroup) async throws -> Result
) async throws -> Result {
    let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
    let app = makeApplication { portContinuation.yield($0) }
    let group = ServiceGroup(configuration: .init(services: [app] + services, gracefulShutdownSignals: [], logger: logger))
    return try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CancellationError() }
        do {
            let result = try await body(port, group)
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            return result
        } catch {
            await group.triggerGracefulShutdown()
            tasks.cancelAll()
            throw error
        }
    }
}
