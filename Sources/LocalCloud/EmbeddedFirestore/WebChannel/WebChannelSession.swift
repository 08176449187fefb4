import Foundation
import Synchronization

/// One WebChannel session: a Firestore stream (Listen or Write) that a client carries over plain HTTP
/// requests. Its messages arrive on forward-channel POSTs (each map once, though a client may post one
/// again); its answers wait here as numbered arrays until a back channel takes them, and stay until the
/// client acknowledges them (`AID`), so a back channel that breaks loses nothing: the next one starts
/// after the last array the client saw.
package final class WebChannelSession: Sendable {
    package enum Stream: String, Sendable {
        case listen = "Listen"
        case write = "Write"
    }

    /// Why a session ended: it is gone for the client (`Unknown SID`).
    enum End: Sendable, Equatable {
        case terminated, expired, stopped
    }

    let id: String
    let stream: Stream
    let database: String
    /// The request headers the stream runs with (the HTTP request's and those the SDK encoded).
    let metadata: [String: String]
    let requests: AsyncStream<StreamRequest>
    private let requestSink: AsyncStream<StreamRequest>.Continuation
    private let state: Mutex<State>

    /// Arrays of answers held unacknowledged, in UTF-16 code units, past which the stream waits for the
    /// client to catch up: a client that never reads holds at most this much here (4 Mi by default).
    let heldUnitsLimit: Int
    /// Requests queued and not yet taken by the stream, past which a POST is refused for a while.
    static let queuedRequestsLimit = 200

    struct State {
        var arrays: [(id: Int, text: String)] = []
        var heldUnits = 0
        var nextArrayID = 1
        var lastMapID: Int
        var queuedRequests = 0
        var backChannel: AsyncStream<Void>.Continuation?
        var backChannelNumber = 0
        var lastHeard = ContinuousClock.now
        /// The stream has ended: what is queued is all there will be.
        var streamEnded = false
        var end: End?
        var waitingForRoom: [CheckedContinuation<Bool, Never>] = []
    }

    init(id: String, stream: Stream, database: String, metadata: [String: String], firstMapID: Int, heldUnitsLimit: Int = 4 * 1024 * 1024) {
        self.id = id
        self.heldUnitsLimit = heldUnitsLimit
        self.stream = stream
        self.database = database
        self.metadata = metadata
        (requests, requestSink) = AsyncStream.makeStream(of: StreamRequest.self)
        state = Mutex(State(lastMapID: firstMapID - 1))
    }

    var end: End? { state.withLock { $0.end } }

    /// Queues the maps of a POST the session has not had yet; false when too many wait already.
    func receive(_ maps: [WebChannelWire.Map]) -> Bool {
        let fresh = state.withLock { state -> [WebChannelWire.Map]? in
            state.lastHeard = .now
            let fresh = maps.filter { $0.id > state.lastMapID }
            guard state.queuedRequests + fresh.count <= Self.queuedRequestsLimit || fresh.isEmpty else { return nil }
            state.lastMapID = max(state.lastMapID, fresh.map(\.id).max() ?? state.lastMapID)
            state.queuedRequests += fresh.count
            return fresh
        }
        guard let fresh else { return false }
        for map in fresh { requestSink.yield(.json(map.json)) }
        return true
    }

    /// The stream took a request.
    func took() { state.withLock { $0.queuedRequests -= 1 } }

    /// Queues one answer for the back channel; waits while too much is held unacknowledged. Throws when
    /// the session has ended.
    func send(_ message: String) async throws {
        while true {
            let queued = state.withLock { state -> Bool? in
                if state.end != nil { return nil }
                guard state.heldUnits < heldUnitsLimit else { return false }
                append(payload: "[\(message)]", to: &state)
                return true
            }
            switch queued {
            case true?: return
            case nil: throw WebChannelSessionEnded()
            case false?:
                let room = await withCheckedContinuation { continuation in
                    let now = state.withLock { state -> Bool? in
                        if state.end != nil { return false }
                        if state.heldUnits < heldUnitsLimit { return true }
                        state.waitingForRoom.append(continuation)
                        return nil
                    }
                    if let now { continuation.resume(returning: now) }
                }
                if !room { throw WebChannelSessionEnded() }
            }
        }
    }

    /// `payload`: `[message]` for a stream's message, or WebChannel's own array (`["noop"]`).
    private func append(payload: String, to state: inout State) {
        let text = WebChannelWire.array(id: state.nextArrayID, payload: payload)
        state.nextArrayID += 1
        state.arrays.append((state.nextArrayID - 1, text))
        state.heldUnits += text.utf16.count
        state.backChannel?.yield()
    }

    /// WebChannel's keep-alive, an array like any other.
    func sendNoop() { state.withLock { if $0.end == nil { append(payload: WebChannelWire.noop, to: &$0) } } }

    /// The stream ended (its last answer, an error if any, is queued): back channels end once they have
    /// sent what is queued.
    func streamEnded() {
        state.withLock { state in
            state.streamEnded = true
            state.backChannel?.yield()
        }
    }

    /// The client has seen every array up to `acknowledged`.
    func acknowledge(_ acknowledged: Int) {
        let waiting = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.lastHeard = .now
            let dropped = state.arrays.prefix { $0.id <= acknowledged }
            guard !dropped.isEmpty else { return [] }
            state.heldUnits -= dropped.reduce(0) { $0 + $1.text.utf16.count }
            state.arrays.removeFirst(dropped.count)
            guard state.heldUnits < heldUnitsLimit else { return [] }
            defer { state.waitingForRoom = [] }
            return state.waitingForRoom
        }
        for continuation in waiting { continuation.resume(returning: true) }
    }

    /// The last array id queued, and the units held after `acknowledged`: a POST's answer.
    func outstanding() -> (lastArrayID: Int, units: Int, backChannelOpen: Bool) {
        state.withLock { ($0.nextArrayID - 1, $0.heldUnits, $0.backChannel != nil) }
    }

    /// Opens a back channel (a newer one replaces an older, which ends): its number, and a signal that
    /// yields when there is something new to look at, and finishes when it is replaced.
    func attachBackChannel() -> (number: Int, signals: AsyncStream<Void>) {
        let (signals, signal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let number = state.withLock { state -> Int in
            state.backChannel?.finish()
            state.backChannel = signal
            state.backChannelNumber += 1
            state.lastHeard = .now
            return state.backChannelNumber
        }
        signal.yield()
        return (number, signals)
    }

    func detachBackChannel(_ number: Int) {
        state.withLock { state in
            guard state.backChannelNumber == number else { return }
            state.backChannel?.finish()
            state.backChannel = nil
            state.lastHeard = .now
        }
    }

    /// The arrays after `cursor`, and whether nothing more will come once they are sent.
    func arrays(after cursor: Int) -> (texts: [String], last: Int, finished: Bool) {
        state.withLock { state in
            let after = state.arrays.filter { $0.id > cursor }
            return (after.map(\.text), after.last?.id ?? cursor, state.streamEnded || state.end != nil)
        }
    }

    /// Whether a session no client has heard from for `idle` can go (no back channel open meanwhile).
    func isIdle(for idle: Duration, now: ContinuousClock.Instant) -> Bool {
        state.withLock { $0.backChannel == nil && now - $0.lastHeard > idle }
    }

    /// Ends the session: its stream's requests end, a waiting answer fails, back channels end.
    func close(_ end: End) {
        let waiting = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            guard state.end == nil else { return [] }
            state.end = end
            state.backChannel?.finish()
            state.backChannel = nil
            defer { state.waitingForRoom = [] }
            return state.waitingForRoom
        }
        requestSink.finish()
        for continuation in waiting { continuation.resume(returning: false) }
    }
}

struct WebChannelSessionEnded: Error, CustomStringConvertible {
    var description: String { "the WebChannel session has ended" }
}
