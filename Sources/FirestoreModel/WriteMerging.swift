/// Writes to one document combined into one write, as a single commit would carry them.
extension Write {
    /// This write and `other` (to the same document) as one write, or nil when they cannot be one:
    /// a delete or a full replace, or preconditions that differ (`other`'s may be weaker: no condition,
    /// or that the document exists, which this write's own condition implies).
    public func merged(with other: Write) -> Write? {
        guard document == other.document else { return nil }
        switch (precondition, other.precondition) {
        case (let a, let b) where a == b: break
        case (.exists(true)?, nil), (.updateTime?, nil), (.updateTime?, .exists(true)?): break
        default: return nil
        }
        var result = self
        result.transforms += other.transforms
        switch (operation, other.operation) {
        case (.transform, .transform):
            return result
        case (.update(let name, let fields, let mask?), .transform):
            result.operation = .update(name, fields: fields, mask: mask)
            return result
        case (.transform(let name), .update(_, let fields, let mask?)):
            result.operation = .update(name, fields: fields, mask: mask)
            return result
        case (.update(let name, let fields, let mask?), .update(_, let otherFields, let otherMask?)):
            result.operation = .update(name, fields: Self.deepMerge(fields, otherFields), mask: mask + otherMask.filter { !mask.contains($0) })
            return result
        default:
            return nil
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
        var result: [Write] = []
        result.reserveCapacity(writes.count)
        // A plan's few writes are searched in place (by their names: getting a write's name copies its
        // operation); a sweep's many through an index.
        var names: [DocumentName] = []
        var position: [DocumentName: Int]? = writes.count > 16 ? [:] : nil
        for write in writes {
            let name = write.document
            let index = position == nil ? names.lastIndex(of: name) : position?[name]
            if let index, let merged = result[index].merged(with: write) {
                result[index] = merged
            } else {
                position?[name] = result.count
                names.append(name)
                result.append(write)
            }
        }
        return result
    }
}
