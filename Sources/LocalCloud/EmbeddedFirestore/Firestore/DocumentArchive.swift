import FirestoreModel
import Foundation
import WireFormats

/// The local cloud's documents in and out, as Herald's export format: a directory holding
/// `documents.jsonl`, one Firestore REST `Document` per line (`name`, `fields` typed as the REST API
/// types them, `createTime`, `updateTime`; keys sorted, lines in name order, so two exports diff
/// line by line), and `metadata.json`. Imports do not fire triggers, as Firebase's emulator imports
/// do not, and move every document to the project the local cloud serves.
public enum DocumentArchive {
    public static let documentsFile = "documents.jsonl"
    public static let metadataFile = "metadata.json"
    public static let format = "herald-export"
    /// The version of the format this herald writes and reads.
    public static let version = 1
    /// Firestore's limit on how deep maps and arrays nest in a document.
    public static let maximumDepth = 20

    /// How many maps and arrays a value nests.
    static func depth(_ value: FirestoreValue) -> Int {
        switch value {
        case .map(let members): 1 + (members.values.lazy.map(depth).max() ?? 0)
        case .array(let items): 1 + (items.lazy.map(depth).max() ?? 0)
        default: 0
        }
    }

    /// How an import treats a document that exists already.
    public enum Existing: Sendable {
        /// The imported document replaces it (`--import`).
        case replace
        /// It stays as it is (`--seed FILE`: a second run on kept data changes nothing).
        case keep
    }

    public struct Progress: Sendable {
        public var documents: Int
        public var written: Int
    }

    public struct ArchiveError: Error, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// One line of the export for a stored row, without parsing the stored fields again.
    static func line(_ row: Row) -> String {
        let databaseName: String = row["database"]
        let path: String = row["path"]
        let fields: String = row["fields"]
        let created = Timestamp(nanosSinceEpoch: row["create_time"]).rfc3339
        let updated = Timestamp(nanosSinceEpoch: row["update_time"]).rfc3339
        let name = JSONValue.string("\(databaseName)/documents/\(path)").serialized()
        return #"{"createTime":"\#(created)","fields":\#(fields),"name":\#(name),"updateTime":"\#(updated)"}"#
    }

    /// The document one line holds, moved to `project` (its database kept).
    public static func document(fromLine line: some StringProtocol, lineNumber: Int, project: String) throws -> FirestoreDocument {
        do {
            guard var document = try FirestoreJSON.document(from: try JSONValue(parsing: Array(line.utf8)), path: "line \(lineNumber)") else {
                throw ArchiveError("line \(lineNumber): not a document")
            }
            if document.name.project != project {
                document.name = try DocumentName(project: project, database: document.name.database, segments: document.name.segments)
            }
            let depth = document.fields.values.map(Self.depth).max() ?? 0
            guard depth <= maximumDepth else {
                throw ArchiveError("line \(lineNumber): \(document.name.path) holds a value nested \(depth) levels deep; Firestore allows \(maximumDepth)")
            }
            return document
        } catch let error as ArchiveError {
            throw error
        } catch {
            throw ArchiveError("line \(lineNumber): \(error)")
        }
    }
}

extension LocalFirestore {
    /// Every stored document as export lines, in name order, a page (1,000) at a time, all read from one
    /// snapshot: what is written while the export runs is in none of its pages. Returns the count.
    public func exportLines(_ body: ([String]) async throws -> Void) async throws -> Int {
        let snapshot = try await database.snapshot()
        defer { snapshot.end() }
        let pageSize = 1000
        var after: (database: String, path: String)?
        var count = 0
        while true {
            let rows: [(line: String, database: String, path: String)] = try await snapshot.read { [after] db in
                let rows =
                    if let after {
                        try Row.fetchAll(
                            db, sql: "SELECT * FROM documents WHERE (database, path) > (?, ?) ORDER BY database, path LIMIT \(pageSize)",
                            arguments: [after.database, after.path])
                    } else {
                        try Row.fetchAll(db, sql: "SELECT * FROM documents ORDER BY database, path LIMIT \(pageSize)")
                    }
                return rows.map { (DocumentArchive.line($0), $0["database"], $0["path"]) }
            }
            if !rows.isEmpty { try await body(rows.map(\.line)) }
            count += rows.count
            guard rows.count == pageSize, let last = rows.last else { return count }
            after = (last.database, last.path)
        }
    }

