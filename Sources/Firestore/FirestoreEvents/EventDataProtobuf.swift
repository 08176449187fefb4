import FirestoreModel
import WireFormats

/// `google.events.cloud.firestore.v1.DocumentEventData` in protobuf's binary form, read straight into
/// Firestore's values and written from them: no generated message types in between. Field numbers
/// are those of google-cloudevents' `data.proto`; a message or field given more than once is merged
/// as protobuf merges (the last scalar wins, messages of the same field merge, repeated fields and
/// maps gather), so the result is SwiftProtobuf's to the byte (`FuzzTarget` checks one against the other).
public enum EventDataProtobuf {
    /// What the event carries: each document (nil when absent or empty) and the update mask.
    public struct Decoded: Sendable {
        public var newDocument: FirestoreDocument?
        public var oldDocument: FirestoreDocument?
        public var updateMask: [String]?
    }

    /// A refusal: the bytes are not protobuf (`ProtobufError`), or they are but a value in them is not
    /// Firestore's (`FirestoreJSONError`, with its path).
    public enum Failure: Error {
        case wire(ProtobufError)
        case value(FirestoreJSONError)
    }

    public static func decode(_ bytes: [UInt8]) throws(Failure) -> Decoded {
        do {
            return try bytes.withUnsafeBytes { buffer in try decode(ProtobufReader(buffer)) }
        } catch let failure as Failure {
            throw failure
        } catch {
            throw .wire(ProtobufError("\(error)"))
        }
    }

    static func decode(_ message: ProtobufReader) throws(Failure) -> Decoded {
        var reader = message
        var value: DocumentParts?
        var oldValue: DocumentParts?
        var updateMask: [String]?
        do {
            while let (number, wire) = try reader.field() {
                switch (number, wire) {
                case (1, .lengthDelimited): try (value ?? DocumentParts()).merged(from: reader.nested(reader.lengthDelimited()), into: &value)
                case (2, .lengthDelimited): try (oldValue ?? DocumentParts()).merged(from: reader.nested(reader.lengthDelimited()), into: &oldValue)
                case (3, .lengthDelimited):
                    var mask = try reader.nested(reader.lengthDelimited())
                    var paths = updateMask ?? []
                    while let (number, wire) = try mask.field() {
                        if number == 1, wire == .lengthDelimited { paths.append(try mask.string()) } else { try mask.skip(number: number, wire: wire) }
                    }
                    updateMask = paths
                default: try reader.skip(number: number, wire: wire)
                }
            }
        } catch {
            throw .wire(error)
        }
        do {
            return Decoded(
                newDocument: try value?.document(path: "value"), oldDocument: try oldValue?.document(path: "oldValue"), updateMask: updateMask)
        } catch {
            throw .value(error)
        }
    }

    /// A `Timestamp` as read: checked against Firestore's range only once every part of it is in.
    struct RawTimestamp {
        var seconds: Int64 = 0
        var nanos: Int32 = 0

        init() {}
        init(_ timestamp: Timestamp) {
            seconds = timestamp.seconds
            nanos = timestamp.nanos
        }

        mutating func merge(from message: ProtobufReader) throws(ProtobufError) {
            var reader = message
            while let (number, wire) = try reader.field() {
                switch (number, wire) {
                case (1, .varint): seconds = Int64(bitPattern: try reader.varint())
                case (2, .varint): nanos = Int32(truncatingIfNeeded: try reader.varint())
                default: try reader.skip(number: number, wire: wire)
                }
            }
        }

        func checked(path: @autoclosure () -> String) throws(FirestoreJSONError) -> Timestamp {
            guard let timestamp = Timestamp(validSeconds: seconds, nanos: nanos) else {
                throw FirestoreJSONError(path: path(), reason: "timestamp out of range")
            }
            return timestamp
        }
    }

    /// A `Document` as read so far (a second occurrence of the same document merges into it).
    struct DocumentParts {
        var name = ""
        var fields = ValueReading.Fields()
        var createTime: RawTimestamp?
        var updateTime: RawTimestamp?

        func merged(from message: ProtobufReader, into result: inout DocumentParts?) throws(ProtobufError) {
            var parts = self
            var reader = message
            parts.fields.values.reserveCapacity(parts.fields.values.count + reader.count(of: 2))
            while let (number, wire) = try reader.field() {
                switch (number, wire) {
                case (1, .lengthDelimited): parts.name = try reader.string()
                case (2, .lengthDelimited): try ValueReading.entry(&reader, into: &parts.fields)
                case (3, .lengthDelimited): try (parts.createTime ?? RawTimestamp()).merging(reader.nested(reader.lengthDelimited()), into: &parts.createTime)
                case (4, .lengthDelimited): try (parts.updateTime ?? RawTimestamp()).merging(reader.nested(reader.lengthDelimited()), into: &parts.updateTime)
                default: try reader.skip(number: number, wire: wire)
                }
            }
            result = parts
        }

