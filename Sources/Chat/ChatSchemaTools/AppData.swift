import FirestoreModel

/// An app's documents as `herald schema infer` and `check` read them: grouped by collection path with
/// the document ids left out (`rooms/*/posts`), bounded so that any export fits in memory. What was
/// left out is counted and said, never silently dropped.
public struct AppData: Sendable {
    /// At most this many documents are kept in all, and this many per collection group.
    public let maximumDocuments: Int
    public let maximumPerGroup: Int
    /// At most this many collection groups are kept (an app has a handful; 10,000 is a misuse or an attack).
    public let maximumGroups: Int
    /// At most this many bytes of documents (Firestore's storage size) are kept in all, and this many per
    /// collection group: any document may hold a MiB, and memory is bounded by bytes, not by counts.
    public let maximumBytes: Int
    public let maximumBytesPerGroup: Int

    /// The collection ids from the root to a group's documents: `["rooms", "posts"]` for `rooms/*/posts/*`.
    public typealias GroupPath = [String]

    public private(set) var groups: [GroupPath: [FirestoreDocument]] = [:]
    public private(set) var documentsSeen = 0
    public private(set) var documentsKept = 0
    /// Documents seen per group, kept or not.
    public private(set) var seenPerGroup: [GroupPath: Int] = [:]
    /// Groups seen beyond `maximumGroups` (their documents were not kept).
    public private(set) var groupsLeftOut = 0
    public private(set) var bytesKept = 0
    private var bytesPerGroup: [GroupPath: Int] = [:]
    private var byName: [DocumentName: FirestoreDocument] = [:]

    public init(
        maximumDocuments: Int = 200_000, maximumPerGroup: Int = 50_000, maximumGroups: Int = 1_000, maximumBytes: Int = 24 << 20,
        maximumBytesPerGroup: Int = 8 << 20
    ) {
        self.maximumDocuments = maximumDocuments
        self.maximumPerGroup = maximumPerGroup
        self.maximumGroups = maximumGroups
        self.maximumBytes = maximumBytes
        self.maximumBytesPerGroup = maximumBytesPerGroup
    }

    public init(_ documents: [FirestoreDocument]) {
        self.init()
        add(documents)
    }

    public static func groupPath(of name: DocumentName) -> GroupPath {
        stride(from: 0, to: name.segments.count, by: 2).map { name.segments[$0] }
    }

    public mutating func add(_ documents: [FirestoreDocument]) {
        for document in documents {
            documentsSeen += 1
            let path = Self.groupPath(of: document.name)
            if seenPerGroup[path] == nil && seenPerGroup.count >= maximumGroups {
                groupsLeftOut += 1
                continue
            }
            seenPerGroup[path, default: 0] += 1
            guard documentsKept < maximumDocuments, (groups[path]?.count ?? 0) < maximumPerGroup, byName[document.name] == nil else { continue }
            let size = DocumentSize.of(document)
            guard bytesKept + size <= maximumBytes, bytesPerGroup[path, default: 0] + size <= maximumBytesPerGroup else { continue }
            groups[path, default: []].append(document)
            byName[document.name] = document
            documentsKept += 1
            bytesKept += size
            bytesPerGroup[path, default: 0] += size
        }
    }

    public func document(_ name: DocumentName) -> FirestoreDocument? { byName[name] }

    public func documents(in path: GroupPath) -> [FirestoreDocument] { groups[path] ?? [] }

    /// The ids of a top-level collection's documents.
    func ids(of collection: String) -> Set<String> { Set(documents(in: [collection]).map(\.name.documentID)) }

    /// Whether every document of the group was kept (counts over it are exact).
    public func isComplete(_ path: GroupPath) -> Bool { (groups[path]?.count ?? 0) == (seenPerGroup[path] ?? 0) }

    /// What was not read, in sentences, for the top of a report.
    public var limits: [String] {
        var notes: [String] = []
        if documentsKept < documentsSeen {
            notes.append(
                "read \(documentsKept) of \(documentsSeen) documents (at most \(maximumDocuments) or \(maximumBytes >> 20) MB in all, \(maximumPerGroup) or \(maximumBytesPerGroup >> 20) MB per collection): figures below count what was read"
            )
        }
        if groupsLeftOut > 0 {
            notes.append(
                "\(groupsLeftOut) documents in collections beyond the first \(maximumGroups) were left out: an app's data has a handful of collection paths, this one has more than \(maximumGroups)"
            )
        }
        return notes
    }

    /// `rooms/*/posts` for people.
    public static func describe(_ path: GroupPath) -> String { path.joined(separator: "/*/") }
}
