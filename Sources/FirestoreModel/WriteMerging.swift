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
        let (slots, count) = mergeSlots(writes)
        var result: [Write] = []
        result.reserveCapacity(count)
        for (write, slot) in zip(writes, slots) {
            if slot == result.count {
                result.append(write)
            } else {
                result[slot].absorb(write)
            }
        }
        return result
    }

    /// How many writes `merging(writes)` gives, without building them.
    public static func mergedCount(_ writes: [Write]) -> Int { mergeSlots(writes).count }

    /// For each write, the index of the merged write it joins, and how many merged writes there are.
    /// Whether writes merge depends only on their documents, preconditions and kinds of operation.
    private static func mergeSlots(_ writes: [Write]) -> (slots: [Int], count: Int) {
        var slots: [Int] = []
        slots.reserveCapacity(writes.count)
        var merged: [(document: DocumentName, shape: MergeShape)] = []
        // A plan's few writes are searched in place, a sweep's many through an index.
        var position: [DocumentName: Int]? = writes.count > 16 ? [:] : nil
        for write in writes {
            let document = write.document
            let shape = write.shape
            let index = position == nil ? merged.lastIndex { $0.document == document } : position?[document]
            if let index, let joined = merged[index].shape.merged(with: shape) {
                merged[index].shape = joined
                slots.append(index)
            } else {
                position?[document] = merged.count
                slots.append(merged.count)
                merged.append((document, shape))
            }
        }
        return (slots, merged.count)
    }

    private var shape: MergeShape {
        switch operation {
        case .transform: MergeShape(precondition: precondition, kind: .transform)
        case .update(_, _, .some): MergeShape(precondition: precondition, kind: .maskedUpdate)
        case .update(_, _, .none), .delete: MergeShape(precondition: precondition, kind: .replaceOrDelete)
        }
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
