import FirestoreModel
import Foundation
import Synchronization
import WireFormats

/// Firestore's document semantics over SQLite: reads, atomic commits with preconditions and
/// transforms, optimistic transactions, queries. Every commit's changes go to its `CommitObserver` in
/// the same SQLite transaction (the local cloud writes its triggers' events there), so no change is
/// ever committed without what the server records of it.
public final class LocalFirestore: Sendable {
    public struct CommitResult: Sendable {
        public var commitTime: Timestamp
        public var writeResults: [(updateTime: Timestamp?, transformResults: [FirestoreValue])]
        /// The documents the commit changed, for listeners.
        var changes: [Change] = []
    }

    /// A document before and after one commit.
    public struct Change: Sendable {
        public var name: DocumentName
        public var before: FirestoreDocument?
        public var after: FirestoreDocument?

        public init(name: DocumentName, before: FirestoreDocument?, after: FirestoreDocument?) {
            self.name = name
            self.before = before
            self.after = after
        }
    }

    struct Transaction {
        var readOnly: Bool
        /// Each document read in the transaction and its update time then (nil: missing).
        var reads: [DocumentName: Int64?] = [:]
    }

    let database: LocalDatabase
    let observer: CommitObserver
    /// Every commit's changes, in commit order, for real-time listeners.
    public let changes = ChangeFeed()
    let transactions = Mutex<[String: Transaction]>([:])
    let decoded = DecodedDocuments()
    public static let maximumWrites = 500
    public static let maximumDocumentBytes = DocumentSize.maximumBytes

    /// Every document's writes, measured (and admitted at Firestore's sustained rate when asked).
    public let writeRates: DocumentWriteRates
    /// What Firestore would bill, by who asked.
    public let billed = BilledOperations()
    /// Who wrote, from the trace of the event whose function wrote (else a client: "app").
    let writerOfTrace: @Sendable (String) -> String?

    package init(
        database: LocalDatabase, observer: CommitObserver = .none, writeRates: DocumentWriteRates,
        writerOfTrace: @escaping @Sendable (String) -> String? = { _ in nil }
    ) {
        self.database = database
        self.observer = observer
        self.writeRates = writeRates
        self.writerOfTrace = writerOfTrace
    }

    package func writer(_ trace: String?) -> String { trace.flatMap(writerOfTrace) ?? "app" }

    // MARK: Reads

    public func get(_ names: [DocumentName], transaction: String? = nil) async throws(LocalAPIError) -> [DocumentName: FirestoreDocument] {
        try checkTransaction(transaction, writing: false)
        let decoded = self.decoded
        let found = try await database.read { db in try Self.load(names, db, decoded: decoded) }
        record(names, found: found, in: transaction)
        return found
    }

    /// Documents in one collection (`parent` + `collectionID`), in name order.
    public func list(parent: String, database databaseName: String, collectionID: String) async throws(LocalAPIError) -> [FirestoreDocument] {
        let collection = parent.isEmpty ? collectionID : "\(parent)/\(collectionID)"
        let decoded = self.decoded
        return try await database.read { db in
            try Row.fetchAll(
                db, sql: "SELECT \(DecodedDocuments.columns) FROM documents WHERE database = ? AND collection = ?", arguments: [databaseName, collection]
            ).map { try decoded.document($0, db) }
        }.sorted { ValueOrder.referencePaths($0.name.path, $1.name.path) < 0 }
    }

    /// The ids of the collections directly under `parent` (a document path, or "" for the root).
    public func collectionIDs(parent: String, database databaseName: String) async throws(LocalAPIError) -> [String] {
        let depth = parent.isEmpty ? 0 : parent.split(separator: "/").count
        let prefix = parent.isEmpty ? "" : parent + "/"
        let paths = try await database.read { db in
            try String.fetchAll(
                db, sql: "SELECT DISTINCT collection FROM documents WHERE database = ? AND collection LIKE ? ESCAPE '\\'",
                arguments: [databaseName, Self.likePrefix(prefix) + "%"])
        }
        let ids = Set(
            paths.compactMap { path -> String? in
                let segments = path.split(separator: "/")
                return segments.count > depth ? String(segments[depth]) : nil
            })
        return ids.sorted(by: ValueOrder.utf8Less)
    }

