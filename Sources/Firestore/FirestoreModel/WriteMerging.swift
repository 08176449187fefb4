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

    /// This write and one from another commit to the same document, as one write that holds both
    /// commits' conditions (the stronger of the two: no condition, existence, a version), or nil when
    /// they cannot be one. Only for writes of separate commits joined into one: within a commit, a later
    /// write's condition is met by the document as the earlier write left it.
    public func joined(with other: Write) -> Write? {
        if case .updateTime = precondition, case .updateTime = other.precondition { return newer(of: other) }
        let stronger: Precondition?
        switch (precondition, other.precondition) {
        case (.exists(false)?, _), (_, .exists(false)?): return nil  // two creations: one of them fails
        case (.updateTime?, _), (nil, _), (.exists(true)?, nil): stronger = precondition ?? other.precondition
        case (.exists(true)?, _): stronger = other.precondition
        }
        var left = self
        var right = other
        (left.precondition, right.precondition) = (stronger, stronger)
        return left.merged(with: right)
    }

    /// Two updates made on the same version, joined: the older by `latestBy` first, the newer's fields
    /// over it (the later on a tie), with both writes' transforms, so the newer one's fields show, as if
    /// the older had been applied first. Nil if they do not both name the same `latestBy` field.
    private func newer(of other: Write) -> Write? {
        guard precondition == other.precondition, let field = latestBy, field == other.latestBy,
            case .update(_, let fields, _?) = operation, case .update(_, let otherFields, _?) = other.operation,
            let mine = FieldPath.value(in: fields, at: field.segments[...]), let theirs = FieldPath.value(in: otherFields, at: field.segments[...])
        else { return nil }
        let newer: Write
        var older: Write
        (older, newer) = ValueOrder.compare(mine, theirs) > 0 ? (other, self) : (self, other)
        if case .update(let name, let olderFields, let mask?) = older.operation, case .update(_, _, let newerMask?) = newer.operation {
            // A field the newer one sets replaces the older one's value there whole, as its own commit would.
            var kept = olderFields
            for path in newerMask { FieldPath.set(nil, in: &kept, at: path.segments[...]) }
            let covered = { (path: FieldPath) in newerMask.contains { path.segments.starts(with: $0.segments) } }
            older.operation = .update(name, fields: kept, mask: mask.filter { !covered($0) })
        }
        older.absorb(newer)
        return older
    }

    /// Takes in `other`, whose shape merges with this write's.
    private mutating func absorb(_ other: Write) {
        transforms += other.transforms
        latestBy = latestBy ?? other.latestBy
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

    /// The writes as one commit carries them (`WritePacking`, without a limit): each merged into the
    /// last write to its document where the two can be one, in the order each was first written.
    public static func merging(_ writes: [Write]) -> [Write] {
        var packing = WritePacking(.oneCommit, maximumTransforms: .max)
        packing.add(writes)
        return packing.writes
    }

    /// How many writes `merging` gives for the lists' writes in order, without building them: the same
    /// decisions, made on the writes' shapes alone.
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
