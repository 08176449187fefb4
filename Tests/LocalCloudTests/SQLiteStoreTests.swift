import Foundation
import Testing

@testable import EmbeddedFirestore
@testable import LocalCloud

/// The local cloud's SQLite store: values as stored, transactions, concurrency, and the databases
/// earlier versions (GRDB) left behind.
@Suite struct SQLiteStoreTests {
    static func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("herald-store-\(UUID().uuidString).sqlite").path
    }

    static func remove(_ path: String) {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    @Test func valuesComeBackAsTheyWereStored() async throws {
        let path = Self.temporaryPath()
        defer { Self.remove(path) }
        let store = try SQLiteStore(path: path)
        defer { store.close() }
        let blob = Data([0, 1, 0, 255])
        try await store.write { db in
            try db.execute(sql: "CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, n TEXT)")
            try db.execute(sql: "INSERT INTO t VALUES (?, ?, ?, ?, ?)", arguments: [Int64.min, -0.5, "héllo 🎉 'quoted' \"x\"", blob, nil])
            try db.execute(sql: "INSERT INTO t VALUES (?, ?, ?, ?, ?)", arguments: [Int64.max, 1e300, "", Data(), "set"])
        }
        let rows = try await store.read { db in try Row.fetchAll(db, sql: "SELECT * FROM t ORDER BY i") }
        #expect(rows.count == 2)
        #expect(rows[0]["i"] as Int64 == .min && rows[0]["r"] as Double == -0.5 && rows[0]["s"] as String == "héllo 🎉 'quoted' \"x\"")
        #expect(rows[0]["b"] as Data == blob && (rows[0]["n"] as String?) == nil)
        #expect(rows[1]["i"] as Int64 == .max && rows[1]["r"] as Double == 1e300 && rows[1]["s"] as String == "" && (rows[1]["n"] as String?) == "set")
        #expect(try await store.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM t WHERE s = ?", arguments: [""]) } == 1)
        #expect(try await store.read { db in try String.fetchAll(db, sql: "SELECT s FROM t ORDER BY i") } == ["héllo 🎉 'quoted' \"x\"", ""])
    }

    @Test func aWriteThatFailsLeavesNothingAndConcurrentWritesAreAllKept() async throws {
        let path = Self.temporaryPath()
        defer { Self.remove(path) }
        let store = try SQLiteStore(path: path)
        defer { store.close() }
        try await store.write { db in
            try db.execute(sql: "CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL); INSERT INTO counter VALUES (1, 0)")
        }
        struct Refused: Error {}
        await #expect(throws: Refused.self) {
            try await store.write { db in
                try db.execute(sql: "UPDATE counter SET n = n + 100")
                throw Refused()
            }
        }
        // Writers and readers at once: every increment lands, every read sees a committed value.
        try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<200 {
                group.addTask {
                    if index % 2 == 0 {
                        try await store.write { db in try db.execute(sql: "UPDATE counter SET n = n + 1") }
                        return -1
                    }
                    return try await store.read { db in try Int.fetchOne(db, sql: "SELECT n FROM counter") ?? -2 }
                }
            }
            for try await seen in group where seen != -1 { #expect((0...100).contains(seen)) }
        }
        #expect(try await store.read { db in try Int.fetchOne(db, sql: "SELECT n FROM counter") } == 100)
        // A syntax error is an error with SQLite's message, not a crash.
        await #expect(throws: DatabaseError.self) { try await store.read { db in try Row.fetchAll(db, sql: "SELEC nothing") } }
    }

    @Test func aSnapshotSeesTheDatabaseAsItWasWhenItBegan() async throws {
        let path = Self.temporaryPath()
        defer { Self.remove(path) }
        let store = try SQLiteStore(path: path)
        defer { store.close() }
        try await store.write { db in try db.execute(sql: "CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1)") }
        let snapshot = try await store.snapshot()
        try await store.write { db in try db.execute(sql: "INSERT INTO t VALUES (2)") }
        #expect(try await snapshot.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM t") } == 1)
        #expect(try await store.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM t") } == 2)
        snapshot.end()
    }

    @Test func aClosedStoreRefusesWorkAndCreatesNoFile() async throws {
        let path = Self.temporaryPath()
        let store = try SQLiteStore(path: path)
        store.close()
        Self.remove(path)
        await #expect(throws: DatabaseError.self) { try await store.read { db in try Int.fetchOne(db, sql: "SELECT 1") } }
        await #expect(throws: DatabaseError.self) { try await store.write { db in try db.execute(sql: "SELECT 1") } }
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    /// `.herald/herald.sqlite` as GRDB created it (its migrations table, v1 applied) opens with its data.
    @Test func aDatabaseGRDBCreatedOpensAsItWas() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-grdb-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = (directory as NSString).appendingPathComponent("herald.sqlite")
        do {
            let old = try Database(path: file, create: true)
            try old.execute(sql: "CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY); INSERT INTO grdb_migrations VALUES ('v1')")
            // GRDB's "v1" made the documents' tables and the cloud's: now Firestore's "v1" and "v1-cloud".
            try LocalCloudDatabase.migrations[0].apply(old)
            try LocalCloudDatabase.migrations[1].apply(old)
            try old.execute(
                sql: "INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?, ?)",
                arguments: ["projects/p/databases/(default)", "users/alice", "users", "users", #"{"n":{"integerValue":"1"}}"#, 1, 2])
            old.close()
        }
        let database = try LocalCloudDatabase.open(directory: directory)
        defer { database.close() }
        let paths = try await database.read { db in try String.fetchAll(db, sql: "SELECT path FROM documents") }
        #expect(paths == ["users/alice"])
        // v1 is not applied again (it would fail: its tables exist); the later ones are, once ("v1-cloud"
        // finds its tables there).
        let applied = try await database.read { db in try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier") }
        #expect(applied == LocalCloudDatabase.migrations.map(\.identifier).sorted())
        #expect(try await database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM deliveries WHERE trace_id IS NULL") } == 0)
    }
}
