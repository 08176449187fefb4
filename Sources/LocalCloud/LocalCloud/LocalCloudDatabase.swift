import EmbeddedFirestore
import FirestoreModel
import Foundation

/// The local cloud's state in one SQLite file: the local Firestore's documents beside pending and dead
/// event deliveries, recorded FCM messages and dead tokens, so a restart keeps all of it.
enum LocalCloudDatabase {
    /// Opens (creating if needed) `DIR/herald.sqlite`, or a temporary file when `directory` is nil.
    static func open(directory: String?) throws -> LocalDatabase {
        var path: String?
        if let directory {
            try PrivateFiles.directory(directory)
            path = (directory as NSString).appendingPathComponent("herald.sqlite")
        }
        return try LocalDatabase(path: path, migrations: migrations)
    }

    /// The local Firestore's, then the cloud's own. Until the two were modules, "v1" made the tables of
    /// both: "v1-cloud" makes the cloud's only where they are missing, so a file from then opens as it was.
    static var migrations: [(identifier: String, apply: (Database) throws -> Void)] {
        LocalFirestore.migrations + [
            (
                "v1-cloud",
                { db in
                    try db.execute(
                        sql: """
                            CREATE TABLE IF NOT EXISTS deliveries (
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
                            CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries(state, next_attempt_at);
                            CREATE TABLE IF NOT EXISTS fcm_messages (
                                id INTEGER PRIMARY KEY AUTOINCREMENT,
                                project TEXT NOT NULL,
                                name TEXT NOT NULL,
                                token TEXT,
                                topic TEXT,
                                condition TEXT,
                                message TEXT NOT NULL,
                                received_at REAL NOT NULL
                            );
                            CREATE INDEX IF NOT EXISTS fcm_messages_by_token ON fcm_messages(token);
                            CREATE TABLE IF NOT EXISTS fcm_dead_tokens (token TEXT PRIMARY KEY, since REAL NOT NULL);
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
            // What the Expo and APNs stand-ins took, and the tokens marked dead there.
            PushStandInRecords.migration,
            // Firebase Auth's users, refresh tokens and pending codes.
            AuthStore.migration,
            // Who wrote the change each event is of (a signed-in user), as the console and the log name them.
            ("v8-writers", { db in try db.execute(sql: "ALTER TABLE deliveries ADD COLUMN writer TEXT") }),
        ]
    }
}
