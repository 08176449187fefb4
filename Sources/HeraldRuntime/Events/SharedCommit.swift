import FirestoreModel
import GoogleClients

/// Several commits' writes as one: merged per document where they can be (the same condition; updates
/// and transforms), and each original write's results read back from the write it joined.
struct SharedCommit {
    private(set) var writes: [Write] = []
    /// For each commit, for each of its writes, the shared write it joined.
    private var slots: [[Int]] = []
    /// For each commit, for each of its writes, the fields its transforms touch, in order.
    private var transformFields: [[[FieldPath]]] = []
    private var lastByDocument: [DocumentName: Int] = [:]

    init(_ commits: [[Write]]) {
        for commit in commits { _ = add(commit, limit: .max) }
    }

    /// Takes in one commit's writes, unless one would be a second, unmergeable write to a document
    /// another commit here writes, or the shared commit would pass `limit` writes: then nothing changes
    /// (false). Writes of one commit to one document that cannot be one stay apart, in their order.
    mutating func add(_ commit: [Write], limit: Int) -> Bool {
        var trial = writes
        var last = lastByDocument
        var slotsOfCommit: [Int] = []
        for write in commit {
            if let index = last[write.document] {
                // Two writes of one commit merge as within a commit; another commit's join as separate commits.
                let ownCommit = index >= writes.count
                if let merged = ownCommit ? trial[index].merged(with: write) : trial[index].joined(with: write) {
                    trial[index] = merged
                    slotsOfCommit.append(index)
                    continue
                }
                guard ownCommit else { return false }
            }
            last[write.document] = trial.count
            slotsOfCommit.append(trial.count)
            trial.append(write)
        }
        guard trial.count <= limit else { return false }
        writes = trial
        lastByDocument = last
        slots.append(slotsOfCommit)
        transformFields.append(commit.map { $0.transforms.map(\.field) })
        return true
    }

    /// Each write to a document whose version is known, and that asked for no more than its existence,
    /// made conditional on that version, and each unconditional write to a document known `missing`
    /// on its still being missing: the commit goes only if nobody wrote the document since.
    /// Only a document's first write is conditioned: a later one meets the document as the first left it.
    mutating func conditionOnVersions(_ versions: [DocumentName: Timestamp], missing: Set<DocumentName> = []) {
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
    }

    /// Commit `index`'s results: each write's update time, and each of its transforms' value as the
    /// shared write left that field (after every commit's transforms on it: a count's committed total).
    func result(of index: Int, from shared: FirestoreClient.CommitResult) -> FirestoreClient.CommitResult {
        let own = slots[index]
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
