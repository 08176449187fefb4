import FirestoreModel
import FirestoreProtos
import Foundation
import SwiftProtobuf

/// Firestore's `Listen`, the bidirectional stream behind real-time listeners (`onSnapshot`,
/// `addSnapshotListener`): the client adds and removes targets (documents by name, or a query); for
/// each the stream sends ADD, the documents, CURRENT, then after each commit that touches it the
/// documents that changed, entered (DocumentChange) or left it (DocumentDelete, DocumentRemove), each
/// batch closed by a global NO_CHANGE with the commit's time as `read_time` and resume token. A client
/// that reconnects with a resume token gets only what changed since, checked by an existence filter;
/// when the feed no longer holds that far back, the target is RESET and sent whole.
struct FirestoreListen {
    let host: FirestoreStreamHost
    let metadata: [String: String]

    enum Event: Sendable {
        case request(StreamRequest)
        case requestsEnded
        case feed(ChangeFeed.Next)
        case tick
    }

    func run(requests: some AsyncSequence<StreamRequest, Never> & Sendable, answers: StreamAnswers) async throws(GRPCStatus) {
        do { try host.authorize(metadata["authorization"]) } catch { throw GRPCStatus(name: error.status, message: error.message) }
        let feed = host.firestore.changes
        let subscription = feed.subscribe()
        defer { subscription.cancel() }
        let (events, sink) = AsyncStream.makeStream(of: Event.self)
        // One feed event at a time: the next is taken from the subscription (whose queue is bounded, and
        // says when it overflowed) only once this one is handled, so a slow client holds no backlog here.
        let (handled, handledSink) = AsyncStream.makeStream(of: Void.self)
        // And one request at a time, for the same reason: the stream stops reading a client that sends
        // faster than its requests are handled.
        let (requestHandled, requestHandledSink) = AsyncStream.makeStream(of: Void.self)
        var listener = Listener(host: host, answers: answers)
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                var turns = requestHandled.makeAsyncIterator()
                for await message in requests {
                    sink.yield(.request(message))
                    guard await turns.next() != nil else { return }
                }
                sink.yield(.requestsEnded)
            }
            group.addTask {
                var turns = handled.makeAsyncIterator()
                while let next = await subscription.next() {
                    sink.yield(.feed(next))
                    guard await turns.next() != nil else { return }
                }
            }
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(5))
                    sink.yield(.tick)
                }
            }
            defer { group.cancelAll() }
            do {
                for await event in events {
                    switch event {
                    case .request(let request):
                        try await listener.handle(request: request.decode())
                        requestHandledSink.yield()
                    case .requestsEnded: return
                    case .feed(.commit(let commit)):
                        try await listener.apply(commit)
                        handledSink.yield()
                    case .feed(.missed):
                        try await listener.resetAll()
                        handledSink.yield()
                    case .tick: try await listener.keepAlive()
                    }
                }
            } catch {
                listener.failure = error as? GRPCStatus ?? .internalError("\(error)")
            }
        }
        if let failure = listener.failure { throw failure }
    }
}

/// One Listen stream's targets and what it has sent of each.
struct Listener {
    let host: FirestoreStreamHost
    let answers: StreamAnswers
    var targets: [Int32: ListenTarget] = [:]
    var database: String?
    /// The time the client's view is consistent at (the last global NO_CHANGE sent).
    var sentUpTo = Timestamp(seconds: 0)
    var failure: GRPCStatus?

    var feed: ChangeFeed { host.firestore.changes }

    mutating func handle(request: Google_Firestore_V1_ListenRequest) async throws {
        if !request.database.isEmpty {
            if let database, database != request.database { throw GRPCStatus.invalidArgument("a Listen stream serves one database, \(database)") }
            database = request.database
        }
        guard let database else { throw GRPCStatus.invalidArgument("ListenRequest.database is required") }
        try checkProject(database)
        switch request.targetChange {
        case .addTarget(let target)?:
            try await add(target, database: database)
        case .removeTarget(let id)?:
            guard targets.removeValue(forKey: id) != nil else { throw GRPCStatus.invalidArgument("target \(id) is not being listened to") }
            try await send(targetChange: .remove, ids: [id])
        case nil:
            break
        }
    }

    func checkProject(_ database: String) throws {
        let parts = database.split(separator: "/")
        guard parts.count == 4, parts[0] == "projects", parts[2] == "databases" else {
            throw GRPCStatus.invalidArgument("database must be projects/PROJECT/databases/DATABASE, not \(database)")
        }
        do { try host.checkServed(String(parts[1])) } catch { throw GRPCStatus(name: error.status, message: error.message) }
    }

