import FirestoreModel
import Foundation

/// The export Google's Firestore emulator writes (`POST /emulator/v1/projects/P:export`, or
/// `firebase emulators:export`): Cloud Datastore's export format. `…/all_namespaces/all_kinds/output-N`
/// files are LevelDB logs (32 KiB blocks of CRC-checked records), each record one `EntityProto`
/// (App Engine's `storage_onestore_v3`, proto2): the document's key path, then one property per field;
/// maps are nested entities (meaning 19), arrays are repeated properties (`multiple`), an empty array
/// is meaning 24, timestamps are microseconds (meaning 7), bytes meaning 14 or 16, geo points
/// meaning 9, references a key. The export carries no create or update times.
public enum EmulatorExport {
    /// The `output-N` files of an export under `directory` (a Firebase export directory, a
    /// `firestore_export*` directory, or any folder above one), in order; empty when there are none.
    public static func outputFiles(under directory: String) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: directory) else { return [] }
        var found: [String] = []
        while let relative = walker.nextObject() as? String {
            let components = relative.split(separator: "/")
            if components.count > 6 { walker.skipDescendants() }
            if let name = components.last, name.hasPrefix("output-"), components.dropLast().last == "all_kinds" {
                found.append((directory as NSString).appendingPathComponent(relative))
            }
        }
        return found.sorted { outputNumber($0) < outputNumber($1) }
    }

    static func outputNumber(_ path: String) -> Int { Int(path.split(separator: "-").last ?? "") ?? 0 }

    public struct FormatError: Error, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// The document one `EntityProto` record holds, in `project`'s default database.
    static func document(fromEntity bytes: ArraySlice<UInt8>, project: String) throws -> FirestoreDocument {
        let entity = try Entity(bytes, project: project)
        guard let path = entity.path, !path.isEmpty else { throw FormatError("an entity without a key") }
        return FirestoreDocument(name: try DocumentName(project: project, segments: path), fields: entity.fields)
    }

    /// An `EntityProto`: its key's path (`users`, `alice`, …) and its properties as Firestore fields.
    struct Entity {
        var path: [String]?
        var fields: [String: FirestoreValue] = [:]

        init(_ bytes: ArraySlice<UInt8>, project: String, depth: Int = 0) throws {
            guard depth <= 20 else { throw FormatError("maps nested over 20 deep") }
            var reader = ProtoReader(bytes)
            var arrays: [String: [FirestoreValue]] = [:]
            while let (field, wire) = try reader.nextTag() {
                switch (field, wire) {
                case (13, 2): path = try Self.keyPath(try reader.lengthDelimited())
                case (14, 2), (15, 2):
                    let property = try Property(try reader.lengthDelimited(), project: project, depth: depth)
                    if property.multiple {
                        arrays[property.name, default: []].append(property.value)
                    } else {
                        fields[property.name] = property.value
                    }
                default: try reader.skip(wire)
                }
            }
            for (name, values) in arrays { fields[name] = .array(values) }
        }

        /// A `Reference`'s path: field 14 holds groups of (type, id or name).
        static func keyPath(_ bytes: ArraySlice<UInt8>) throws -> [String] {
            var reader = ProtoReader(bytes)
            var segments: [String] = []
            while let (field, wire) = try reader.nextTag() {
                guard field == 14, wire == 2 else {
                    try reader.skip(wire)
                    continue
                }
                var path = ProtoReader(try reader.lengthDelimited())
                while let (element, elementWire) = try path.nextTag() {
                    guard element == 1, elementWire == 3 else {
                        try path.skip(elementWire)
                        continue
                    }
                    segments += try pathElement(&path, type: 2, id: 3, name: 4, end: 1)
                }
            }
            return segments
        }

        /// One path element (a group): its kind and its name (or numeric id, as Firestore spells one).
        static func pathElement(_ reader: inout ProtoReader, type typeField: Int, id idField: Int, name nameField: Int, end: Int) throws -> [String] {
            var type = ""
            var name: String?
            while let (field, wire) = try reader.nextTag() {
                if wire == 4, field == end { return [type, name ?? ""] }
                switch field {
                case typeField where wire == 2: type = try reader.string()
                case nameField where wire == 2: name = try reader.string()
                case idField where wire == 0:
                    let id = Int64(bitPattern: try reader.varint())
                    name = name ?? "__id\(id)__"
                default: try reader.skip(wire)
                }
            }
            throw FormatError("a key path element without its end")
        }
    }

    /// A `Property`: name, meaning, whether it is one of an array's elements, and its value.
    struct Property {
        var name = ""
        var multiple = false
        var value = FirestoreValue.null

        init(_ bytes: ArraySlice<UInt8>, project: String, depth: Int) throws {
            var reader = ProtoReader(bytes)
            var meaning = 0
            var raw: ArraySlice<UInt8> = []
            while let (field, wire) = try reader.nextTag() {
                switch (field, wire) {
                case (1, 0): meaning = Int(truncatingIfNeeded: try reader.varint())
                case (3, 2): name = try reader.string()
                case (4, 0): multiple = try reader.varint() != 0
                case (5, 2): raw = try reader.lengthDelimited()
                default: try reader.skip(wire)
                }
            }
            value = try Self.value(raw, meaning: meaning, project: project, depth: depth)
        }

        static func value(_ bytes: ArraySlice<UInt8>, meaning: Int, project: String, depth: Int) throws -> FirestoreValue {
            if meaning == 24 { return .array([]) }
            var reader = ProtoReader(bytes)
            var value = FirestoreValue.null
            while let (field, wire) = try reader.nextTag() {
                switch (field, wire) {
                case (1, 0):
                    let number = Int64(bitPattern: try reader.varint())
                    if meaning == 7 {
                        let (seconds, micros) = number.quotientAndRemainder(dividingBy: 1_000_000)
                        value =
                            micros < 0
                            ? .timestamp(Timestamp(seconds: seconds - 1, nanos: Int32(micros + 1_000_000) * 1000))
                            : .timestamp(Timestamp(seconds: seconds, nanos: Int32(micros) * 1000))
                    } else {
                        value = .integer(number)
                    }
                case (2, 0): value = .boolean(try reader.varint() != 0)
                case (3, 2):
                    let raw = try reader.lengthDelimited()
                    switch meaning {
                    case 19: value = .map(try Entity(raw, project: project, depth: depth + 1).fields)
                    case 14, 16: value = .bytes(Array(raw))
                    default:
                        guard let text = String(validating: raw, as: UTF8.self) else { throw FormatError("a string that is not UTF-8") }
                        value = .string(text)
                    }
                case (4, 1): value = .double(Double(bitPattern: try reader.fixed64()))
                case (5, 3): value = try point(&reader)
                case (12, 3): value = .reference(try reference(&reader, project: project))
                default: try reader.skip(wire)
                }
            }
            return value
        }

        /// `PointValue` (group 5): x (6) is the latitude, y (7) the longitude.
        static func point(_ reader: inout ProtoReader) throws -> FirestoreValue {
            var latitude = 0.0
            var longitude = 0.0
            while let (field, wire) = try reader.nextTag() {
                switch (field, wire) {
                case (5, 4): return .geoPoint(latitude: latitude, longitude: longitude)
                case (6, 1): latitude = Double(bitPattern: try reader.fixed64())
                case (7, 1): longitude = Double(bitPattern: try reader.fixed64())
                default: try reader.skip(wire)
                }
            }
            throw FormatError("a geo point without its end")
        }

        /// `ReferenceValue` (group 12): path elements (group 14: type 15, id 16, name 17), as a document name.
        static func reference(_ reader: inout ProtoReader, project: String) throws -> String {
            var segments: [String] = []
            while let (field, wire) = try reader.nextTag() {
                switch (field, wire) {
                case (12, 4): return try DocumentName(project: project, segments: segments).resourceName
                case (14, 3): segments += try Entity.pathElement(&reader, type: 15, id: 16, name: 17, end: 14)
                default: try reader.skip(wire)
                }
            }
            throw FormatError("a reference without its end")
        }
    }
}

