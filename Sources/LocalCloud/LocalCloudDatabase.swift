import FirestoreModel
import Foundation

/// The local cloud's state in one SQLite file: documents, pending and dead event deliveries,
/// recorded FCM messages and dead tokens, so a restart keeps all of it.
public struct LocalCloudDatabase: Sendable {
    let store: SQLiteStore
    /// The file, and whether it goes away on `close()`.
    public let path: String
    let isTemporary: Bool

    /// Opens (creating if needed) `DIR/herald.sqlite`, or a temporary file when `directory` is nil.
    public init(directory: String?) throws {
        if let directory {
            try PrivateFiles.directory(directory)
            path = (directory as NSString).appendingPathComponent("herald.sqlite")
            isTemporary = false
        } else {
            path = NSTemporaryDirectory() + "herald-\(UUID().uuidString).sqlite"
            isTemporary = true
        }
        // WAL with synchronous NORMAL survives a crash of the process (not of the machine) without a disk
        // sync per commit.
        do {
            store = try SQLiteStore(path: path)
            try store.check()
            try store.migrate(Self.migrations)
        } catch let error as DatabaseError {
            // A file that is not a database, one cut short, or one made by a newer herald: said, with what to do.
            throw DatabaseError(
                code: error.code,
                message: "\(path) cannot be used: \(error.message). Move it away (or start with --fresh, or --data ANOTHER_DIR); herald export reads a good one"
            )
        }
    }

    /// Closes the database and removes a temporary one.
    public func close() {
        store.close()
        guard isTemporary else { return }
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    static var migrations: [(identifier: String, apply: (Database) throws -> Void)] {
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
                            CREATE TABLE deliveries (
                                id INTEGER PRIMARY KEY AUTOINCREMENT,
                                trigger TEXT NOT NULL,
                                event_id TEXT NOT NULL,
                                event_type TEXT NOT NULL,
                                document TEXT NOT NULL,
                                headers TEXT NOT NULL,
                                body BLOB NOT NULL,
                                state TEXT NOT NULL DEFAULT 'pending',
                                attempts INTEGER NOT NULL DEFAULT 0,
                                next_attempt_at REAL NOT NULL,
                                created_at REAL NOT NULL,
                                finished_at REAL,
                                last_error TEXT
                            );
                            CREATE INDEX deliveries_due ON deliveries(state, next_attempt_at);
                            CREATE TABLE fcm_messages (
                                id INTEGER PRIMARY KEY AUTOINCREMENT,
                                project TEXT NOT NULL,
                                name TEXT NOT NULL,
                                token TEXT,
                                topic TEXT,
                                condition TEXT,
                                message TEXT NOT NULL,
                                received_at REAL NOT NULL
                            );
                            CREATE INDEX fcm_messages_by_token ON fcm_messages(token);
                            CREATE TABLE fcm_dead_tokens (token TEXT PRIMARY KEY, since REAL NOT NULL);
                            """)
                }
            ),
            (
                // What the console shows of each event's path: the trace each delivery carries, the trace
                // of the write that caused it, the function's answer, and the writes and pushes made under
                // each trace (the functions send the event's `traceparent` on their calls).
                "v2-event-paths",
                { db in
                    try db.execute(
                        sql: """
                            ALTER TABLE deliveries ADD COLUMN trace_id TEXT;
                            ALTER TABLE deliveries ADD COLUMN source_trace TEXT;
                            ALTER TABLE deliveries ADD COLUMN response TEXT;
                            ALTER TABLE deliveries ADD COLUMN latency_ms REAL;
                            CREATE INDEX deliveries_by_trace ON deliveries(trace_id);
                            CREATE INDEX deliveries_by_source ON deliveries(source_trace);
                            ALTER TABLE fcm_messages ADD COLUMN trace_id TEXT;
                            CREATE INDEX fcm_messages_by_trace ON fcm_messages(trace_id);
                            CREATE TABLE trace_writes (
                                id INTEGER PRIMARY KEY AUTOINCREMENT,
                                trace_id TEXT NOT NULL,
                                document TEXT NOT NULL,
                                kind TEXT NOT NULL,
                                at REAL NOT NULL
                            );
                            CREATE INDEX trace_writes_by_trace ON trace_writes(trace_id);
                            """)
                }
            ),
            (
                // The faults injected into each delivery (duplicates, dropped answers, omitted data), for the console.
                "v3-delivery-faults",
                { db in try db.execute(sql: "ALTER TABLE deliveries ADD COLUMN injected TEXT") }
            ),
            (
                // The spans the functions export over OTLP (TraceReceiver), shown under the event they belong to.
                "v4-spans",
                { db in
                    try db.execute(
                        sql: """
                            CREATE TABLE spans (
                                id INTEGER PRIMARY KEY AUTOINCREMENT,
                                trace_id TEXT NOT NULL,
                                span_id TEXT NOT NULL,
                                parent_span_id TEXT,
                                service TEXT NOT NULL,
                                name TEXT NOT NULL,
                                kind TEXT NOT NULL,
                                start_ns INTEGER NOT NULL,
                                end_ns INTEGER NOT NULL,
                                status TEXT NOT NULL,
                                attributes TEXT NOT NULL
                            );
                            CREATE INDEX spans_by_trace ON spans(trace_id);
                            """)
                }
            ),
            (
                // Each trigger's due deliveries, claimed up to its service's concurrency (EventDelivery.claim).
                "v5-deliveries-by-trigger",
                { db in try db.execute(sql: "CREATE INDEX deliveries_due_by_trigger ON deliveries(state, trigger, next_attempt_at)") }
            ),
        ]
    }

    func write<T: Sendable>(
        _ body: @escaping @Sendable (Database) throws -> T, afterCommit: (@Sendable (T) -> Void)? = nil
    ) async throws(LocalAPIError) -> T {
        do { return try await store.write(body, afterCommit: afterCommit) } catch { throw Self.apiError(error) }
    }

    func snapshot() async throws(LocalAPIError) -> SQLiteStore.Snapshot {
        do { return try await store.snapshot() } catch { throw Self.apiError(error) }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(LocalAPIError) -> T {
        do { return try await store.read(body) } catch { throw Self.apiError(error) }
    }

    static func apiError(_ error: any Error) -> LocalAPIError {
        if let api = error as? LocalAPIError { return api }
        if let db = error as? DatabaseError, db.resultCode == .busy || db.resultCode == .locked {
            return .unavailable("the local database is busy; retry")
        }
        return .internalError("local database: \(error)")
    }
}

extension Timestamp {
    var nanosSinceEpoch: Int64 { seconds &* 1_000_000_000 &+ Int64(nanos) }

    init(nanosSinceEpoch n: Int64) {
        let seconds = n >= 0 ? n / 1_000_000_000 : (n - 999_999_999) / 1_000_000_000
        self.init(seconds: seconds, nanos: Int32(n - seconds * 1_000_000_000))
    }
}
