import FirestoreModel
import Foundation

/// One SQLite file, opened and brought up to date: the store the local Firestore keeps its documents in,
/// shared with whatever serves beside it (the local cloud keeps its deliveries and pushes there too).
public struct LocalDatabase: Sendable {
    let store: SQLiteStore
    /// The file, and whether it goes away on `close()`.
    public let path: String
    let isTemporary: Bool

    /// Opens (creating if needed) the file at `path`, or a temporary file when `path` is nil, and applies
    /// the `migrations` not applied yet, in order.
    package init(path: String?, migrations: [(identifier: String, apply: (Database) throws -> Void)]) throws {
        self.path = path ?? NSTemporaryDirectory() + "herald-\(UUID().uuidString).sqlite"
        isTemporary = path == nil
        // WAL with synchronous NORMAL survives a crash of the process (not of the machine) without a disk
        // sync per commit.
        do {
            store = try SQLiteStore(path: self.path)
            try store.check()
            try store.migrate(migrations)
        } catch let error as DatabaseError {
            // A file that is not a database, one cut short, or one made by a newer herald: said, with what to do.
            throw DatabaseError(
                code: error.code,
                message:
                    "\(self.path) cannot be used: \(error.message). Move it away (or start with --fresh, or --data ANOTHER_DIR); herald export reads a good one"
            )
        }
    }

    /// Closes the database and removes a temporary one.
    public func close() {
        store.close()
        guard isTemporary else { return }
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    package func write<T: Sendable>(
        _ body: @escaping @Sendable (Database) throws -> T, afterCommit: (@Sendable (T) -> Void)? = nil
    ) async throws(LocalAPIError) -> T {
        do { return try await store.write(body, afterCommit: afterCommit) } catch { throw Self.apiError(error) }
    }

    package func snapshot() async throws(LocalAPIError) -> SQLiteStore.Snapshot {
        do { return try await store.snapshot() } catch { throw Self.apiError(error) }
    }

    package func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(LocalAPIError) -> T {
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
    package var nanosSinceEpoch: Int64 { seconds &* 1_000_000_000 &+ Int64(nanos) }

    package init(nanosSinceEpoch n: Int64) {
        let seconds = n >= 0 ? n / 1_000_000_000 : (n - 999_999_999) / 1_000_000_000
        self.init(seconds: seconds, nanos: Int32(n - seconds * 1_000_000_000))
    }
}
