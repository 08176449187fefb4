import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// The open WebChannel sessions, and the service their streams run in: each session's stream is a
/// child task of `run`, so a stop ends them all. A session no client has heard from for a minute
/// (no back channel open, no POST) expires, as a closed browser tab's would.
public final class WebChannelSessions: Service, Sendable {
    typealias Start = @Sendable (WebChannelSession) async -> Void

    let maximumSessions: Int
    let idleTimeout: Duration
    private let sessions = Mutex<[String: WebChannelSession]>([:])
    private let starts: AsyncStream<(WebChannelSession, Start)>
    private let startSink: AsyncStream<(WebChannelSession, Start)>.Continuation
    let logger: Logger

    package init(maximumSessions: Int = 2000, idleTimeout: Duration = .seconds(60), logger: Logger) {
        self.maximumSessions = maximumSessions
        self.idleTimeout = idleTimeout
        self.logger = logger
        (starts, startSink) = AsyncStream.makeStream(of: (WebChannelSession, Start).self)
    }

    /// A new session whose stream `start` runs; nil when as many are open as the local cloud serves.
    func open(stream: WebChannelSession.Stream, database: String, metadata: [String: String], firstMapID: Int, start: @escaping Start)
        -> WebChannelSession?
    {
        let session = WebChannelSession(
            id: Self.newID(), stream: stream, database: database, metadata: metadata, firstMapID: firstMapID)
        let opened = sessions.withLock { sessions -> Bool in
            guard sessions.count < maximumSessions else { return false }
            sessions[session.id] = session
            return true
        }
        guard opened else { return nil }
        startSink.yield((session, start))
        return session
    }

    func session(_ id: String) -> WebChannelSession? { sessions.withLock { $0[id] } }

    var count: Int { sessions.withLock { $0.count } }

    func close(_ session: WebChannelSession, _ end: WebChannelSession.End) {
        session.close(end)
        _ = sessions.withLock { $0.removeValue(forKey: session.id) }
    }

    public func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: min(.seconds(5), idleTimeout / 2))
                    let now = ContinuousClock.now
                    for session in sessions.withLock({ Array($0.values) }) where session.isIdle(for: idleTimeout, now: now) {
                        close(session, .expired)
                    }
                }
            }
            for await (session, start) in starts.cancelOnGracefulShutdown() {
                group.addTask {
                    await start(session)
                    // Its last answers wait for the client's back channel, which closes the session once
                    // it has sent them (or the session expires).
                    session.streamEnded()
                }
            }
            for session in sessions.withLock({ Array($0.values) }) { close(session, .stopped) }
            group.cancelAll()
        }
    }

    /// 16 random bytes, base64: a session id a page cannot guess.
    static func newID() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return Data(bytes).base64EncodedString()
    }
}
