/// Writes packed into one commit: the one place that decides how groups of writes (a plan's, or
/// several commits') share a commit. What holds:
/// - Writes to one document keep their order: a write is taken into the last write to its document
///   when the two can be one, else it goes after it.
/// - Within a group, writes merge as within a commit (`Write.merged(with:)`). Across groups they merge
///   the same way when the groups are one commit's parts (`.oneCommit`); when they are separate
///   commits (`.separateCommits`), they are joined so that both commits' conditions hold
///   (`Write.joined(with:)`), and a group with a write that cannot be joined does not fit.
/// - Firestore's limits hold: at most `capacity` writes, and at most `maximumTransforms` (500 unless
///   told otherwise) field transforms on one document (each element of an array transform counts).
/// - A group goes in whole or not at all.
public struct WritePacking: Sendable {
    public enum Groups: Sendable { case oneCommit, separateCommits }

    /// Firestore's limit on field transforms to one document in one commit.
    public static let maximumTransformsPerDocument = 500

    public private(set) var writes: [Write] = []
    /// For each group added, for each of its writes, the packed write it went into.
    public private(set) var slots: [[Int]] = []
    public let groups: Groups
    public let maximumTransforms: Int
    private var lastByDocument: [DocumentName: Int] = [:]

    public init(_ groups: Groups, maximumTransforms: Int = Self.maximumTransformsPerDocument) {
        self.groups = groups
        self.maximumTransforms = maximumTransforms
    }

    /// Adds `group` whole, or nothing (false) when it does not fit within `capacity` writes.
    @discardableResult
    public mutating func add(_ group: [Write], capacity: Int = .max) -> Bool {
        var trial = self
        let earlier = writes.count
        var own: [Int] = []
        for write in group {
            if let index = trial.lastByDocument[write.document] {
                let separate = groups == .separateCommits && index < earlier
                if let packed = separate ? trial.writes[index].joined(with: write) : trial.writes[index].merged(with: write) {
                    guard Self.transformCount(packed) <= maximumTransforms else { return false }
                    trial.writes[index] = packed
                    own.append(index)
                    continue
                }
                guard !separate else { return false }
            }
            guard trial.writes.count < capacity, Self.transformCount(write) <= maximumTransforms else { return false }
            trial.lastByDocument[write.document] = trial.writes.count
            own.append(trial.writes.count)
            trial.writes.append(write)
        }
        trial.slots.append(own)
        self = trial
        return true
    }

    /// How many field transforms a write counts for in Firestore's limit: each element of an array
    /// transform is one.
    public static func transformCount(_ write: Write) -> Int {
        write.transforms.reduce(0) { total, transform in
            switch transform.operation {
            case .appendMissingElements(let elements), .removeAllFromArray(let elements): total + max(1, elements.count)
            default: total + 1
            }
        }
    }
}
