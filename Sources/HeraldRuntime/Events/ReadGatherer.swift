import FirestoreModel
import GoogleClients
import Synchronization

/// An instance's reads gathered into fewer `batchGet` requests when it is busy. A read goes at once while
/// fewer than `lanes` batches are out, so when nothing is busy nothing waits. Beyond that it waits for the
/// next batch, which leaves the moment one of those returns and carries every read waiting then (up to
/// `maximumDocuments` names): under load, events finishing together (the read of their plans' documents,
/// the check of the badges after their pushes) share one request instead of one each.
///
/// A gathered read never starts before its caller asked, so it sees what the caller committed before.
/// The batch is read by the first of the gathered callers, in a task of its own so that its caller's
/// cancellation does not fail the others; a failure reaches every caller of the batch, as its own would.
final class ReadGatherer: Sendable {
    typealias Found = [DocumentName: FirestoreDocument?]

    let firestore: any FirestoreAPI
    let lanes: Int
    let maximumDocuments: Int

    private enum Turn: Sendable {
        case read(Found)
        /// This caller reads for itself and for these others.
        case lead([Waiting])
    }

    private struct Waiting: Sendable {
        var names: [DocumentName]
        var continuation: CheckedContinuation<Turn, any Error>
    }

    private struct State {
        var inFlight = 0
        var waiting: [Waiting] = []
        /// Requests made, and reads they carried (for tests and figures).
        var requests = 0
        var reads = 0

        /// The next batch: the longest-waiting reads while they fit, and always the first.
        mutating func nextBatch(maximum: Int) -> [Waiting] {
            var count = 0
            var taken = 0
            for waiting in self.waiting {
                guard taken == 0 || count + waiting.names.count <= maximum else { break }
                count += waiting.names.count
                taken += 1
            }
            defer { self.waiting.removeFirst(taken) }
            return Array(self.waiting.prefix(taken))
        }
    }

    private let state = Mutex(State())

    init(firestore: any FirestoreAPI, lanes: Int = 4, maximumDocuments: Int = 300) {
        self.firestore = firestore
        self.lanes = lanes
        self.maximumDocuments = maximumDocuments
    }

    /// Requests made so far, and the reads they carried.
    var counts: (requests: Int, reads: Int) { state.withLock { ($0.requests, $0.reads) } }

    /// Reads waiting for a lane now.
    var waitingCount: Int { state.withLock { $0.waiting.count } }

    func batchGet(_ names: [DocumentName]) async throws -> Found {
        guard !names.isEmpty else { return [:] }
        let turn = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Turn, any Error>) in
            let leads = state.withLock { state in
                guard state.inFlight < lanes else {
                    state.waiting.append(Waiting(names: names, continuation: continuation))
                    return false
                }
                state.inFlight += 1
                return true
            }
            if leads { continuation.resume(returning: .lead([])) }
        }
        switch turn {
        case .read(let found): return found
        case .lead(let others): return try await lead(names, for: others)
        }
    }

    private func lead(_ names: [DocumentName], for others: [Waiting]) async throws -> Found {
        let all = others.isEmpty ? names : Array(Set(names + others.flatMap(\.names)))
        state.withLock {
            $0.requests += 1
            $0.reads += 1 + others.count
        }
        let result: Result<Found, any Error>
        do {
            let firestore = self.firestore
            result = .success(
                others.isEmpty
                    ? try await firestore.batchGet(all, transaction: nil)
                    : try await Task { try await firestore.batchGet(all, transaction: nil) }.value)
        } catch {
            result = .failure(error)
        }
        for other in others { other.continuation.resume(with: Result(catching: { Turn.read(try Self.part(of: result, for: other.names)) })) }
        let next = state.withLock { state in
            let batch = state.nextBatch(maximum: maximumDocuments)
            if batch.isEmpty { state.inFlight -= 1 }  // else the lane passes to the next batch
            return batch
        }
        if let first = next.first { first.continuation.resume(returning: .lead(Array(next.dropFirst()))) }
        return try Self.part(of: result, for: names)
    }

    private static func part(of result: Result<Found, any Error>, for names: [DocumentName]) throws -> Found {
        let found = try result.get()
        var part: Found = [:]
        for name in names { if let document = found[name] { part[name] = .some(document) } }
        return part
    }
}