        /// Nil for a document that is empty (no name and no fields): events say "none" that way.
        func document(path: String) throws(FirestoreJSONError) -> FirestoreDocument? {
            guard !(name.isEmpty && fields.isEmpty) else { return nil }
            let documentName: DocumentName
            do { documentName = try DocumentName(resourceName: name) } catch { throw FirestoreJSONError(path: "\(path).name", reason: error.description) }
            let values: [String: FirestoreValue]
            do { values = try fields.checked() } catch { throw error.under("\(path).fields") }
            return FirestoreDocument(
                name: documentName, fields: values, createTime: try createTime?.checked(path: "\(path).createTime"),
                updateTime: try updateTime?.checked(path: "\(path).updateTime"))
        }
    }
}

extension EventDataProtobuf.RawTimestamp {
    func merging(_ message: ProtobufReader, into result: inout Self?) throws(ProtobufError) {
        var merged = self
        try merged.merge(from: message)
        result = merged
    }
}

extension EventDataProtobuf {
    /// The change's payload as Eventarc sends it with `application/protobuf`. Map entries are written in
    /// key order, so a redelivered event has the very same bytes.
    public static func encode(_ change: DocumentChange) -> [UInt8] {
        var writer = ProtobufWriter()
        if let document = change.newDocument { writer.message(1) { write(document, to: &$0) } }
        if let document = change.oldDocument { writer.message(2) { write(document, to: &$0) } }
        if let mask = change.updateMask { writer.message(3) { for path in mask { $0.string(1, path) } } }
        return writer.bytes
    }

    static func write(_ document: FirestoreDocument, to writer: inout ProtobufWriter) {
        writer.string(1, document.name.resourceName)
        write(document.fields, field: 2, to: &writer)
        if let time = document.createTime { writer.message(3) { write(time, to: &$0) } }
        if let time = document.updateTime { writer.message(4) { write(time, to: &$0) } }
    }

    static func write(_ fields: [String: FirestoreValue], field: Int, to writer: inout ProtobufWriter) {
        for key in fields.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            writer.message(field) { entry in
                entry.string(1, key)
                entry.message(2) { write(fields[key]!, to: &$0) }
            }
        }
    }

    static func write(_ time: Timestamp, to writer: inout ProtobufWriter) {
        if time.seconds != 0 { writer.varint(1, UInt64(bitPattern: time.seconds)) }
        if time.nanos != 0 { writer.varint(2, UInt64(bitPattern: Int64(time.nanos))) }
    }

    static func write(_ value: FirestoreValue, to writer: inout ProtobufWriter) {
        switch value {
        case .null: writer.varint(11, 0)
        case .boolean(let flag): writer.varint(1, flag ? 1 : 0)
        case .integer(let number): writer.varint(2, UInt64(bitPattern: number))
        case .double(let number): writer.fixed64(3, number.bitPattern)
        case .timestamp(let time): writer.message(10) { write(time, to: &$0) }
        case .string(let text): writer.string(17, text)
        case .bytes(let data): writer.bytes(18, data)
        case .reference(let name): writer.string(5, name)
        case .geoPoint(let latitude, let longitude):
            writer.message(8) { point in
                if latitude.bitPattern != 0 { point.fixed64(1, latitude.bitPattern) }
                if longitude.bitPattern != 0 { point.fixed64(2, longitude.bitPattern) }
            }
        case .array(let values): writer.message(9) { array in for element in values { array.message(1) { write(element, to: &$0) } } }
        case .map(let fields): writer.message(6) { write(fields, field: 1, to: &$0) }
        }
    }
}

extension DocumentChange {
    /// The change's payload as Eventarc sends it with `application/protobuf`: serialized `DocumentEventData`.
    public func protobufData() -> [UInt8] { EventDataProtobuf.encode(self) }

    /// The change's payload in the proto3 JSON mapping (`application/json`).
    public func jsonData() -> JSONValue {
        var members: [String: JSONValue] = [:]
        if let d = newDocument { members["value"] = FirestoreJSON.json(d) }
        if let d = oldDocument { members["oldValue"] = FirestoreJSON.json(d) }
        if let mask = updateMask { members["updateMask"] = ["fieldPaths": .array(mask.map { .string($0) })] }
        return .object(members)
    }
}
