import HeraldRuntime
import NIOCore
import NIOHTTP1
import Synchronization
import Testing

@testable import HeraldHTTPClient

/// A server that is killed and started again on the same port while requests are in flight, as
/// `herald dev` restarts a function: every request ends by its deadline, whatever state its connection
/// was in (herald dev's deliveries once waited for ever on one).
@Suite struct HTTPTransportRestartTests {
    final class Current<Value: Sendable>: Sendable {
        private let value: Mutex<Value>
        init(_ value: Value) { self.value = Mutex(value) }
        func withLock<T>(_ body: (inout Value) -> T) -> T { value.withLock { body(&$0) } }
    }

    /// Binds again, waiting out a socket that still holds the port for a moment. The port is one
    /// `freeLoopbackPort` chose below Linux's ephemeral range: while the server is down between
    /// restarts, no other test's `bind` to port 0 and no client's own end of a connection can take it
    /// (a port the kernel picked did go to one once in CI: "Address already in use").
    static func restart(on port: Int) async throws -> ScriptedServer {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while clock.now < deadline {
            if let server = try? await ScriptedServer.start(port: port) { return server }
            try await Task.sleep(for: .milliseconds(20))
        }
        return try await ScriptedServer.start(port: port)
    }

    @Test func everyRequestEndsByItsDeadlineWhileTheServerIsKilledAndRestarted() async throws {
        let first = try await ScriptedServer.start(port: try freeLoopbackPort())
        let port = first.port
        let server = Current(first)
        let transport = HTTPTransport(http1ConnectionsPerOrigin: 8)
        let clock = ContinuousClock()
        let slowest = Current(Duration.zero)
        // How late this process's own timers fire meanwhile (a busy 2-core machine running the whole
        // suite has starved every task for seconds): a request's deadline cannot be kept better than that.
        let timerLag = Current(Duration.zero)
        let workersDone = Current(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                while workersDone.withLock({ $0 }) < 16 {
                    let asked = clock.now
                    try await Task.sleep(for: .milliseconds(50))
                    timerLag.withLock { $0 = max($0, clock.now - asked - .milliseconds(50)) }
                }
            }
            for worker in 0..<16 {
                group.addTask {
                    for n in 0..<60 {
                        let path = [(n + worker) % 7 == 0 ? "/never" : "/slow", "/cut", "/then-close", "/x"][(n * 3 + worker) % 4]
                        let started = clock.now
                        _ = try? await transport.execute(
                            HTTPRequest(method: .POST, url: "http://127.0.0.1:\(port)\(path)", body: ByteBuffer(string: "b")), timeout: .milliseconds(500))
                        let took = clock.now - started
                        slowest.withLock { $0 = max($0, took) }
                    }
                    workersDone.withLock { $0 += 1 }
                }
            }
            group.addTask {
                for _ in 0..<12 {
                    try await Task.sleep(for: .milliseconds(150))
                    await server.withLock { $0 }.stop()
                    try await Task.sleep(for: .milliseconds(30))
                    let restarted = try await Self.restart(on: port)
                    server.withLock { $0 = restarted }
                }
            }
            try await group.waitForAll()
        }
        await transport.shutdown()
        await server.withLock { $0 }.stop()
        let lag = timerLag.withLock { $0 }
        #expect(
            slowest.withLock { $0 } < .seconds(5) + lag,
            "a request took \(slowest.withLock { $0 }) with a deadline of 0.5 s (timers here fired up to \(lag) late)")
    }
}
