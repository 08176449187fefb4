import WireFormats

/// Why a JSON value is not a valid Firestore value or document; `path` says where (`fields.text`).
public struct FirestoreJSONError: Error, Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var reason: String
    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }
    public var description: String { path.isEmpty ? reason : "\(path): \(reason)" }

    /// The same error, with `prefix` in front of its path (for decoders that name the path only on failure).
    public func under(_ prefix: String) -> FirestoreJSONError { FirestoreJSONError(path: prefix + path, reason: reason) }
}

/// The proto3 JSON mapping of `google.firestore.v1.Value` and `Document`: the Firestore REST API's
/// wire format, and the `application/json` form of Eventarc's Firestore events. Field names are
/// accepted in lowerCamelCase and in the proto's snake_case, as proto3 JSON parsers must.
public enum FirestoreJSON {
    // MARK: Decoding

    /// Firestore's limit on a field name: a longer key is no Firestore data, and refused at once.
    public static let maximumFieldNameBytes = 1500

    /// Errors name where they happened (`value.mapValue.fields.a.arrayValue.values[3]`), but the path is
    /// built only when there is an error: building one for every value made decoding quadratic in the
    /// nesting and the key lengths (a 4 MiB event took seconds).
    public static func value(from json: JSONValue, path: String = "value") throws(FirestoreJSONError) -> FirestoreValue {
        do { return try decodeValue(json) } catch { throw error.under(path) }
    }

    public static func fields(_ json: JSONValue, path: String = "fields") throws(FirestoreJSONError) -> [String: FirestoreValue] {
        do { return try decodeFields(json) } catch { throw error.under(path) }
    }

    /// A value; an error's path is relative to it (empty, or starting with `.`).
    static func decodeValue(_ json: JSONValue) throws(FirestoreJSONError) -> FirestoreValue {
        guard case .object(let members) = json else { throw FirestoreJSONError(path: "", reason: "a value must be a JSON object") }
        guard members.count == 1, let (key, inner) = members.first else {
            throw FirestoreJSONError(
                path: "",
                reason: members.isEmpty ? "a value must set one kind" : "a value must set exactly one kind, not \(members.keys.sorted().map { $0.prefix(80) })")
        }
        func fail(_ reason: String, _ suffix: String = "") -> FirestoreJSONError { FirestoreJSONError(path: ".\(key)\(suffix)", reason: reason) }
        switch key {
        case "nullValue", "null_value":
            guard inner == .null || inner == "NULL_VALUE" || inner == 0 else { throw fail("must be null") }
            return .null
        case "booleanValue", "boolean_value":
            guard let b = inner.boolValue else { throw fail("must be true or false") }
            return .boolean(b)
        case "integerValue", "integer_value":
            guard let i = inner.int64Value else { throw fail("must be a 64-bit integer") }
            return .integer(i)
        case "doubleValue", "double_value":
            guard let d = double(inner) else { throw fail("must be a number, \"NaN\" or \"Infinity\"") }
            return .double(d)
        case "timestampValue", "timestamp_value":
            guard let text = inner.stringValue, let t = Timestamp(rfc3339: text) else { throw fail(timestampReason) }
            return .timestamp(t)
        case "stringValue", "string_value":
            guard let s = inner.stringValue else { throw fail("must be a string") }
            return .string(s)
        case "bytesValue", "bytes_value":
            guard let s = inner.stringValue, let data = Base64.decode(s) else { throw fail("must be base64") }
            return .bytes(data)
        case "referenceValue", "reference_value":
            guard let s = inner.stringValue else { throw fail("must be a string") }
            return .reference(s)
        case "geoPointValue", "geo_point_value":
            guard case .object(let point) = inner, point.keys.allSatisfy({ $0 == "latitude" || $0 == "longitude" }),
                let lat = double(point["latitude"] ?? 0), let lng = double(point["longitude"] ?? 0)
            else { throw fail("must be {latitude, longitude}") }
            return .geoPoint(latitude: lat, longitude: lng)
        case "arrayValue", "array_value":
            guard case .object(let array) = inner, array.keys.allSatisfy({ $0 == "values" }) else { throw fail("must be {values: [...]}") }
            let values = array["values"] ?? .null
            guard case .array(let items) = values == .null ? .array([]) : values else { throw fail("must be an array", ".values") }
            var result: [FirestoreValue] = []
            result.reserveCapacity(items.count)
            for (i, item) in items.enumerated() {
                do { result.append(try decodeValue(item)) } catch { throw error.under(".\(key).values[\(i)]") }
            }
            return .array(result)
        case "mapValue", "map_value":
            guard case .object(let map) = inner, map.keys.allSatisfy({ $0 == "fields" }) else { throw fail("must be {fields: {...}}") }
            do { return .map(try decodeFields(map["fields"] ?? .null)) } catch { throw error.under(".\(key).fields") }
        default:
            throw FirestoreJSONError(path: "", reason: "unknown value kind \"\(key.prefix(80))\"")
        }
    }