    /// Stores documents as they are (times included; missing ones are now) in one SQLite transaction,
    /// without events.
    /// The commit clock moves past the newest update time, so later commits stay after them.
    /// Returns how many were written (those kept under `.keep` are not).
    public func importDocuments(_ documents: [FirestoreDocument], existing: DocumentArchive.Existing) async throws -> Int {
        for document in documents where DocumentSize.of(document) > Self.maximumDocumentBytes {
            throw DocumentArchive.ArchiveError("\(document.name.path) is over Firestore's 1,048,576 bytes")
        }
        // Imported documents keep their times: a version decoded before may name other fields now.
        defer { decoded.removeAll() }
        return try await database.write { db in
            var written = 0
            var newest: Int64 = 0
            // A hand-written seed may give no times: such documents are created now.
            let now = documents.contains { $0.createTime == nil || $0.updateTime == nil } ? try Self.nextCommitTime(db) : nil
            for var document in documents {
                document.createTime = document.createTime ?? now
                document.updateTime = document.updateTime ?? now
                if existing == .keep,
                    try Bool.fetchOne(
                        db, sql: "SELECT 1 FROM documents WHERE database = ? AND path = ?", arguments: [document.name.databaseName, document.name.path])
                        == true
                {
                    continue
                }
                try Self.store(document, db)
                written += 1
                newest = max(newest, document.updateTime?.nanosSinceEpoch ?? 0, document.createTime?.nanosSinceEpoch ?? 0)
            }
            try db.execute(
                sql: """
                    INSERT INTO commit_clock (id, last_nanos) VALUES (1, ?)
                    ON CONFLICT(id) DO UPDATE SET last_nanos = max(last_nanos, excluded.last_nanos)
                    """, arguments: [newest])
            return written
        }
    }
}

extension DocumentArchive {
    /// Writes `directory/documents.jsonl` and `directory/metadata.json` from the local cloud's documents.
    /// Returns how many documents.
    @discardableResult
    public static func export(_ firestore: LocalFirestore, to directory: String, project: String) async throws -> Int {
        try await writeExport(to: directory, project: project) { write in
            try await firestore.exportLines { lines in
                for line in lines { try write(Array((line + "\n").utf8)) }
            }
        }
    }

    /// Writes `directory/documents.jsonl` from the bytes `produce` hands its writer (the file appears
    /// whole: written beside, then renamed; nothing is left of a failed one), then `metadata.json` with
    /// the count `produce` returns.
    @discardableResult
    public static func writeExport(
        to directory: String, project: String, _ produce: (_ write: ([UInt8]) throws -> Void) async throws -> Int
    ) async throws -> Int {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let target = (directory as NSString).appendingPathComponent(documentsFile)
        let partial = target + ".partial"
        guard FileManager.default.createFile(atPath: partial, contents: nil), let file = FileHandle(forWritingAtPath: partial) else {
            throw ArchiveError("cannot write \(partial)")
        }
        let writer = BufferedWriter(file)
        let count: Int
        do {
            count = try await produce { try writer.write($0) }
            try writer.flush()
            try file.close()
        } catch {
            try? file.close()
            try? FileManager.default.removeItem(atPath: partial)
            throw error
        }
        _ = try? FileManager.default.removeItem(atPath: target)
        try FileManager.default.moveItem(atPath: partial, toPath: target)
        try writeMetadata(in: directory, project: project, documents: count)
        return count
    }

    /// `metadata.json`: what wrote the export, for whom, when, and how many documents it holds.
    public static func writeMetadata(in directory: String, project: String, documents: Int) throws {
        let metadata: JSONValue = [
            "format": .string(format), "version": 1, "project": .string(project), "documents": .integer(Int64(documents)),
            "exportTime": .string(Timestamp.now().rfc3339),
        ]
        let url = URL(fileURLWithPath: (directory as NSString).appendingPathComponent(metadataFile))
        try Data((metadata.serialized(pretty: true) + "\n").utf8).write(to: url, options: .atomic)
    }

    /// Imports a Herald export (a directory holding `documents.jsonl`, or any `.jsonl` file: streamed in
    /// batches, so memory stays flat whatever the size), Google's emulator's export, or a JSON snapshot
    /// (a `.json` file holding `{"documents": [...]}` or an array, as `--documents` takes); `progress`
    /// hears after every batch.
    @discardableResult
    public static func importDocuments(
        from path: String, into firestore: LocalFirestore, project: String, existing: Existing,
        progress: @Sendable (Progress) -> Void = { _ in }
    ) async throws -> Progress {
        // Read through once before anything is written: a file that is corrupt or cut short part way is
        // refused whole, with its reason, not imported up to the bad line.
        try await forEachBatch(from: path, project: project) { _ in }
        var status = Progress(documents: 0, written: 0)
        try await forEachBatch(from: path, project: project) { batch in
            status.written += try await firestore.importDocuments(batch, existing: existing)
            status.documents += batch.count
            progress(status)
        }
        return status
    }

    /// A Herald export's `metadata.json`, when there is one: refused when another format or a newer version wrote it.
    static func checkMetadata(in directory: String) throws {
        let path = (directory as NSString).appendingPathComponent(metadataFile)
        guard let data = FileManager.default.contents(atPath: path) else { return }
        guard data.count <= 1 << 20, let json = try? JSONValue(parsing: Array(data)), json.objectValue != nil else {
            throw ArchiveError("\(path) is not Herald's metadata (not a JSON object)")
        }
        if let format = json["format"]?.stringValue, format != self.format {
            throw ArchiveError("\(path) says format \"\(format.prefix(40))\", not \(self.format)")
        }
        if let version = json["version"]?.int64Value, version > Int64(self.version) {
            throw ArchiveError("\(path): this export was written by a newer herald (format version \(version)); this herald reads version \(self.version)")
        }
    }

