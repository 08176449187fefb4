import FirestoreModel
import Synchronization

/// What Firestore would bill, by who asked: a function (named from the trace of the event it was
/// handling) or "app". The model, after Firestore's pricing page: a query or a listing bills a read per
/// document returned, and one when none is; an aggregation one read per 1,000 documents counted (at
/// least one); a get a read per document asked for, found or not (an assumption: the page does not say
/// what a missing document costs); a write applied bills a write (its transforms included), a delete a
/// delete; a commit refused bills nothing. Not counted: listeners (Listen over gRPC or WebChannel),
/// index entries, storage and network.
public final class BilledOperations: Sendable {
    public struct Counts: Sendable, Equatable {
        public var reads = 0
        public var writes = 0
        public var deletes = 0
    }

    private let counts = Mutex<[String: Counts]>([:])

    public init() {}

    /// Since the start, by who asked.
    public var byRequester: [String: Counts] { counts.withLock { $0 } }

    func read(_ documents: Int, by requester: String) {
        counts.withLock { $0[requester, default: Counts()].reads += documents }
    }

    /// A query's or a listing's reads: the documents it returned, at least one.
    func queried(returning documents: Int, by requester: String) { read(max(1, documents), by: requester) }

    /// An aggregation's reads: one per 1,000 documents counted (up to 1,000 is one), at least one.
    func aggregated(counting documents: Int, by requester: String) { read(max(1, (documents + 999) / 1000), by: requester) }

    func applied(_ writes: [Write], by requester: String) {
        let deletes = writes.count { if case .delete = $0.operation { true } else { false } }
        counts.withLock { counts in
            counts[requester, default: Counts()].writes += writes.count - deletes
            counts[requester, default: Counts()].deletes += deletes
        }
    }
}