/// Protocol buffers' wire format, as much as proto2 entities need: varints, fixed 64-bit values,
/// length-delimited fields and groups. Every length is checked against what is left.
struct ProtoReader {
    var rest: ArraySlice<UInt8>

    init(_ bytes: ArraySlice<UInt8>) { self.rest = bytes }

    mutating func nextTag() throws -> (field: Int, wire: Int)? {
        guard !rest.isEmpty else { return nil }
        let key = try varint()
        guard key >> 3 > 0, key >> 3 < 1 << 29 else { throw EmulatorExport.FormatError("a field number out of range") }
        return (Int(key >> 3), Int(key & 7))
    }

    mutating func varint() throws -> UInt64 {
        var result: UInt64 = 0
        for shift in stride(from: 0, to: 70, by: 7) {
            guard let byte = rest.popFirst() else { throw EmulatorExport.FormatError("a record cut short") }
            guard shift < 64 else { throw EmulatorExport.FormatError("a varint over 10 bytes") }
            result |= UInt64(byte & 0x7f) << UInt64(shift)
            if byte & 0x80 == 0 { return result }
        }
        throw EmulatorExport.FormatError("a varint over 10 bytes")
    }

    mutating func fixed64() throws -> UInt64 {
        guard rest.count >= 8 else { throw EmulatorExport.FormatError("a record cut short") }
        var value: UInt64 = 0
        for (index, byte) in rest.prefix(8).enumerated() { value |= UInt64(byte) << UInt64(8 * index) }
        rest = rest.dropFirst(8)
        return value
    }

