import Foundation
import VaporCSQLite

/// One SQLite connection, to the amalgamation the package compiles itself (sqlite-nio vendors it), so
/// nothing needs the system's SQLite or its headers. Not thread-safe: `SQLiteStore` hands each
/// connection to one thread at a time.
package final class Database: @unchecked Sendable {
    private let handle: OpaquePointer
    private var isClosed = false
    /// Statements prepared before, by their SQL: `herald dev` runs the same few statements for every
    /// event, and parsing them again was a tenth of its time.
    private var prepared: [String: OpaquePointer] = [:]
    package static let maximumPreparedStatements = 128

    /// Opens `path`, creating the file only when `create` is true (a reader never does).
    package init(path: String, create: Bool) throws(DatabaseError) {
        var opened: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX
        let code = sqlite_nio_sqlite3_open_v2(path, &opened, flags, nil)
        guard let opened else { throw DatabaseError(code: code, message: "cannot open \(path)") }
        guard code == SQLITE_OK else {
            let error = DatabaseError(opened, code: code)
            sqlite_nio_sqlite3_close_v2(opened)
            throw error
        }
        handle = opened
        sqlite_nio_sqlite3_busy_timeout(handle, 10_000)
        try execute(sql: "PRAGMA synchronous = NORMAL")
    }

    deinit { close() }

    package func close() {
        guard !isClosed else { return }
        isClosed = true
        for statement in prepared.values { sqlite_nio_sqlite3_finalize(statement) }
        prepared = [:]
        sqlite_nio_sqlite3_close_v2(handle)
    }

    /// Runs SQL: one statement with `arguments`, or a script of several without.
    package func execute(sql: String, arguments: StatementArguments = []) throws(DatabaseError) {
        if arguments.values.isEmpty, sql.utf8.contains(UInt8(ascii: ";")) {
            let code = sqlite_nio_sqlite3_exec(handle, sql, nil, nil, nil)
            guard code == SQLITE_OK else { throw DatabaseError(handle, code: code) }
            return
        }
        try withStatement(sql, arguments) { statement throws(DatabaseError) in
            while try step(statement) {}
        }
    }

    package var lastInsertedRowID: Int64 { sqlite_nio_sqlite3_last_insert_rowid(handle) }
    /// Rows the last statement changed.
    package var changes: Int { Int(sqlite_nio_sqlite3_changes(handle)) }

    package enum TransactionCompletion { case commit, rollback }

    /// Runs `body` in a savepoint: kept on `.commit`, undone on `.rollback` or a throw.
    package func inSavepoint(_ body: () throws -> TransactionCompletion) throws {
        try execute(sql: "SAVEPOINT herald")
        do {
            switch try body() {
            case .commit: try execute(sql: "RELEASE SAVEPOINT herald")
            case .rollback: try execute(sql: "ROLLBACK TO SAVEPOINT herald; RELEASE SAVEPOINT herald")
            }
        } catch {
            try? execute(sql: "ROLLBACK TO SAVEPOINT herald; RELEASE SAVEPOINT herald")
            throw error
        }
    }

    /// Runs `body` in a transaction (`IMMEDIATE` takes the write lock at once), rolled back if it throws.
    package func inTransaction<T>(immediate: Bool, _ body: (Database) throws -> T) throws -> T {
        try execute(sql: immediate ? "BEGIN IMMEDIATE" : "BEGIN")
        do {
            let result = try body(self)
            try execute(sql: "COMMIT")
            return result
        } catch {
            try? execute(sql: "ROLLBACK")
            throw error
        }
    }

    package func rows(_ sql: String, _ arguments: StatementArguments, limit: Int = .max) throws(DatabaseError) -> [Row] {
        try withStatement(sql, arguments) { statement throws(DatabaseError) in
            var rows: [Row] = []
            let count = sqlite_nio_sqlite3_column_count(statement)
            let names = (0..<count).map { String(cString: sqlite_nio_sqlite3_column_name(statement, $0)) }
            while rows.count < limit, try step(statement) {
                rows.append(Row(columns: names, values: (0..<count).map { value(statement, $0) }))
            }
            return rows
        }
    }

    private func withStatement<T>(_ sql: String, _ arguments: StatementArguments, _ body: (OpaquePointer) throws(DatabaseError) -> T) throws(DatabaseError)
        -> T
    {
        let statement: OpaquePointer
        if let known = prepared[sql] {
            statement = known
        } else {
            var made: OpaquePointer?
            let code = sqlite_nio_sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &made, nil)
            guard code == SQLITE_OK, let made else { throw DatabaseError(handle, code: code, sql: sql) }
            if prepared.count >= Self.maximumPreparedStatements {
                for old in prepared.values { sqlite_nio_sqlite3_finalize(old) }
                prepared = [:]
            }
            prepared[sql] = made
            statement = made
        }
        // Ready for the next use whatever happens (a reset statement holds no read lock).
        defer {
            sqlite_nio_sqlite3_reset(statement)
            sqlite_nio_sqlite3_clear_bindings(statement)
        }
        for (index, value) in arguments.values.enumerated() { try bind(value, at: Int32(index + 1), in: statement) }
        return try body(statement)
    }

    private func step(_ statement: OpaquePointer) throws(DatabaseError) -> Bool {
        switch sqlite_nio_sqlite3_step(statement) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let code: throw DatabaseError(handle, code: code)
        }
    }

    /// SQLite copies what it is given (`SQLITE_TRANSIENT`).
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    private func bind(_ value: DatabaseValue, at index: Int32, in statement: OpaquePointer) throws(DatabaseError) {
        let code: Int32
        switch value {
        case .null: code = sqlite_nio_sqlite3_bind_null(statement, index)
        case .integer(let integer): code = sqlite_nio_sqlite3_bind_int64(statement, index, integer)
        case .real(let real): code = sqlite_nio_sqlite3_bind_double(statement, index, real)
        case .text(let text): code = sqlite_nio_sqlite3_bind_text(statement, index, text, -1, Self.transient)
        case .blob(let bytes):
            code = bytes.withUnsafeBytes { sqlite_nio_sqlite3_bind_blob(statement, index, $0.baseAddress, Int32($0.count), Self.transient) }
        }
        guard code == SQLITE_OK else { throw DatabaseError(handle, code: code) }
    }

    private func value(_ statement: OpaquePointer, _ column: Int32) -> DatabaseValue {
        switch sqlite_nio_sqlite3_column_type(statement, column) {
        case SQLITE_INTEGER: return .integer(sqlite_nio_sqlite3_column_int64(statement, column))
        case SQLITE_FLOAT: return .real(sqlite_nio_sqlite3_column_double(statement, column))
        case SQLITE_TEXT: return .text(String(cString: sqlite_nio_sqlite3_column_text(statement, column)))
        case SQLITE_BLOB:
            let count = Int(sqlite_nio_sqlite3_column_bytes(statement, column))
            guard count > 0, let bytes = sqlite_nio_sqlite3_column_blob(statement, column) else { return .blob(Data()) }
            return .blob(Data(bytes: bytes, count: count))
        default: return .null
        }
    }
}