    mutating func add(_ proto: Google_Firestore_V1_Target, database: String) async throws {
        guard targets[proto.targetID] == nil else { throw GRPCStatus.invalidArgument("target \(proto.targetID) is already being listened to") }
        var target = try ListenTarget(proto, database: database)
        try await send(targetChange: .add, ids: [target.id])
        let now = try await target.read(host.firestore)
        var resumedSince: Timestamp?
        switch proto.resumeType {
        case .resumeToken(let token)?: resumedSince = ListenTarget.time(token: token)
        case .readTime(let time)?: resumedSince = Timestamp(seconds: time.seconds, nanos: time.nanos)
        case nil: break
        }
        if let since = resumedSince, target.canResume, let missed = feed.commits(after: since) {
            // Only what changed since: the client kept the rest. Then the count, so it can tell.
            var deleted: [DocumentName: Bool] = [:]
            for commit in missed { for change in commit.changes where target.covers(change.name) { deleted[change.name] = change.after == nil } }
            for (name, isDeleted) in deleted.sorted(by: { $0.key < $1.key }) {
                if let document = now[name] {
                    try await send(.documentChange(ListenTarget.change(document, ids: [target.id])))
                } else if isDeleted {
                    var delete = Google_Firestore_V1_DocumentDelete()
                    delete.document = name.resourceName
                    delete.removedTargetIds = [target.id]
                    try await send(.documentDelete(delete))
                } else {
                    var removed = Google_Firestore_V1_DocumentRemove()
                    removed.document = name.resourceName
                    removed.removedTargetIds = [target.id]
                    try await send(.documentRemove(removed))
                }
            }
            var filter = Google_Firestore_V1_ExistenceFilter()
            filter.targetID = target.id
            filter.count = Int32(now.count)
            try await send(.filter(filter))
        } else {
            if resumedSince != nil { try await send(targetChange: .reset, ids: [target.id]) }
            for document in now.values.sorted(by: { $0.name < $1.name }) {
                try await send(.documentChange(ListenTarget.change(document, ids: [target.id])))
            }
        }
        target.members = now.mapValues(\.updateTime)
        let time = feed.latest
        try await send(targetChange: .current, ids: [target.id], time: time)
        if target.once {
            try await send(targetChange: .remove, ids: [target.id])
        } else {
            targets[target.id] = target
        }
        try await sendConsistent(at: time)
    }

    /// What one commit changes for each target; then the point the client's view is consistent at.
    mutating func apply(_ commit: ChangeFeed.Commit) async throws {
        var touched = false
        for id in targets.keys.sorted() {
            guard var target = targets[id] else { continue }
            let relevant = commit.changes.filter { target.covers($0.name) }
            guard !relevant.isEmpty else { continue }
            touched = true
            let updates = try await target.updates(for: relevant, at: commit.time, store: host.firestore)
            for update in updates { try await send(update) }
            targets[id] = target
        }
        if touched { try await sendConsistent(at: commit.time) }
    }

    /// The feed dropped commits while this stream was behind: every target starts over.
    mutating func resetAll() async throws {
        for id in targets.keys.sorted() {
            guard var target = targets[id] else { continue }
            try await send(targetChange: .reset, ids: [id])
            let now = try await target.read(host.firestore)
            for document in now.values.sorted(by: { $0.name < $1.name }) { try await send(.documentChange(ListenTarget.change(document, ids: [id]))) }
            target.members = now.mapValues(\.updateTime)
            targets[id] = target
            try await send(targetChange: .current, ids: [id], time: feed.latest)
        }
        try await sendConsistent(at: feed.latest)
    }

    /// Keeps the client's resume token recent while nothing it listens to changes.
    mutating func keepAlive() async throws {
        let latest = feed.latest
        guard !targets.isEmpty, latest > sentUpTo else { return }
        try await sendConsistent(at: latest)
    }

    mutating func sendConsistent(at time: Timestamp) async throws {
        sentUpTo = max(sentUpTo, time)
        try await send(targetChange: .noChange, ids: [], time: sentUpTo)
    }

    func send(targetChange type: Google_Firestore_V1_TargetChange.TargetChangeType, ids: [Int32], time: Timestamp? = nil) async throws {
        var change = Google_Firestore_V1_TargetChange()
        change.targetChangeType = type
        change.targetIds = ids
        if let time {
            change.readTime = Google_Protobuf_Timestamp(seconds: time.seconds, nanos: time.nanos)
            change.resumeToken = ListenTarget.token(time)
        }
        try await send(.targetChange(change))
    }

    func send(_ response: Google_Firestore_V1_ListenResponse.OneOf_ResponseType) async throws {
        var message = Google_Firestore_V1_ListenResponse()
        message.responseType = response
        try await answers.send(message)
    }
}
