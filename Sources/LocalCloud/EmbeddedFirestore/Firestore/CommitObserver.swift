import FirestoreModel

/// What the server around the local Firestore does with each commit: `record` runs inside the commit's
/// own SQLite transaction, after its documents are written (the local cloud writes its triggers' events
/// there, so no change is committed without them, and none is recorded for a commit that fails);
/// `committed` runs once the commit is over.
package struct CommitObserver: Sendable {
    package var record:
        @Sendable (_ changes: [LocalFirestore.Change], _ commitTime: Timestamp, _ trace: String?, _ caller: String?, _ db: Database) throws -> Void
    package var committed: @Sendable () -> Void

    package init(
        record: @escaping @Sendable ([LocalFirestore.Change], Timestamp, String?, String?, Database) throws -> Void,
        committed: @escaping @Sendable () -> Void
    ) {
        self.record = record
        self.committed = committed
    }

    /// A Firestore alone: nothing beside the documents.
    package static let none = CommitObserver(record: { _, _, _, _, _ in }, committed: {})
}

extension LocalFirestore {
    /// The tables the documents live in (`documents`, and `commit_clock` for strictly increasing commit times).
    package static var migrations: [(identifier: String, apply: (Database) throws -> Void)] {
        [
            (
                "v1",
                { db in
                    try db.execute(
                        sql: """
                            CREATE TABLE documents (
                                database TEXT NOT NULL,
                                path TEXT NOT NULL,
                                collection TEXT NOT NULL,
                                collection_id TEXT NOT NULL,
                                fields TEXT NOT NULL,
                                create_time INTEGER NOT NULL,
                                update_time INTEGER NOT NULL,
                                PRIMARY KEY (database, path)
                            ) WITHOUT ROWID;
                            CREATE INDEX documents_by_collection ON documents(database, collection);
                            CREATE INDEX documents_by_collection_id ON documents(database, collection_id);
                            CREATE TABLE commit_clock (id INTEGER PRIMARY KEY CHECK (id = 1), last_nanos INTEGER NOT NULL);
                            """)
                }
            )
        ]
    }
}

/// Who made the request a commit belongs to, as the server around the store describes its caller
/// (a signed-in user: `ann@example.com (uid …)`), set for the request's task: what it wrote is
/// recorded with the caller.
public enum WriteOrigin {
    @TaskLocal public static var caller: String?
}