    static func decodeFields(_ json: JSONValue) throws(FirestoreJSONError) -> [String: FirestoreValue] {
        if json == .null { return [:] }
        guard case .object(let members) = json else { throw FirestoreJSONError(path: "", reason: "must be an object") }
        var result: [String: FirestoreValue] = [:]
        result.reserveCapacity(members.count)
        for (key, member) in members {
            guard key.utf8.count <= maximumFieldNameBytes else {
                throw FirestoreJSONError(
                    path: ".\(key.prefix(40))…", reason: "a field name of \(key.utf8.count) bytes; Firestore's limit is \(maximumFieldNameBytes)")
            }
            do { result[key] = try decodeValue(member) } catch { throw error.under(".\(key.prefix(200))") }
        }
        return result
    }

    static let timestampReason = "must be an RFC 3339 timestamp between years 1 and 9999"

    /// A document, or nil for the empty object `{}` that events use to say "no document".
    public static func document(from json: JSONValue, path: String = "document") throws(FirestoreJSONError) -> FirestoreDocument? {
        guard case .object(let members) = json else {
            if json == .null { return nil }
            throw FirestoreJSONError(path: path, reason: "a document must be a JSON object")
        }
        let nameJSON = members["name"] ?? .null
        if nameJSON == .null || nameJSON == "" {
            let rest = members.filter { $0.key != "name" && $0.value != .null && $0.value != .object([:]) }
            if rest.isEmpty { return nil }
            throw FirestoreJSONError(path: "\(path).name", reason: "a document with fields must have a name")
        }
        guard let nameText = nameJSON.stringValue else { throw FirestoreJSONError(path: "\(path).name", reason: "must be a string") }
        let name: DocumentName
        do { name = try DocumentName(resourceName: nameText) } catch { throw FirestoreJSONError(path: "\(path).name", reason: error.description) }
        return FirestoreDocument(
            name: name,
            fields: try fields(members["fields"] ?? .null, path: "\(path).fields"),
            createTime: try optionalTimestamp(members["createTime"] ?? members["create_time"], path: "\(path).createTime"),
            updateTime: try optionalTimestamp(members["updateTime"] ?? members["update_time"], path: "\(path).updateTime")
        )
    }

    public static func timestamp(_ json: JSONValue, path: String) throws(FirestoreJSONError) -> Timestamp {
        guard let text = json.stringValue, let t = Timestamp(rfc3339: text) else {
            throw FirestoreJSONError(path: path, reason: timestampReason)
        }
        return t
    }

    static func optionalTimestamp(_ json: JSONValue?, path: String) throws(FirestoreJSONError) -> Timestamp? {
        guard let json, json != .null else { return nil }
        return try timestamp(json, path: path)
    }

    static func double(_ json: JSONValue) -> Double? {
        switch json {
        case .number(let text): return Double(text)
        case .string("NaN"): return .nan
        case .string("Infinity"): return .infinity
        case .string("-Infinity"): return -.infinity
        case .string(let text):
            // proto3 JSON also accepts a quoted number; refuse other spellings Double() would take ("inf", "0x1p3").
            guard text.utf8.allSatisfy({ (48...57).contains($0) || $0 == 45 || $0 == 43 || $0 == 46 || $0 | 0x20 == 101 }) else { return nil }
            return Double(text)
        default: return nil
        }
    }

    // MARK: Encoding

    public static func json(_ value: FirestoreValue) -> JSONValue {
        switch value {
        case .null: return ["nullValue": .null]
        case .boolean(let b): return ["booleanValue": .bool(b)]
        case .integer(let i): return ["integerValue": .string(String(i))]
        case .double(let d): return ["doubleValue": json(d)]
        case .timestamp(let t): return ["timestampValue": .string(t.rfc3339)]
        case .string(let s): return ["stringValue": .string(s)]
        case .bytes(let data): return ["bytesValue": .string(Base64.encode(data))]
        case .reference(let r): return ["referenceValue": .string(r)]
        case .geoPoint(let lat, let lng): return ["geoPointValue": ["latitude": json(lat), "longitude": json(lng)]]
        case .array(let values): return ["arrayValue": ["values": .array(values.map(json))]]
        case .map(let fields): return ["mapValue": ["fields": json(fields)]]
        }
    }

    public static func json(_ fields: [String: FirestoreValue]) -> JSONValue {
        .object(fields.mapValues { json($0) })
    }

    public static func json(_ document: FirestoreDocument) -> JSONValue {
        var members: [String: JSONValue] = ["name": .string(document.name.resourceName), "fields": json(document.fields)]
        if let t = document.createTime { members["createTime"] = .string(t.rfc3339) }
        if let t = document.updateTime { members["updateTime"] = .string(t.rfc3339) }
        return .object(members)
    }

    public static func json(_ d: Double) -> JSONValue {
        if d.isNaN { return "NaN" }
        if d.isInfinite { return d > 0 ? "Infinity" : "-Infinity" }
        return .number(d.description)
    }
}
