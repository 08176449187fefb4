import Dispatch
import Synchronization

/// A database file in WAL mode: one writer connection (each write a transaction that takes the write
/// lock at once) and up to four reader connections, each read a transaction over one snapshot. Work
/// runs on dispatch threads, never on Swift's cooperative pool, which SQLite's waits would stall.
package final class SQLiteStore: Sendable {
    package let path: String
    private let writer: Database
    private let writerQueue = DispatchQueue(label: "herald.sqlite.writer")
    private let idleReaders = Mutex<[Database]>([])
    private let closed = Atomic<Bool>(false)
    package static let maximumIdleReaders = 4

    package init(path: String) throws {
        self.path = path
        writer = try Database(path: path, create: true)
        try writer.execute(sql: "PRAGMA journal_mode = WAL")
    }

    package static let closedError = DatabaseError(code: 21, message: "the database is closed")

    /// `afterCommit` runs on the writer's queue once the transaction is committed, so what it sees
    /// of successive writes comes in their commit order.
    package func write<T: Sendable>(
        _ body: @escaping @Sendable (Database) throws -> T, afterCommit: (@Sendable (T) -> Void)? = nil
    ) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            writerQueue.async { [self] in
                continuation.resume(
                    with: Result {
                        guard !closed.load(ordering: .relaxed) else { throw Self.closedError }
                        let result = try writer.inTransaction(immediate: true, body)
                        afterCommit?(result)
                        return result
                    })
            }
        }
    }

    package func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { [self] in
                continuation.resume(
                    with: Result {
                        guard !closed.load(ordering: .relaxed) else { throw Self.closedError }
                        let reader = try idleReaders.withLock { $0.popLast() } ?? Database(path: path, create: false)
                        defer { idleReaders.withLock { if $0.count < Self.maximumIdleReaders { $0.append(reader) } } }
                        return try reader.inTransaction(immediate: false, body)
                    })
            }
        }
    }

    /// A read transaction kept open across many reads (an export of a running instance): every read
    /// sees the database as it was when the snapshot began, whatever is written meanwhile.
    package final class Snapshot: Sendable {
        private let connection: Database
        private let queue = DispatchQueue(label: "herald.sqlite.snapshot")

        fileprivate init(_ connection: Database) { self.connection = connection }

        package func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
            try await withCheckedThrowingContinuation { continuation in
                queue.async { [connection] in continuation.resume(with: Result { try body(connection) }) }
            }
        }

        package func end() {
            queue.sync {
                try? connection.execute(sql: "COMMIT")
                connection.close()
            }
        }
    }

    package func snapshot() async throws -> Snapshot {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { [self] in
                continuation.resume(
                    with: Result {
                        guard !closed.load(ordering: .relaxed) else { throw Self.closedError }
                        let connection = try Database(path: path, create: false)
                        try connection.execute(sql: "BEGIN")
                        // A WAL read transaction takes its snapshot at its first read.
                        _ = try Int.fetchOne(connection, sql: "SELECT COUNT(*) FROM sqlite_master")
                        return Snapshot(connection)
                    })
            }
        }
    }

    /// Refuses a file that is not a sound SQLite database (random bytes, one cut short), before anything
    /// reads or writes it: SQLite's quick check of every page, its first finding as the reason.
    package func check() throws {
        try writerQueue.sync {
            let verdict = try String.fetchOne(writer, sql: "PRAGMA quick_check(1)") ?? "no answer"
            guard verdict == "ok" else { throw DatabaseError(code: 11, message: "SQLite's check of the file found: \(verdict.prefix(300))") }
        }
    }

    /// Runs each migration not applied yet, in order, each in its own transaction (before the store is
    /// used). Applied migrations are kept in `grdb_migrations`, the table GRDB kept them in, so a
    /// database GRDB created opens as it was.
    package func migrate(_ migrations: [(identifier: String, apply: (Database) throws -> Void)]) throws {
        try writerQueue.sync {
            try writer.execute(sql: "CREATE TABLE IF NOT EXISTS grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY)")
            // A migration this version does not know was applied by a newer herald: its tables may mean
            // something else now, so the file is not touched.
            let known = Set(migrations.map(\.identifier))
            let applied = try String.fetchAll(writer, sql: "SELECT identifier FROM grdb_migrations")
            if let newer = applied.first(where: { !known.contains($0) }) {
                throw DatabaseError(
                    code: 1,
                    message:
                        "it was written by a newer herald (its schema has migration \"\(newer.prefix(60))\", this herald knows \(known.sorted().joined(separator: ", ")))"
                )
            }
            for (identifier, apply) in migrations {
                try writer.inTransaction(immediate: true) { db in
                    guard try String.fetchOne(db, sql: "SELECT identifier FROM grdb_migrations WHERE identifier = ?", arguments: [identifier]) == nil
                    else { return }
                    try apply(db)
                    try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES (?)", arguments: [identifier])
                }
            }
        }
    }

    /// Closes the connections once what is running is done; later reads and writes fail.
    package func close() {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        writerQueue.sync { writer.close() }
        for reader in idleReaders.withLock({ readers in
            defer { readers = [] }
            return readers
        }) { reader.close() }
    }
}