    mutating func lengthDelimited() throws -> ArraySlice<UInt8> {
        let length = try varint()
        guard length <= UInt64(rest.count) else { throw EmulatorExport.FormatError("a length past the record's end") }
        let value = rest.prefix(Int(length))
        rest = rest.dropFirst(Int(length))
        return value
    }

    mutating func string() throws -> String {
        guard let text = String(validating: try lengthDelimited(), as: UTF8.self) else { throw EmulatorExport.FormatError("a string that is not UTF-8") }
        return text
    }

    /// Skips a field's value; a group is skipped to its end.
    mutating func skip(_ wire: Int, depth: Int = 0) throws {
        switch wire {
        case 0: _ = try varint()
        case 1: _ = try fixed64()
        case 2: _ = try lengthDelimited()
        case 5:
            guard rest.count >= 4 else { throw EmulatorExport.FormatError("a record cut short") }
            rest = rest.dropFirst(4)
        case 3:
            guard depth < 20 else { throw EmulatorExport.FormatError("groups nested over 20 deep") }
            while let (_, inner) = try nextTag() {
                if inner == 4 { return }
                try skip(inner, depth: depth + 1)
            }
            throw EmulatorExport.FormatError("a group without its end")
        default: throw EmulatorExport.FormatError("wire type \(wire)")
        }
    }
}

/// Records of a LevelDB log file (the format of an export's `output-N`), read a 32 KiB block at a time;
/// each record's CRC-32C is checked, and fragments are joined.
struct LevelDBLogReader {
    static let blockSize = 32_768
    static let maximumRecord = 16 << 20
    let handle: FileHandle
    var block: [UInt8] = []
    var offset = 0

    init(_ handle: FileHandle) { self.handle = handle }

    mutating func nextRecord() throws -> [UInt8]? {
        var record: [UInt8] = []
        var inFragments = false
        while true {
            if block.count - offset < 7 {
                // A block's last 6 bytes or fewer are padding.
                guard let data = try handle.read(upToCount: Self.blockSize), !data.isEmpty else {
                    if inFragments { throw EmulatorExport.FormatError("the file ends inside a record") }
                    return nil
                }
                block = Array(data)
                offset = 0
                continue
            }
            let length = Int(block[offset + 4]) | Int(block[offset + 5]) << 8
            let type = block[offset + 6]
            if type == 0, length == 0 {
                offset = block.count
                continue
            }
            guard offset + 7 + length <= block.count else { throw EmulatorExport.FormatError("a record runs past its block") }
            let stored = UInt32(block[offset]) | UInt32(block[offset + 1]) << 8 | UInt32(block[offset + 2]) << 16 | UInt32(block[offset + 3]) << 24
            let data = block[(offset + 7)..<(offset + 7 + length)]
            guard CRC32C.unmask(stored) == CRC32C.checksum(block[(offset + 6)..<(offset + 7 + length)]) else {
                throw EmulatorExport.FormatError("a record whose checksum does not match (the file is damaged)")
            }
            offset += 7 + length
            switch type {
            case 1 where !inFragments: return Array(data)
            case 2 where !inFragments:
                record = Array(data)
                inFragments = true
            case 3 where inFragments: record += data
            case 4 where inFragments: return record + data
            default: throw EmulatorExport.FormatError("record type \(type) out of order")
            }
            guard record.count <= Self.maximumRecord else { throw EmulatorExport.FormatError("a record over 16 MiB") }
        }
    }
}

/// CRC-32C (Castagnoli), as LevelDB checks its records, and LevelDB's masking of stored checksums.
enum CRC32C {
    static let table: [UInt32] = (0..<256).map { index in
        var crc = UInt32(index)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
        return crc
    }

    static func checksum(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }

    static func unmask(_ masked: UInt32) -> UInt32 {
        let rotated = masked &- 0xA282_EAD8
        return (rotated >> 17) | (rotated << 15)
    }
}

extension DocumentArchive {
    /// The documents of a Google emulator export's `output-N` files, in batches of 500.
    static func forEachBatch(
        ofEmulatorExport files: [String], project: String, _ body: ([FirestoreDocument]) async throws -> Void
    ) async throws {
        var batch: [FirestoreDocument] = []
        for file in files {
            guard let handle = FileHandle(forReadingAtPath: file) else { throw ArchiveError("cannot read \(file)") }
            defer { try? handle.close() }
            var reader = LevelDBLogReader(handle)
            var index = 0
            while let record = try reader.nextRecord() {
                index += 1
                do {
                    batch.append(try EmulatorExport.document(fromEntity: record[...], project: project))
                } catch {
                    throw ArchiveError("\(file), record \(index): \(error)")
                }
                if batch.count == 500 {
                    try await body(batch)
                    batch.removeAll(keepingCapacity: true)
                }
            }
        }
        try await body(batch)
    }
}