    public func runQuery(_ query: StructuredQuery, parent: String, database databaseName: String, transaction: String? = nil) async throws(LocalAPIError)
        -> [FirestoreDocument]
    {
        try checkTransaction(transaction, writing: false)
        let decoded = self.decoded
        // Documents that cannot match are left out by their stored text where the filter says what it must hold.
        let (textFilter, needles) = Self.storedTextFilter(query.filter)
        let candidates: [FirestoreDocument] = try await database.read { db in
            let rows: [Row]
            if query.allDescendants {
                let prefix = parent.isEmpty ? "" : parent + "/"
                rows = try Row.fetchAll(
                    db,
                    sql: "SELECT \(DecodedDocuments.columns) FROM documents WHERE database = ? AND collection_id = ? AND path LIKE ? ESCAPE '\\'\(textFilter)",
                    arguments: [databaseName, query.collectionID, Self.likePrefix(prefix) + "%"] + StatementArguments(needles))
            } else {
                let collection = parent.isEmpty ? query.collectionID : "\(parent)/\(query.collectionID)"
                rows = try Row.fetchAll(
                    db, sql: "SELECT \(DecodedDocuments.columns) FROM documents WHERE database = ? AND collection = ?\(textFilter)",
                    arguments: [databaseName, collection] + StatementArguments(needles))
            }
            return try rows.map { try decoded.document($0, db) }
        }
        let result = try QueryEvaluation.run(query, over: candidates)
        if let transaction {
            transactions.withLock { open in
                for d in result { open[transaction]?.reads[d.name] = d.updateTime?.nanosSinceEpoch }
            }
        }
        return result
    }

    // MARK: Transactions