    /// The documents of a Herald export, Google's emulator's export or a JSON snapshot at `path`, in
    /// batches of at most 500 (the last may be empty), each moved to `project`.
    public static func forEachBatch(
        from path: String, project: String, _ body: ([FirestoreDocument]) async throws -> Void
    ) async throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { throw ArchiveError("\(path) does not exist") }
        var file = path
        if isDirectory.boolValue {
            file = (path as NSString).appendingPathComponent(documentsFile)
            let outputs = EmulatorExport.outputFiles(under: path)
            if !FileManager.default.fileExists(atPath: file), !outputs.isEmpty {
                return try await forEachBatch(ofEmulatorExport: outputs, project: project, body)
            }
            guard FileManager.default.fileExists(atPath: file) else {
                throw ArchiveError("\(path) holds no \(documentsFile) (a Herald export) and no firestore_export (Google's emulator's)")
            }
            try checkMetadata(in: path)
        }
        var fileIsDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: file, isDirectory: &fileIsDirectory), fileIsDirectory.boolValue {
            throw ArchiveError("\(file) is a directory, not a file of documents")
        }
        guard let handle = FileHandle(forReadingAtPath: file) else { throw ArchiveError("cannot read \(file)") }
        defer { try? handle.close() }
        var reader = LineReader(handle, path: file)
        var batch: [FirestoreDocument] = []
        var lineNumber = 0
        // A JSON snapshot (one value, `.json`) is read whole: these are small, hand-written worlds.
        if !file.hasSuffix(".jsonl") {
            let json = try JSONValue(parsing: try reader.readAll())
            guard let list = json.arrayValue ?? json["documents"]?.arrayValue else {
                throw ArchiveError("\(file): expected {\"documents\": [...]} or an array of documents (or a .jsonl file, one document per line)")
            }
            for item in list {
                lineNumber += 1
                batch.append(try document(fromLine: item.serialized(), lineNumber: lineNumber, project: project))
            }
            return try await body(batch)
        }
        var sent = false
        while let line = try reader.nextLine() {
            lineNumber += 1
            guard !line.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: "\t") }) else { continue }
            batch.append(try document(fromLine: String(decoding: line, as: UTF8.self), lineNumber: lineNumber, project: project))
            if batch.count == 500 {
                try await body(batch)
                sent = true
                batch.removeAll(keepingCapacity: true)
            }
        }
        if !batch.isEmpty || !sent { try await body(batch) }
    }
}

/// Lines of a file read a megabyte at a time; a line over 16 MiB is refused (a document is at most 1 MiB).
struct LineReader {
    let handle: FileHandle
    let path: String
    var buffer: [UInt8]
    var start = 0
    var atEnd = false
    static let maximumLine = 16 << 20

    init(_ handle: FileHandle, path: String) {
        self.handle = handle
        self.path = path
        self.buffer = []
    }

    mutating func fill() throws -> Bool {
        guard !atEnd else { return false }
        let chunk: Data
        do {
            chunk = try handle.read(upToCount: 1 << 20) ?? Data()
        } catch {
            // Foundation's error prints as a CocoaError dump; the system's reason is what a person can act on.
            let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
            let reason = underlying.map { $0.domain == NSPOSIXErrorDomain ? String(cString: strerror(Int32($0.code))) : "\($0)" } ?? "\(error)"
            throw DocumentArchive.ArchiveError("cannot read \(path): \(reason)")
        }
        if chunk.isEmpty {
            atEnd = true
            return false
        }
        if start > 0 {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: chunk)
        return true
    }

    mutating func readAll() throws -> [UInt8] {
        while try fill() {
            guard buffer.count - start <= LineReader.maximumLine * 4 else {
                throw DocumentArchive.ArchiveError("a JSON snapshot over 64 MiB: export one document per line instead")
            }
        }
        defer { start = buffer.count }
        return Array(buffer[start...])
    }

    mutating func nextLine() throws -> ArraySlice<UInt8>? {
        var searchFrom = start
        while true {
            if let newline = buffer[searchFrom...].firstIndex(of: UInt8(ascii: "\n")) {
                defer { start = newline + 1 }
                return buffer[start..<newline]
            }
            guard buffer.count - start <= Self.maximumLine else { throw DocumentArchive.ArchiveError("a line over 16 MiB: not a document") }
            searchFrom = buffer.count
            let before = start
            guard try fill() else {
                guard start < buffer.count else { return nil }
                defer { start = buffer.count }
                return buffer[start...]
            }
            searchFrom -= before - start
        }
    }
}

/// Writes in 1 MiB pieces rather than a system call per line.
final class BufferedWriter: @unchecked Sendable {
    let file: FileHandle
    var pending: [UInt8] = []

    init(_ file: FileHandle) { self.file = file }

    func write(_ bytes: [UInt8]) throws {
        pending.append(contentsOf: bytes)
        if pending.count >= 1 << 20 { try flush() }
    }

    func flush() throws {
        try file.write(contentsOf: pending)
        pending.removeAll(keepingCapacity: true)
    }
}
