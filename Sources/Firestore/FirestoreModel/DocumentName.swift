import WireFormats

/// A document's full resource name: `projects/{project}/databases/{database}/documents/{path}`,
/// where the path alternates collection and document ids (`conversations/c1/messages/m1`).
public struct DocumentName: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let project: String
    public let database: String
    /// Path segments relative to `documents/`; always an even, non-zero count.
    public let segments: [String]
    /// `segments.hashValue`, computed once: names are keys of most of a plan's dictionaries and sets,
    /// and are looked up many more times than they are made. Seeded per process, as every hash is.
    private let segmentsHash: Int

    public init(project: String, database: String = "(default)", segments: [String]) throws(DocumentNameError) {
        for segment in segments where segment.containsByte(Self.slash) { throw DocumentNameError("invalid path segment \"\(segment)\"") }
        try self.init(project: project, database: database, slashFreeSegments: segments)
    }

    /// `segments` already split at every "/" (so holding none).
    init(project: String, database: String, slashFreeSegments segments: [String]) throws(DocumentNameError) {
        guard !project.isEmpty, !project.containsByte(Self.slash) else { throw DocumentNameError("invalid project id \"\(project)\"") }
        guard !database.isEmpty, !database.containsByte(Self.slash) else { throw DocumentNameError("invalid database id \"\(database)\"") }
        guard !segments.isEmpty, segments.count % 2 == 0 else {
            throw DocumentNameError("a document path needs an even number of segments: \"\(segments.joined(separator: "/"))\"")
        }
        for segment in segments {
            guard !segment.isEmpty, segment != ".", segment != ".." else {
                throw DocumentNameError("invalid path segment \"\(segment)\"")
            }
            guard segment.utf8.count <= Self.maximumIDBytes else { throw DocumentNameError("a path segment is longer than \(Self.maximumIDBytes) bytes") }
        }
        self.project = project
        self.database = database
        self.segments = segments
        segmentsHash = segments.hashValue
    }

    /// Firestore's limit on a collection or document id.
    public static let maximumIDBytes = 1500

    // Byte checks: `String.contains(String)` goes through Foundation's locale-aware search, which was
    // the largest cost of planning an event (callgrind).
    static let slash = UInt8(ascii: "/")

    public init(project: String, database: String = "(default)", path: String) throws(DocumentNameError) {
        try self.init(project: project, database: database, slashFreeSegments: path.parts(splitAt: "/"))
    }

    /// Parses a full resource name such as `projects/p/databases/(default)/documents/users/u1`.
    public init(resourceName: String) throws(DocumentNameError) {
        let parts = resourceName.parts(splitAt: "/")
        guard parts.count >= 7, parts[0] == "projects", parts[2] == "databases", parts[4] == "documents" else {
            throw DocumentNameError("not a document resource name: \"\(resourceName.prefix(200))\"")
        }
        try self.init(project: parts[1], database: parts[3], slashFreeSegments: Array(parts[5...]))
    }

    /// The path relative to `documents/`, e.g. `conversations/c1/messages/m1`.
    public var path: String { segments.joined(separator: "/") }
    public var documentID: String { segments[segments.count - 1] }
    public var collectionID: String { segments[segments.count - 2] }
    public var databaseName: String { "projects/\(project)/databases/\(database)" }
    public var resourceName: String { "\(databaseName)/documents/\(path)" }
    public var description: String { resourceName }

    /// The document that holds this document's collection, if it is in a subcollection.
    public var parent: DocumentName? {
        guard segments.count > 2 else { return nil }
        return try? DocumentName(project: project, database: database, slashFreeSegments: Array(segments.dropLast(2)))
    }

    /// Another document in the same database.
    public func sibling(path: String) throws(DocumentNameError) -> DocumentName {
        try DocumentName(project: project, database: database, path: path)
    }

    public static func < (a: DocumentName, b: DocumentName) -> Bool { a.resourceName < b.resourceName }

    // Segments first: names in one dictionary almost always share their project and database.
    public static func == (a: DocumentName, b: DocumentName) -> Bool {
        a.segmentsHash == b.segmentsHash && a.segments == b.segments && a.project == b.project && a.database == b.database
    }

    // The segments alone: equal names have equal segments, and the project and database rarely tell names apart.
    public func hash(into hasher: inout Hasher) { hasher.combine(segmentsHash) }
}

public struct DocumentNameError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
