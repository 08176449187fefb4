import NIOCore
import NIOHTTP1
import Synchronization

/// The connections to one origin. HTTPS origins are connected one attempt at a time until one says
/// which protocol it speaks: an HTTP/2 origin then shares its connections (a new one only when all are
/// full), an HTTP/1.1 origin gets a connection per request in flight, up to the limit, and requests
/// beyond it wait for one to be free.
final class OriginPool: Sendable {
    private struct Multiplexed {
        var id: ObjectIdentifier
        var connection: HTTPConnection
        var streams: Int
    }

    private struct State {
        var closed = false
        var speaksHTTP2: Bool?
        var multiplexed: [Multiplexed] = []
        var idle: [any Channel] = []
        /// Every connection open, busy or not (closed on shutdown).
        var open: [ObjectIdentifier: any Channel] = [:]
        /// HTTP/1.1 connections open or being opened.
        var http1Count = 0
        /// The attempt whose protocol others wait to learn (HTTPS, before the origin is known).
        var opening: (id: Int, task: Task<Void, any Error>)?
        var waiters: [(id: Int, continuation: CheckedContinuation<Void, any Error>)] = []
        var nextID = 0
    }

    private enum Step {
        case use(HTTPConnection, multiplexed: Bool)
        case await(Task<Void, any Error>)
        case wait
    }

    let origin: HTTPURL.Origin
    private unowned let transport: HTTPTransport
    private let state = Mutex(State())

    init(origin: HTTPURL.Origin, transport: HTTPTransport) {
        self.origin = origin
        self.transport = transport
    }

    func send(_ head: HTTPRequestHead, body: ByteBuffer?, maximumBodySize: Int) async throws -> HTTPResponse {
        var refusals = 0
        while true {
            try Task.checkCancellation()
            switch try nextStep() {
            case .wait:
                try await waitForTurn()
            case .await(let attempt):
                // A new connection joins the pool; then everyone, this request included, looks again.
                try await Self.value(of: attempt)
            case .use(let connection, let multiplexed):
                do {
                    return try await exchange(on: connection, multiplexed: multiplexed, head, body, maximumBodySize)
                } catch let refused as HTTPConnection.StreamRefused {
                    // Not sent: the connection is going away or gone. The request tries another, a few times at most.
                    retire(connection)
                    refusals += 1
                    if refusals == 3 { throw HTTPTransportError(.closed, "no connection to \(origin.authority) took the request: \(refused.underlying)") }
                }
            }
        }
    }

    private func nextStep() throws(HTTPTransportError) -> Step {
        try state.withLock { state throws(HTTPTransportError) -> Step in
            guard !state.closed else { throw HTTPTransportError(.shutDown, "the HTTP client is shut down") }
            if let index = state.multiplexed.firstIndex(where: { $0.streams < transport.streamsPerConnection }) {
                state.multiplexed[index].streams += 1
                return .use(state.multiplexed[index].connection, multiplexed: true)
            }
            while let channel = state.idle.popLast() {
                if channel.isActive { return .use(.http1(channel), multiplexed: false) }
            }
            if let opening = state.opening { return .await(opening.task) }
            if state.speaksHTTP2 != true {
                guard state.http1Count < transport.http1ConnectionsPerOrigin else { return .wait }
                state.http1Count += 1  // given back if the attempt fails or turns out HTTP/2
            }
            state.nextID += 1
            let id = state.nextID
            let (origin, owner) = (origin, transport)
            let attempt = Task {
                do {
                    let connection = try await HTTPConnection.open(
                        to: origin, group: owner.group, tls: origin.secure ? try owner.tls() : nil, connectTimeout: owner.connectTimeout)
                    self.opened(connection, attempt: id)
                } catch {
                    self.failed(attempt: id)
                    throw error
                }
            }
            if origin.secure, state.speaksHTTP2 != false { state.opening = (id, attempt) }
            return .await(attempt)
        }
    }

    private func opened(_ connection: HTTPConnection, attempt: Int) {
        let channel = connection.channel
        let keep = state.withLock { state -> Bool in
            if state.opening?.id == attempt { state.opening = nil }
            guard !state.closed else { return false }
            switch connection {
            case .http1:
                state.speaksHTTP2 = false
                state.idle.append(channel)
            case .http2:
                if state.speaksHTTP2 != true { state.http1Count -= 1 }
                state.speaksHTTP2 = true
                state.multiplexed.append(Multiplexed(id: ObjectIdentifier(channel), connection: connection, streams: 0))
            }
            state.open[ObjectIdentifier(channel)] = channel
            wakeAll(&state)
            return true
        }
        guard keep else {
            channel.close(promise: nil)
            return
        }
        channel.closeFuture.whenComplete { _ in self.closed(connection) }
    }