/// A failure SQLite reported, with its result code (busy and locked are told apart: those are retried).
package struct DatabaseError: Error, CustomStringConvertible {
    package struct ResultCode: Equatable {
        package let primary: Int32
        package static let busy = ResultCode(primary: VaporCSQLite.SQLITE_BUSY)
        package static let locked = ResultCode(primary: VaporCSQLite.SQLITE_LOCKED)
    }

    package let code: Int32
    package let message: String
    package var resultCode: ResultCode { ResultCode(primary: code & 0xff) }
    package var description: String { "SQLite error \(code): \(message)" }

    package init(code: Int32, message: String) {
        self.code = code
        self.message = message
    }

    package init(_ handle: OpaquePointer, code: Int32, sql: String? = nil) {
        self.code = code
        let text = String(cString: sqlite_nio_sqlite3_errmsg(handle))
        self.message = sql.map { "\(text) in \($0.prefix(200))" } ?? text
    }
}

package enum DatabaseValue: Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)
}

/// A result row: its values by column name.
package struct Row: Sendable {
    package let columns: [String]
    package let values: [DatabaseValue]

    package subscript<Value: DatabaseValueConvertible>(_ column: String) -> Value {
        let value = columns.firstIndex(of: column).map { values[$0] } ?? .null
        guard let converted = Value.fromDatabaseValue(value) else {
            preconditionFailure("column \(column) holds \(value), not \(Value.self)")
        }
        return converted
    }

    package static func fetchAll(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> [Row] { try db.rows(sql, arguments) }

    package static func fetchOne(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> Row? {
        try db.rows(sql, arguments, limit: 1).first
    }
}

/// What statement arguments and column values convert from and to.
package protocol DatabaseValueConvertible: Sendable {
    var databaseValue: DatabaseValue { get }
    static func fromDatabaseValue(_ value: DatabaseValue) -> Self?
}

extension DatabaseValueConvertible {
    /// The first column of the first row.
    package static func fetchOne(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> Self? {
        try db.rows(sql, arguments, limit: 1).first?.values.first.flatMap(Self.fromDatabaseValue)
    }

    /// The first column of every row.
    package static func fetchAll(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> [Self] {
        try db.rows(sql, arguments).compactMap { $0.values.first.flatMap(Self.fromDatabaseValue) }
    }
}

extension Int64: DatabaseValueConvertible {
    package var databaseValue: DatabaseValue { .integer(self) }
    package static func fromDatabaseValue(_ value: DatabaseValue) -> Int64? {
        switch value {
        case .integer(let integer): integer
        case .real(let real): Int64(exactly: real)
        default: nil
        }
    }
}

extension Int: DatabaseValueConvertible {
    package var databaseValue: DatabaseValue { .integer(Int64(self)) }
    package static func fromDatabaseValue(_ value: DatabaseValue) -> Int? { Int64.fromDatabaseValue(value).flatMap { Int(exactly: $0) } }
}

extension Bool: DatabaseValueConvertible {
    package var databaseValue: DatabaseValue { .integer(self ? 1 : 0) }
    package static func fromDatabaseValue(_ value: DatabaseValue) -> Bool? { Int64.fromDatabaseValue(value).map { $0 != 0 } }
}

extension Double: DatabaseValueConvertible {
    package var databaseValue: DatabaseValue { .real(self) }
    package static func fromDatabaseValue(_ value: DatabaseValue) -> Double? {
        switch value {
        case .real(let real): real
        case .integer(let integer): Double(integer)
        default: nil
        }
    }
}

extension String: DatabaseValueConvertible {
    package var databaseValue: DatabaseValue { .text(self) }
    package static func fromDatabaseValue(_ value: DatabaseValue) -> String? {
        switch value {
        case .text(let text): text
        case .blob(let data): String(data: data, encoding: .utf8)
        default: nil
        }
    }
}

extension Data: DatabaseValueConvertible {
    package var databaseValue: DatabaseValue { .blob(self) }
    package static func fromDatabaseValue(_ value: DatabaseValue) -> Data? {
        switch value {
        case .blob(let data): data
        case .text(let text): Data(text.utf8)
        default: nil
        }
    }
}

extension Optional: DatabaseValueConvertible where Wrapped: DatabaseValueConvertible {
    package var databaseValue: DatabaseValue { self?.databaseValue ?? .null }
    package static func fromDatabaseValue(_ value: DatabaseValue) -> Wrapped?? {
        if case .null = value { return .some(nil) }
        return Wrapped.fromDatabaseValue(value).map { .some($0) }
    }
}

/// The values bound to a statement's `?`s, in order.
package struct StatementArguments: ExpressibleByArrayLiteral, Sendable {
    package var values: [DatabaseValue]

    package init(arrayLiteral elements: (any DatabaseValueConvertible)?...) { values = elements.map { $0?.databaseValue ?? .null } }

    package init(_ elements: some Sequence<some DatabaseValueConvertible>) { values = elements.map(\.databaseValue) }

    package static func += (arguments: inout StatementArguments, more: StatementArguments) { arguments.values += more.values }

    package static func + (arguments: StatementArguments, more: StatementArguments) -> StatementArguments {
        var all = arguments
        all += more
        return all
    }
}
