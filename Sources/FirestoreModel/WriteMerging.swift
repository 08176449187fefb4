/// Writes to one document combined into one write, as a single commit would carry them.
extension Write {
    /// This write and `other` (to the same document) as one write, or nil when they cannot be one:
    /// a delete or a full replace, or preconditions that differ (`other`'s may be weaker: no condition,
    /// or that the document exists, which this write's own condition implies).
    public func merged(with other: Write) -> Write? {
        guard document == other.document, shape.merged(with: other.shape) != nil else { return nil }
        var result = self
        result.absorb(other)
        return result
    }

    /// Takes in `other`, whose shape merges with this write's.
    private mutating func absorb(_ other: Write) {
        transforms += other.transforms
        switch (operation, other.operation) {
        case (.transform(let name), .update(_, let fields, let mask?)):
            operation = .update(name, fields: fields, mask: mask)
        case (.update(let name, let fields, let mask?), .update(_, let otherFields, let otherMask?)):
            operation = .update(name, fields: Self.deepMerge(fields, otherFields), mask: mask + otherMask.filter { !mask.contains($0) })
        default:
            break  // a transform or masked update taking in transforms keeps its operation
        }
    }

    static func deepMerge(_ a: [String: FirestoreValue], _ b: [String: FirestoreValue]) -> [String: FirestoreValue] {
        a.merging(b) { old, new in
            if case .map(let x) = old, case .map(let y) = new { return .map(deepMerge(x, y)) }
            return new
        }
    }

    /// The writes with every write merged into an earlier one to the same document where it can be,
    /// in the order each document was first written.
    public static func merging(_ writes: [Write]) -> [Write] {
        var walk = MergeWalk()
        var result: [Write] = []
        for write in writes {
            let slot = walk.slot(for: write)
            if slot == result.count {
                result.append(write)
            } else {
                result[slot].absorb(write)
            }
        }
        return result
    }

    /// How many writes `merging` gives for the lists' writes in order, without building them.
    public static func mergedCount(_ lists: [[Write]]) -> Int {
        var walk = MergeWalk()
        for list in lists {
            for write in list { _ = walk.slot(for: write) }
        }
        return walk.count
    }

    fileprivate var shape: MergeShape {
        switch operation {
        case .transform: MergeShape(precondition: precondition, kind: .transform)
        case .update(_, _, .some): MergeShape(precondition: precondition, kind: .maskedUpdate)
        case .update(_, _, .none), .delete: MergeShape(precondition: precondition, kind: .replaceOrDelete)
        }
    }
}

/// Which merged write each write joins, in order. Whether writes merge depends only on their
/// documents, preconditions and kinds of operation.
private struct MergeWalk {
    private var merged: [(document: DocumentName, shape: MergeShape)] = []
    /// A plan's few merged writes are searched in place, a sweep's many through this index.
    private var position: [DocumentName: Int]?

    var count: Int { merged.count }

    /// The index of the merged write `write` joins (`count` before the call: a new one).
    mutating func slot(for write: Write) -> Int {
        let document = write.document
        let shape = write.shape
        if position == nil, merged.count > 16 {
            position = Dictionary(merged.enumerated().map { ($1.document, $0) }, uniquingKeysWith: { _, last in last })
        }
        let index = position == nil ? merged.lastIndex { $0.document == document } : position?[document]
        if let index, let joined = merged[index].shape.merged(with: shape) {
            merged[index].shape = joined
            return index
        }
        position?[document] = merged.count
        merged.append((document, shape))
        return merged.count - 1
    }
}

/// What decides whether two writes to one document can be one: their preconditions and kinds.
private struct MergeShape {
    enum Kind { case transform, maskedUpdate, replaceOrDelete }
    var precondition: Precondition?
    var kind: Kind

    /// The shape of this write with a later `other` taken in, or nil when they cannot be one write.
    func merged(with other: MergeShape) -> MergeShape? {
        switch (precondition, other.precondition) {
        case (let a, let b) where a == b: break
        case (.exists(true)?, nil), (.updateTime?, nil), (.updateTime?, .exists(true)?): break
        default: return nil
        }
        switch (kind, other.kind) {
        case (.transform, .transform): return self
        case (.transform, .maskedUpdate), (.maskedUpdate, .transform), (.maskedUpdate, .maskedUpdate):
            return MergeShape(precondition: precondition, kind: .maskedUpdate)
        default: return nil
        }
    }
}
