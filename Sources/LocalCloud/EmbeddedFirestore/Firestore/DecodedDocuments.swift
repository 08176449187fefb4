import FirestoreModel
import Synchronization
import WireFormats

/// Documents as decoded from their stored JSON, by name and version. A query reads every document of
/// its collection, and parsing them again for each query was most of `herald dev`'s time: a lookup per
/// event over a collection of 1,000 users parsed a million documents to seed them. A version changes
/// with every write, so an entry is either the stored document or not used.
final class DecodedDocuments: Sendable {
    struct Key: Hashable {
        var database: String
        var path: String
    }

    struct Entry {
        var document: FirestoreDocument
        var bytes: Int
    }

    /// Kept up to this many bytes of stored JSON, then emptied (a dev tool's memory, not a server's).
    let capacityBytes: Int
    private let entries = Mutex<(documents: [Key: Entry], bytes: Int)>(([:], 0))

    init(capacityBytes: Int = 64 << 20) { self.capacityBytes = capacityBytes }

    /// The document of this version if it was decoded before.
    func document(database: String, path: String, updateTime: Int64) -> FirestoreDocument? {
        entries.withLock { state in
            guard let entry = state.documents[Key(database: database, path: path)], entry.document.updateTime?.nanosSinceEpoch == updateTime else {
                return nil
            }
            return entry.document
        }
    }

    func remember(_ document: FirestoreDocument, bytes: Int) {
        let key = Key(database: document.name.databaseName, path: document.name.path)
        entries.withLock { state in
            if state.bytes + bytes > capacityBytes { state = ([:], 0) }
            if let old = state.documents.updateValue(Entry(document: document, bytes: bytes), forKey: key) { state.bytes -= old.bytes }
            state.bytes += bytes
        }
    }

    func removeAll() { entries.withLock { $0 = ([:], 0) } }

    /// The stored document of a row holding `database`, `path`, `create_time` and `update_time`; its
    /// fields are read (and parsed) only when this version was not decoded before.
    func document(_ row: Row, _ db: Database) throws -> FirestoreDocument {
        let database: String = row["database"]
        let path: String = row["path"]
        let updateTime: Int64 = row["update_time"]
        if let known = document(database: database, path: path, updateTime: updateTime) { return known }
        guard let text = try String.fetchOne(db, sql: "SELECT fields FROM documents WHERE database = ? AND path = ?", arguments: [database, path]) else {
            throw LocalAPIError.internalError("document \(path) vanished within a read")
        }
        let parts = database.split(separator: "/")
        let name = try DocumentName(project: String(parts[1]), database: String(parts[3]), path: path)
        let document = FirestoreDocument(
            name: name, fields: try FirestoreJSON.fields(try JSONValue(parsing: text)),
            createTime: Timestamp(nanosSinceEpoch: row["create_time"]), updateTime: Timestamp(nanosSinceEpoch: updateTime))
        remember(document, bytes: text.utf8.count)
        return document
    }

    /// The columns `document(_:_:)` needs.
    static let columns = "database, path, create_time, update_time"
}