    private func failed(attempt: Int) {
        state.withLock { state in
            if state.opening?.id == attempt { state.opening = nil }
            if state.speaksHTTP2 != true { state.http1Count -= 1 }
            wakeOne(&state)
        }
    }

    /// Waits for an attempt to connect, or for this task's cancellation (a deadline), whichever is first:
    /// the attempt goes on either way (its connection joins the pool).
    private static func value(of attempt: Task<Void, any Error>) async throws {
        let waiting = Slot()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                waiting.continuation.withLock { $0 = continuation }
                Task {
                    let result = await attempt.result
                    waiting.resume(with: result)
                }
                if Task.isCancelled { waiting.resume(with: .failure(CancellationError())) }
            }
        } onCancel: {
            waiting.resume(with: .failure(CancellationError()))
        }
    }

    /// A continuation resumed once, by whichever comes first.
    private final class Slot: Sendable {
        let continuation = Mutex<CheckedContinuation<Void, any Error>?>(nil)
        func resume(with result: Result<Void, any Error>) { continuation.withLock { $0.take() }?.resume(with: result) }
    }

    private func exchange(
        on connection: HTTPConnection, multiplexed: Bool, _ head: HTTPRequestHead, _ body: ByteBuffer?, _ maximumBodySize: Int
    ) async throws -> HTTPResponse {
        var keepAlive = false
        defer { release(connection, multiplexed: multiplexed, keepAlive: keepAlive) }
        let response = try await connection.exchange(head, body: body, maximumBodySize: maximumBodySize)
        keepAlive = response.keepAlive
        return response
    }

    private func release(_ connection: HTTPConnection, multiplexed: Bool, keepAlive: Bool) {
        let close = state.withLock { state -> Bool in
            if multiplexed {
                if let index = state.multiplexed.firstIndex(where: { $0.id == ObjectIdentifier(connection.channel) }) {
                    state.multiplexed[index].streams -= 1
                }
                wakeOne(&state)
                return false
            }
            guard keepAlive, !state.closed, connection.channel.isActive else { return true }
            state.idle.append(connection.channel)
            wakeOne(&state)
            return false
        }
        if close { connection.channel.close(promise: nil) }
    }

    /// An HTTP/2 connection that takes no new streams: its streams in flight finish, new ones go elsewhere.
    private func retire(_ connection: HTTPConnection) {
        state.withLock { state in state.multiplexed.removeAll { $0.id == ObjectIdentifier(connection.channel) } }
    }

    /// A connection closed (by either side): it leaves the pool, and its place is free.
    private func closed(_ connection: HTTPConnection) {
        state.withLock { state in
            state.open[ObjectIdentifier(connection.channel)] = nil
            switch connection {
            case .http1(let channel):
                state.http1Count -= 1
                state.idle.removeAll { $0 === channel }
            case .http2(let channel, _):
                state.multiplexed.removeAll { $0.id == ObjectIdentifier(channel) }
            }
            wakeOne(&state)
        }
    }

    private func waitForTurn() async throws {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow = state.withLock { state -> Bool in
                    if Task.isCancelled || state.closed { return true }
                    state.waiters.append((id, continuation))
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                state.waiters.firstIndex { $0.id == id }.map { state.waiters.remove(at: $0) }
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    private func wakeOne(_ state: inout State) {
        guard !state.waiters.isEmpty else { return }
        state.waiters.removeFirst().continuation.resume()
    }

    private func wakeAll(_ state: inout State) {
        let waiters = state.waiters
        state.waiters.removeAll()
        for waiter in waiters { waiter.continuation.resume() }
    }

    func close() async {
        let (connections, waiters, opening) = state.withLock { state in
            state.closed = true
            defer {
                state.waiters.removeAll()
                state.idle.removeAll()
            }
            return (Array(state.open.values), state.waiters, state.opening)
        }
        opening?.task.cancel()
        for waiter in waiters { waiter.continuation.resume() }
        for channel in connections { try? await channel.close() }
    }
}
