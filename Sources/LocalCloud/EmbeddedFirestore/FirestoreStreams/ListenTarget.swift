import FirestoreModel
import FirestoreProtos
import Foundation
import SwiftProtobuf
import WireFormats

/// One target of a Listen stream: documents by name, or a query; and the documents of it the client
/// holds (with their update times), so each commit sends only what changed for it.
struct ListenTarget {
    enum Kind {
        case documents(Set<DocumentName>)
        /// `parent`: the path the query runs under ("" for the database's root).
        case query(StructuredQuery, parent: String, database: String)
    }

    let id: Int32
    let kind: Kind
    let once: Bool
    var members: [DocumentName: Timestamp?] = [:]

    init(_ proto: Google_Firestore_V1_Target, database: String) throws {
        id = proto.targetID
        once = proto.once
        switch proto.targetType {
        case .documents(let documents)?:
            var names: Set<DocumentName> = []
            for resourceName in documents.documents {
                let name: DocumentName
                do { name = try DocumentName(resourceName: resourceName) } catch { throw GRPCStatus.invalidArgument("\(resourceName): \(error)") }
                guard name.databaseName == database else { throw GRPCStatus.invalidArgument("\(resourceName) is not in \(database)") }
                names.insert(name)
            }
            kind = .documents(names)
        case .query(let target)?:
            let root = database + "/documents"
            guard target.parent == root || target.parent.hasPrefix(root + "/") else {
                throw GRPCStatus.invalidArgument("the query's parent \(target.parent) is not in \(database)")
            }
            let parent = target.parent == root ? "" : String(target.parent.dropFirst(root.count + 1))
            let query: StructuredQuery
            do {
                let json = try JSONValue(parsing: Array(try target.structuredQuery.jsonString().utf8))
                query = try StructuredQuery(json: json)
                try QueryEvaluation.validate(query)
            } catch let error as LocalAPIError {
                throw GRPCStatus(name: error.status, message: error.message)
            } catch {
                throw GRPCStatus.invalidArgument("the query cannot be read: \(error)")
            }
            kind = .query(query, parent: parent, database: database)
        case nil:
            throw GRPCStatus.invalidArgument("a target needs documents or a query")
        }
    }

    /// Whether a commit to `name` can change this target.
    func covers(_ name: DocumentName) -> Bool {
        switch kind {
        case .documents(let names): return names.contains(name)
        case .query(let query, let parent, let database):
            guard name.databaseName == database else { return false }
            let collection = name.segments.dropLast().joined(separator: "/")
            if query.allDescendants {
                return name.collectionID == query.collectionID && (parent.isEmpty || collection.hasPrefix(parent + "/"))
            }
            return collection == (parent.isEmpty ? query.collectionID : parent + "/" + query.collectionID)
        }
    }

    /// A query whose result is a predicate on each document alone (no limit, no offset): a change is
    /// judged by the changed document; otherwise the query is run again.
    var isIncremental: Bool {
        guard case .query(let query, _, _) = kind else { return true }
        return query.limit == nil && (query.offset ?? 0) == 0
    }

    /// A target the feed's history can bring up to date.
    var canResume: Bool { isIncremental }

    /// The target's documents now.
    func read(_ store: LocalFirestore) async throws -> [DocumentName: FirestoreDocument] {
        do {
            switch kind {
            case .documents(let names): return try await store.get(Array(names))
            case .query(let query, let parent, let database):
                let found = try await store.runQuery(query, parent: parent, database: database)
                return Dictionary(found.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
            }
        } catch {
            throw GRPCStatus(name: error.status, message: error.message)
        }
    }

    func matches(_ document: FirestoreDocument) -> Bool {
        guard case .query(let query, _, _) = kind else { return true }
        return (try? QueryEvaluation.run(query, over: [document]).isEmpty == false) ?? false
    }

    /// What `changes` (all covered by this target) mean for the client, and the members updated.
    /// A change committed at `time` to a document the client already holds in a later version (read
    /// when the target was added or reset, after the commit) is old news, and skipped.
    mutating func updates(for changes: [LocalFirestore.Change], at time: Timestamp, store: LocalFirestore) async throws
        -> [Google_Firestore_V1_ListenResponse.OneOf_ResponseType]
    {
        var responses: [Google_Firestore_V1_ListenResponse.OneOf_ResponseType] = []
        if isIncremental {
            for change in changes {
                if let held = members[change.name] ?? nil, held > time { continue }
                let after = change.after.flatMap { matches($0) ? $0 : nil }
                responses += transition(change.name, to: after, deleted: change.after == nil)
            }
        } else {
            let now = try await read(store)
            let deleted = Set(changes.filter { $0.after == nil }.map(\.name))
            for name in Set(members.keys).union(now.keys).sorted() {
                responses += transition(name, to: now[name], deleted: deleted.contains(name))
            }
        }
        return responses
    }

    /// The client holds `name` as in `members`; it should hold `document` (nil: not in the target).
    mutating func transition(_ name: DocumentName, to document: FirestoreDocument?, deleted: Bool) -> [Google_Firestore_V1_ListenResponse.OneOf_ResponseType] {
        if let document {
            if let held = members[name], held == document.updateTime { return [] }
            members[name] = document.updateTime
            return [.documentChange(Self.change(document, ids: [id]))]
        }
        guard members.removeValue(forKey: name) != nil else { return [] }
        if deleted {
            var delete = Google_Firestore_V1_DocumentDelete()
            delete.document = name.resourceName
            delete.removedTargetIds = [id]
            return [.documentDelete(delete)]
        }
        var remove = Google_Firestore_V1_DocumentRemove()
        remove.document = name.resourceName
        remove.removedTargetIds = [id]
        return [.documentRemove(remove)]
    }

    static func change(_ document: FirestoreDocument, ids: [Int32]) -> Google_Firestore_V1_DocumentChange {
        var change = Google_Firestore_V1_DocumentChange()
        change.document = proto(document)
        change.targetIds = ids
        return change
    }

    /// A document in protobuf, through its REST JSON (proto3's JSON mapping of the same message).
    static func proto(_ document: FirestoreDocument) -> Google_Firestore_V1_Document {
        var options = JSONDecodingOptions()
        options.ignoreUnknownFields = true
        return (try? Google_Firestore_V1_Document(jsonString: FirestoreJSON.json(document).serialized(), options: options))
            ?? {
                var bare = Google_Firestore_V1_Document()
                bare.name = document.name.resourceName
                return bare
            }()
    }

    /// A resume token: the commit time, in nanoseconds since 1970, big-endian.
    static func token(_ time: Timestamp) -> Data {
        withUnsafeBytes(of: time.nanosSinceEpoch.bigEndian) { Data($0) }
    }

    static func time(token: Data) -> Timestamp? {
        guard token.count == 8 else { return nil }
        let nanos = token.reduce(Int64(0)) { $0 << 8 | Int64($1) }
        return Timestamp(nanosSinceEpoch: nanos)
    }
}
