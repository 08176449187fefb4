import FirestoreModel

/// Writes gathered into one commit, merged per document, within Firestore's limits: at most
/// `capacity` writes, and at most 500 field transforms on one document.
struct CommitBuilder {
    let capacity: Int
    private(set) var writes: [Write] = []
    private var position: [DocumentName: Int] = [:]

    init(capacity: Int) { self.capacity = capacity }

    /// Adds the writes as a whole, or nothing (false) when they would not fit.
    mutating func add(_ group: [Write]) -> Bool {
        var trial = self
        for write in group {
            if let index = trial.position[write.document], let merged = trial.writes[index].merged(with: write) {
                guard merged.transforms.count <= EventLedger.maximumTransformsPerDocument else { return false }
                trial.writes[index] = merged
            } else {
                guard trial.writes.count < capacity, write.transforms.count <= EventLedger.maximumTransformsPerDocument else { return false }
                trial.position[write.document] = trial.writes.count
                trial.writes.append(write)
            }
        }
        self = trial
        return true
    }
}
