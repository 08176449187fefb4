import FirestoreModel

/// `google.events.cloud.firestore.v1.Value` (and `MapValue`, `ArrayValue`, `LatLng`, `Timestamp`) read
/// from protobuf into `FirestoreValue`. A value that is not Firestore's (no kind set, a timestamp out
/// of range) is an error only if it is still there at the end: protobuf lets a later field replace it
/// (another kind in the same value, another entry with the same key), so each is kept with its
/// error until its enclosing value is complete.
enum ValueReading {
    /// A map's entries as read: the values so far, and the keys whose values are not Firestore's.
    struct Fields {
        var values: [String: FirestoreValue] = [:]
        var invalid: [String: FirestoreJSONError] = [:]

        var isEmpty: Bool { values.isEmpty && invalid.isEmpty }

        mutating func set(_ key: String, _ result: Result<FirestoreValue, FirestoreJSONError>) {
            switch result {
            case .success(let value):
                values[key] = value
                if !invalid.isEmpty { invalid[key] = nil }
            case .failure(let error):
                values[key] = nil
                invalid[key] = error
            }
        }

        /// The values, or the error of the first key (in key order) whose value is not Firestore's.
        func checked() throws(FirestoreJSONError) -> [String: FirestoreValue] {
            guard let key = invalid.keys.min(), let error = invalid[key] else { return values }
            throw error.under(".\(key)")
        }
    }

    /// One value as read so far: a later field of the same value merges into it or replaces it.
    enum Building {
        case unset
        case scalar(FirestoreValue)
        case timestamp(EventDataProtobuf.RawTimestamp)
        case geoPoint(latitude: Double, longitude: Double)
        case array([FirestoreValue], firstInvalid: FirestoreJSONError?)
        case map(Fields)

        var finished: Result<FirestoreValue, FirestoreJSONError> {
            switch self {
            case .unset: .failure(FirestoreJSONError(path: "", reason: "a value must set one kind"))
            case .scalar(let value): .success(value)
            case .timestamp(let raw): Result { () throws(FirestoreJSONError) in .timestamp(try raw.checked(path: "")) }
            case .geoPoint(let latitude, let longitude): .success(.geoPoint(latitude: latitude, longitude: longitude))
            case .array(let values, let invalid): invalid.map { .failure($0) } ?? .success(.array(values))
            case .map(let fields): Result { () throws(FirestoreJSONError) in .map(try fields.checked()) }.mapError { $0.under(".fields") }
            }
        }
    }

    /// Reads one `Value` message, merging it into `building`.
    static func merge(_ message: ProtobufReader, into building: inout Building) throws(ProtobufError) {
        var reader = message
        while let (number, wire) = try reader.field() {
            switch (number, wire) {
            case (1, .varint): building = .scalar(.boolean(try reader.varint() != 0))
            case (2, .varint): building = .scalar(.integer(Int64(bitPattern: try reader.varint())))
            case (3, .fixed64): building = .scalar(.double(Double(bitPattern: try reader.fixed64())))
            case (5, .lengthDelimited): building = .scalar(.reference(try reader.string()))
            case (6, .lengthDelimited):
                var fields = Fields()
                if case .map(let existing) = building { fields = existing }
                building = .unset  // the entries are moved, not copied
                var entries = try reader.nested(reader.lengthDelimited())
                fields.values.reserveCapacity(fields.values.count + entries.count(of: 1))
                while let (number, wire) = try entries.field() {
                    if number == 1, wire == .lengthDelimited { try entry(&entries, into: &fields) } else { try entries.skip(number: number, wire: wire) }
                }
                building = .map(fields)
            case (8, .lengthDelimited):
                var (latitude, longitude) = (0.0, 0.0)
                if case .geoPoint(let lat, let lng) = building { (latitude, longitude) = (lat, lng) }
                var point = try reader.nested(reader.lengthDelimited())
                while let (number, wire) = try point.field() {
                    switch (number, wire) {
                    case (1, .fixed64): latitude = Double(bitPattern: try point.fixed64())
                    case (2, .fixed64): longitude = Double(bitPattern: try point.fixed64())
                    default: try point.skip(number: number, wire: wire)
                    }
                }
                building = .geoPoint(latitude: latitude, longitude: longitude)
            case (9, .lengthDelimited):
                var (values, firstInvalid): ([FirestoreValue], FirestoreJSONError?) = ([], nil)
                if case .array(let existing, let invalid) = building { (values, firstInvalid) = (existing, invalid) }
                building = .unset
                var elements = try reader.nested(reader.lengthDelimited())
                while let (number, wire) = try elements.field() {
                    guard number == 1, wire == .lengthDelimited else {
                        try elements.skip(number: number, wire: wire)
                        continue
                    }
                    var element = Building.unset
                    try merge(elements.nested(elements.lengthDelimited()), into: &element)
                    switch element.finished {
                    case .success(let value): values.append(value)
                    case .failure(let error):
                        if firstInvalid == nil { firstInvalid = error.under(".values[\(values.count)]") }
                        values.append(.null)
                    }
                }
                building = .array(values, firstInvalid: firstInvalid)
            case (10, .lengthDelimited):
                var raw = EventDataProtobuf.RawTimestamp()
                if case .timestamp(let existing) = building { raw = existing }
                try raw.merge(from: reader.nested(reader.lengthDelimited()))
                building = .timestamp(raw)
            case (11, .varint):
                _ = try reader.varint()
                building = .scalar(.null)
            case (17, .lengthDelimited): building = .scalar(.string(try reader.string()))
            case (18, .lengthDelimited):
                let range = try reader.lengthDelimited()
                building = .scalar(.bytes(Array(reader.bytes[range])))
            default: try reader.skip(number: number, wire: wire)
            }
        }
    }

    /// One map entry (`key`, then a `Value`), its length-delimited bytes next in `reader`. The entry is
    /// read as SwiftProtobuf reads one: a key or value of another wire type is not skipped (its bytes are
    /// read as the next tag), other fields are.
    static func entry(_ reader: inout ProtobufReader, into fields: inout Fields) throws(ProtobufError) {
        var entry = ProtobufReader(reader.bytes, range: try reader.lengthDelimited(), depthLeft: reader.depthLeft)
        var key = ""
        var value = Building.unset
        while let (number, wire) = try entry.entryField() {
            switch number {
            case 1: if wire == .lengthDelimited { key = try entry.string() }
            case 2:
                if wire == .lengthDelimited { try merge(entry.nested(entry.lengthDelimited()), into: &value) }
            default: try entry.skip(number: number, wire: wire)
            }
        }
        fields.set(key, value.finished)
    }
}
