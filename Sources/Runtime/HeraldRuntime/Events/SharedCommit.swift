import FirestoreModel
import GoogleClients

/// Several commits' writes as one (packed by `WritePacking` as separate commits: joined per document
/// where both conditions can hold, within Firestore's limits), and each original write's results read
/// back from the write it joined.
struct SharedCommit {
    private var packing = WritePacking(.separateCommits)
    /// For each commit, for each of its writes, the fields its transforms touch, in order.
    private var transformFields: [[[FieldPath]]] = []

    var writes: [Write] { packing.writes }

    /// Takes in one commit's writes, unless one would be a second, unmergeable write to a document
    /// another commit here writes, or the shared commit would pass `limit` writes or a document 500
    /// transforms: then nothing changes (false). Writes of one commit to one document that cannot be
    /// one stay apart, in their order.
    mutating func add(_ commit: [Write], limit: Int) -> Bool {
        guard packing.add(commit, capacity: limit) else { return false }
        transformFields.append(commit.map { $0.transforms.map(\.field) })
        return true
    }

    /// The writes to commit: each write to a document whose version is known, and that asked for no
    /// more than its existence, made conditional on that version, and each unconditional write to a
    /// document known `missing` on its still being missing: the commit goes only if nobody wrote the
    /// document since. Only a document's first write is conditioned: a later one meets the document as
    /// the first left it.
    func conditioned(on versions: [DocumentName: Timestamp], missing: Set<DocumentName> = []) -> [Write] {
        var writes = self.writes
        var seen: Set<DocumentName> = []
        for index in writes.indices where seen.insert(writes[index].document).inserted {
            let document = writes[index].document
            if let known = versions[document] {
                switch writes[index].precondition {
                case nil, .exists(true)?: writes[index].precondition = .updateTime(known)
                default: continue
                }
            } else if missing.contains(document), writes[index].precondition == nil, writes[index].operation != .delete(document) {
                writes[index].precondition = .exists(false)
            }
        }
        return writes
    }

    /// Commit `index`'s results: each write's update time, and each of its transforms' value as the
    /// shared write left that field (after every commit's transforms on it: a count's committed total).
    func result(of index: Int, from shared: FirestoreClient.CommitResult) -> FirestoreClient.CommitResult {
        let own = packing.slots[index]
        return FirestoreClient.CommitResult(
            commitTime: shared.commitTime,
            updateTimes: own.map { $0 < shared.updateTimes.count ? shared.updateTimes[$0] : nil },
            transformResults: own.enumerated().map { position, slot in
                let sharedWrite = writes[slot]
                let values = slot < shared.transformResults.count ? shared.transformResults[slot] : []
                return transformFields[index][position].map { field in
                    let last = sharedWrite.transforms.lastIndex { $0.field == field }
                    return last.flatMap { $0 < values.count ? values[$0] : nil } ?? .null
                }
            })
    }
}