    public func beginTransaction(readOnly: Bool) -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in bytes.indices { bytes[i] = UInt8.random(in: 0...255) }
        let id = Data(bytes).base64EncodedString()
        transactions.withLock { $0[id] = Transaction(readOnly: readOnly) }
        return id
    }

    public func rollback(_ id: String) throws(LocalAPIError) {
        let removed = transactions.withLock { $0.removeValue(forKey: id) }
        guard removed != nil else { throw Self.unknownTransaction(id) }
    }

    func checkTransaction(_ id: String?, writing: Bool) throws(LocalAPIError) {
        guard let id else { return }
        let state = transactions.withLock { $0[id] }
        guard let state else { throw Self.unknownTransaction(id) }
        if writing && state.readOnly { throw .invalidArgument("Cannot modify entities in a read-only transaction.") }
    }

    func record(_ names: [DocumentName], found: [DocumentName: FirestoreDocument], in transaction: String?) {
        guard let transaction else { return }
        transactions.withLock { open in
            for name in names { open[transaction]?.reads[name] = found[name]?.updateTime?.nanosSinceEpoch }
        }
    }

    static func unknownTransaction(_ id: String) -> LocalAPIError {
        .invalidArgument("Transaction \(id.prefix(40)) is not open: it was committed, rolled back, or never begun.")
    }

    // MARK: Commit

    /// - trace: the trace id of the event whose function made these writes (its `traceparent`), if any.
    public func commit(_ writes: [Write], databaseName: String, transaction: String? = nil, trace: String? = nil) async throws(LocalAPIError)
        -> CommitResult
    {
        guard writes.count <= Self.maximumWrites else {
            throw .invalidArgument("maximum \(Self.maximumWrites) writes allowed per request")
        }
        for write in writes where write.document.databaseName != databaseName {
            throw .invalidArgument("write to \(write.document.resourceName) is not in \(databaseName)")
        }
        try WriteApplication.checkCombination(writes)
        // Names first, as Firestore checks a request before any document.
        for write in writes { try WriteApplication.checkNames(write) }
        var transactionReads: [DocumentName: Int64?] = [:]
        if let transaction {
            try checkTransaction(transaction, writing: !writes.isEmpty)
            transactionReads = transactions.withLock { $0.removeValue(forKey: transaction)?.reads } ?? [:]
        }
        let paths = writes.map(\.document.path)
        try await writeRates.admit(paths)
        let observer = self.observer
        // The caller, read here: the database's writer thread does not see this task's locals.
        let caller = WriteOrigin.caller
        let reads = transactionReads
        defer { observer.committed() }
        let changes = self.changes
        let result: CommitResult
        do {
            result = try await database.write(
                { db in try Self.apply(writes, checking: reads, observer: observer, trace: trace, caller: caller, db) },
                afterCommit: { result in changes.publish(ChangeFeed.Commit(time: result.commitTime, changes: result.changes)) })
        } catch {
            writeRates.refund(paths)
            throw error
        }
        let requester = writer(trace)
        writeRates.record(paths, writer: requester)
        billed.applied(writes, by: requester)
        return result
    }

    /// `batchWrite`: each write applied on its own, in one SQLite transaction with a savepoint per
    /// write (one disk sync for the whole batch, not one per write).
    public func applyEach(_ writes: [Write], databaseName: String, trace: String? = nil) async throws(LocalAPIError) -> [Result<
        CommitResult, LocalAPIError
    >] {
        for write in writes where write.document.databaseName != databaseName {
            throw .invalidArgument("write to \(write.document.resourceName) is not in \(databaseName)")
        }
        try await writeRates.admit(writes.map(\.document.path))
        let observer = self.observer
        let changes = self.changes
        let caller = WriteOrigin.caller
        defer { observer.committed() }
        let outcomes = try await database.write(
            { db in
                var outcomes: [Result<CommitResult, LocalAPIError>] = []
                for write in writes {
                    var outcome: Result<CommitResult, LocalAPIError> = .failure(.internalError("not applied"))
                    try db.inSavepoint {
                        do {
                            outcome = .success(try Self.apply([write], checking: [:], observer: observer, trace: trace, caller: caller, db))
                            return .commit
                        } catch let error as LocalAPIError {
                            outcome = .failure(error)
                            return .rollback
                        }
                    }
                    outcomes.append(outcome)
                }
                return outcomes
            },
            afterCommit: { outcomes in
                for case .success(let result) in outcomes { changes.publish(ChangeFeed.Commit(time: result.commitTime, changes: result.changes)) }
            })
        // Only the writes applied count toward a document's rate (and the writes billed).
        let applied = zip(writes, outcomes).compactMap { write, outcome in (try? outcome.get()).map { _ in write } }
        writeRates.refund(zip(writes, outcomes).compactMap { write, outcome in (try? outcome.get()) == nil ? write.document.path : nil })
        let requester = writer(trace)
        writeRates.record(applied.map(\.document.path), writer: requester)
        billed.applied(applied, by: requester)
        return outcomes
    }

    /// Applies `writes` atomically inside the caller's SQLite transaction and hands their changes to `observer`.
    static func apply(
        _ writes: [Write], checking reads: [DocumentName: Int64?], observer: CommitObserver, trace: String? = nil, caller: String? = nil,
        _ db: Database
    ) throws -> CommitResult {
        let commitTime = try nextCommitTime(db)
        let names = Array(Set(writes.map(\.document)).union(reads.keys))
        let before = try load(names, db)
        for (name, version) in reads where before[name]?.updateTime?.nanosSinceEpoch != version {
            throw LocalAPIError.aborted("Transaction aborted: \(name.path) changed after the transaction read it; retry the transaction.")
        }
        var current = before
        var results: CommitResult = .init(commitTime: commitTime, writeResults: [])
        var written: Set<DocumentName> = []
        for write in writes {
            let outcome = try WriteApplication.apply(
                write, to: current[write.document], isFirst: written.insert(write.document).inserted, commitTime: commitTime)
            if let document = outcome.document {
                guard DocumentSize.of(document) <= maximumDocumentBytes else {
                    throw LocalAPIError.invalidArgument(
                        "Document \(write.document.path) cannot be written because its size (\(DocumentSize.of(document)) bytes) exceeds the maximum allowed size of 1,048,576 bytes."
                    )
                }
            }
            current[write.document] = outcome.document
            // A delete's result has no update time (WriteResult.update_time: "not set after a delete"), as Google's emulator answers.
            let updateTime: Timestamp? = if case .delete = write.operation { nil } else { outcome.document?.updateTime }
            results.writeResults.append((updateTime, outcome.transformResults))
        }
        var changes: [Change] = []
        for name in Set(writes.map(\.document)).sorted() {
            let (old, new) = (before[name], current[name])
            guard old != new else { continue }
            changes.append(Change(name: name, before: old, after: new))
            if let new {
                try store(new, db)
            } else {
                try db.execute(sql: "DELETE FROM documents WHERE database = ? AND path = ?", arguments: [name.databaseName, name.path])
            }
        }
        try observer.record(changes, commitTime, trace, caller, db)
        results.changes = changes
        return results
    }

    /// Strictly increasing commit times, in microseconds as Firestore's are.
    static func nextCommitTime(_ db: Database) throws -> Timestamp {
        let last = try Int64.fetchOne(db, sql: "SELECT last_nanos FROM commit_clock WHERE id = 1") ?? 0
        let now = Timestamp.now().nanosSinceEpoch
        let next = max(now, last + 1000)
        try db.execute(
            sql: "INSERT INTO commit_clock (id, last_nanos) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET last_nanos = excluded.last_nanos", arguments: [next])
        return Timestamp(nanosSinceEpoch: next)
    }

    // MARK: Rows

    /// - decoded: documents decoded before, for a reader's snapshot (the writer's own, uncommitted
    ///   versions are never remembered).
    static func load(_ names: [DocumentName], _ db: Database, decoded: DecodedDocuments? = nil) throws -> [DocumentName: FirestoreDocument] {
        var found: [DocumentName: FirestoreDocument] = [:]
        for name in Set(names) {
            if let decoded {
                if let row = try Row.fetchOne(
                    db, sql: "SELECT \(DecodedDocuments.columns) FROM documents WHERE database = ? AND path = ?", arguments: [name.databaseName, name.path])
                {
                    found[name] = try decoded.document(row, db)
                }
            } else if let row = try Row.fetchOne(db, sql: "SELECT * FROM documents WHERE database = ? AND path = ?", arguments: [name.databaseName, name.path])
            {
                found[name] = try document(row)
            }
        }
        return found
    }

    static func store(_ document: FirestoreDocument, _ db: Database) throws {
        let name = document.name
        let collection = name.segments.dropLast().joined(separator: "/")
        try db.execute(
            sql: """
                INSERT INTO documents (database, path, collection, collection_id, fields, create_time, update_time) VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(database, path) DO UPDATE SET fields = excluded.fields, create_time = excluded.create_time, update_time = excluded.update_time
                """,
            arguments: [
                name.databaseName, name.path, collection, name.collectionID, FirestoreJSON.json(document.fields).serialized(),
                document.createTime?.nanosSinceEpoch ?? 0, document.updateTime?.nanosSinceEpoch ?? 0,
            ])
    }

    static func document(_ row: Row) throws -> FirestoreDocument {
        let databaseName: String = row["database"]
        let parts = databaseName.split(separator: "/")
        let name = try DocumentName(project: String(parts[1]), database: String(parts[3]), path: row["path"])
        let text: String = row["fields"]
        return FirestoreDocument(
            name: name, fields: try FirestoreJSON.fields(try JSONValue(parsing: text)),
            createTime: Timestamp(nanosSinceEpoch: row["create_time"]), updateTime: Timestamp(nanosSinceEpoch: row["update_time"]))
    }

    /// SQL that keeps only documents whose stored JSON holds what the filter requires (`AND instr(fields, ?) > 0`
    /// for each text), with those texts: a string an equality or array-contains conjunct compares with, a map
    /// key an is-not-null conjunct names. A necessary condition only: the query itself still decides.
    static func storedTextFilter(_ filter: StructuredQuery.Filter?) -> (sql: String, texts: [String]) {
        func texts(_ filter: StructuredQuery.Filter?) -> [String] {
            switch filter {
            case .field(_, .equal, .string(let text)), .field(_, .arrayContains, .string(let text)):
                return ["\"stringValue\":" + JSONValue.string(text).serialized()]
            case .unary(let path, .isNotNull) where !path.segments.isEmpty:
                return [JSONValue.string(path.segments[path.segments.count - 1]).serialized() + ":"]
            case .and(let filters): return filters.flatMap(texts)
            default: return []
            }
        }
        let found = Array(texts(filter).prefix(4))
        return (String(repeating: " AND instr(fields, ?) > 0", count: found.count), found)
    }

    static func likePrefix(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%").replacingOccurrences(of: "_", with: "\\_")
    }
}
