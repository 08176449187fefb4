import WireFormats

/// Decoding of the request side of the Firestore REST API (writes, queries), for servers that speak
/// it. Names are accepted in lowerCamelCase and snake_case, and enums by name or by number, as
/// proto3 JSON allows and as Google's GAPIC REST clients send them (`enum-encoding=int`).
extension JSONValue {
    /// The member under its lowerCamelCase name or its snake_case one.
    public func member(_ camelCase: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        if let v = members[camelCase], v != .null { return v }
        var snake = ""
        for ch in camelCase {
            if ch.isUppercase { snake += "_" + ch.lowercased() } else { snake.append(ch) }
        }
        if let v = members[snake], v != .null { return v }
        return nil
    }
}

public enum RequestDecoding {
    public static func fail(_ path: String, _ reason: String) -> FirestoreJSONError { FirestoreJSONError(path: path, reason: reason) }

    /// An enum given by name or by number (`names[number]`).
    public static func enumName(_ json: JSONValue?, names: [String], path: String) throws(FirestoreJSONError) -> String? {
        guard let json else { return nil }
        if let text = json.stringValue, names.contains(text) { return text }
        if case .number = json, let n = json.int64Value, n >= 0, n < names.count { return names[Int(n)] }
        throw fail(path, "unknown value \(json.serialized().prefix(60)); expected one of \(names.filter { !$0.hasSuffix("UNSPECIFIED") })")
    }

    public static func fieldPath(_ json: JSONValue?, path: String) throws(FirestoreJSONError) -> FieldPath {
        guard let text = (json?.member("fieldPath") ?? json)?.stringValue else { throw fail(path, "a field path is required") }
        do { return try FieldPath(parsing: text) } catch { throw fail(path, error.reason) }
    }

    public static func values(_ json: JSONValue?, path: String) throws(FirestoreJSONError) -> [FirestoreValue] {
        guard let items = json?.member("values") else { return [] }
        guard case .array(let list) = items else { throw fail("\(path).values", "must be an array") }
        var result: [FirestoreValue] = []
        for (i, item) in list.enumerated() {
            do { result.append(try FirestoreJSON.decodeValue(item)) } catch { throw error.under("\(path).values[\(i)]") }
        }
        return result
    }

    public static func write(_ json: JSONValue, path: String = "write") throws(FirestoreJSONError) -> Write {
        guard case .object = json else { throw fail(path, "a write must be an object") }
        let operation: Write.Operation
        var transforms: [FieldTransform] = []
        if let update = json.member("update") {
            guard let document = try FirestoreJSON.document(from: update, path: "\(path).update") else {
                throw fail("\(path).update", "a document name is required")
            }
            var mask: [FieldPath]?
            if let maskJSON = json.member("updateMask") {
                let paths = maskJSON.member("fieldPaths")?.arrayValue ?? []
                var parsed: [FieldPath] = []
                for (i, p) in paths.enumerated() { parsed.append(try fieldPath(p, path: "\(path).updateMask.fieldPaths[\(i)]")) }
                mask = parsed
            }
            operation = .update(document.name, fields: document.fields, mask: mask)
            for (i, t) in (json.member("updateTransforms")?.arrayValue ?? []).enumerated() {
                transforms.append(try transform(t, path: "\(path).updateTransforms[\(i)]"))
            }
        } else if let delete = json.member("delete") {
            operation = .delete(try name(delete, path: "\(path).delete"))
        } else if let transform = json.member("transform") {
            operation = .transform(try name(transform.member("document"), path: "\(path).transform.document"))
            for (i, t) in (transform.member("fieldTransforms")?.arrayValue ?? []).enumerated() {
                transforms.append(try self.transform(t, path: "\(path).transform.fieldTransforms[\(i)]"))
            }
        } else {
            throw fail(path, "a write must set update, delete or transform")
        }
        return Write(operation, transforms: transforms, precondition: try precondition(json.member("currentDocument"), path: "\(path).currentDocument"))
    }

    public static func precondition(_ json: JSONValue?, path: String) throws(FirestoreJSONError) -> Precondition? {
        guard let json, json != .object([:]) else { return nil }
        if let exists = json.member("exists") {
            guard let b = exists.boolValue ?? (exists.stringValue.flatMap { Bool($0) }) else { throw fail("\(path).exists", "must be true or false") }
            return .exists(b)
        }
        if let time = json.member("updateTime") { return .updateTime(try FirestoreJSON.timestamp(time, path: "\(path).updateTime")) }
        return nil
    }

    public static func name(_ json: JSONValue?, path: String) throws(FirestoreJSONError) -> DocumentName {
        guard let text = json?.stringValue else { throw fail(path, "a document name is required") }
        do { return try DocumentName(resourceName: text) } catch { throw fail(path, error.description) }
    }

    static func transform(_ json: JSONValue, path: String) throws(FirestoreJSONError) -> FieldTransform {
        let field = try fieldPath(json.member("fieldPath"), path: "\(path).fieldPath")
        if let v = json.member("increment") { return FieldTransform(field, .increment(try number(v, path: "\(path).increment"))) }
        if let v = json.member("maximum") { return FieldTransform(field, .maximum(try number(v, path: "\(path).maximum"))) }
        if let v = json.member("minimum") { return FieldTransform(field, .minimum(try number(v, path: "\(path).minimum"))) }
        if let v = json.member("setToServerValue") {
            _ = try enumName(v, names: ["SERVER_VALUE_UNSPECIFIED", "REQUEST_TIME"], path: "\(path).setToServerValue")
            guard v.stringValue == "REQUEST_TIME" || v.int64Value == 1 else { throw fail("\(path).setToServerValue", "must be REQUEST_TIME") }
            return FieldTransform(field, .setToRequestTime)
        }
        if let v = json.member("appendMissingElements") {
            return FieldTransform(field, .appendMissingElements(try values(v, path: "\(path).appendMissingElements")))
        }
        if let v = json.member("removeAllFromArray") { return FieldTransform(field, .removeAllFromArray(try values(v, path: "\(path).removeAllFromArray"))) }
        throw fail(path, "a field transform must set one of increment, maximum, minimum, setToServerValue, appendMissingElements, removeAllFromArray")
    }

    static func number(_ json: JSONValue, path: String) throws(FirestoreJSONError) -> FirestoreValue {
        let value = try FirestoreJSON.value(from: json, path: path)
        switch value {
        case .integer, .double: return value
        default: throw fail(path, "must be an integer or a double")
        }
    }
}

extension StructuredQuery {
    static let operatorNames = [
        "OPERATOR_UNSPECIFIED", "LESS_THAN", "LESS_THAN_OR_EQUAL", "GREATER_THAN", "GREATER_THAN_OR_EQUAL",
        "EQUAL", "NOT_EQUAL", "ARRAY_CONTAINS", "IN", "ARRAY_CONTAINS_ANY", "NOT_IN",
    ]
    static let unaryNames = ["OPERATOR_UNSPECIFIED", "", "IS_NAN", "IS_NULL", "IS_NOT_NAN", "IS_NOT_NULL"]

    /// Parses `google.firestore.v1.StructuredQuery` JSON. One `from` collection, as Firestore allows.
    public init(json: JSONValue, path: String = "structuredQuery") throws(FirestoreJSONError) {
        guard case .object = json else { throw RequestDecoding.fail(path, "must be an object") }
        guard let from = json.member("from")?.arrayValue, from.count == 1, let collectionID = from[0].member("collectionId")?.stringValue else {
            throw RequestDecoding.fail("\(path).from", "a query needs exactly one collection selector with a collectionId")
        }
        let allDescendants = from[0].member("allDescendants")?.boolValue ?? false
        let filter = try json.member("where").map { w throws(FirestoreJSONError) in try Filter(json: w, path: "\(path).where") }
        var orders: [Order] = []
        for (i, o) in (json.member("orderBy")?.arrayValue ?? []).enumerated() {
            let field = try RequestDecoding.fieldPath(o.member("field"), path: "\(path).orderBy[\(i)].field")
            let direction = try RequestDecoding.enumName(
                o.member("direction"), names: ["DIRECTION_UNSPECIFIED", "ASCENDING", "DESCENDING"], path: "\(path).orderBy[\(i)].direction")
            orders.append(Order(field, direction == "DESCENDING" ? .descending : .ascending))
        }
        func cursor(_ name: String) throws(FirestoreJSONError) -> Cursor? {
            guard let c = json.member(name) else { return nil }
            return Cursor(values: try RequestDecoding.values(c, path: "\(path).\(name)"), before: c.member("before")?.boolValue ?? false)
        }
        func count(_ name: String) throws(FirestoreJSONError) -> Int? {
            guard let v = json.member(name) else { return nil }
            // `limit` is an Int32Value wrapper: a number, or {"value": n}.
            guard let n = (v.member("value") ?? v).int64Value, n >= 0, n <= Int32.max else {
                throw RequestDecoding.fail("\(path).\(name)", "must be a non-negative integer")
            }
            return Int(n)
        }
        self.init(
            collectionID: collectionID, allDescendants: allDescendants, filter: filter, orderBy: orders,
            startAt: try cursor("startAt"), endAt: try cursor("endAt"), offset: try count("offset"), limit: try count("limit"))
        if let fields = json.member("select")?.member("fields")?.arrayValue {
            var projection: [FieldPath] = []
            for (i, f) in fields.enumerated() { projection.append(try RequestDecoding.fieldPath(f, path: "\(path).select.fields[\(i)]")) }
            select = projection
        }
    }
}

extension StructuredQuery.Filter {
    public init(json: JSONValue, path: String) throws(FirestoreJSONError) {
        if let f = json.member("fieldFilter") {
            let field = try RequestDecoding.fieldPath(f.member("field"), path: "\(path).fieldFilter.field")
            guard let name = try RequestDecoding.enumName(f.member("op"), names: StructuredQuery.operatorNames, path: "\(path).fieldFilter.op"),
                let op = StructuredQuery.Operator(rawValue: name)
            else { throw RequestDecoding.fail("\(path).fieldFilter.op", "an operator is required") }
            guard let v = f.member("value") else { throw RequestDecoding.fail("\(path).fieldFilter.value", "a value is required") }
            self = .field(field, op, try FirestoreJSON.value(from: v, path: "\(path).fieldFilter.value"))
        } else if let f = json.member("unaryFilter") {
            let field = try RequestDecoding.fieldPath(f.member("field"), path: "\(path).unaryFilter.field")
            guard let name = try RequestDecoding.enumName(f.member("op"), names: StructuredQuery.unaryNames, path: "\(path).unaryFilter.op"),
                let op = StructuredQuery.UnaryOperator(rawValue: name)
            else { throw RequestDecoding.fail("\(path).unaryFilter.op", "an operator is required") }
            self = .unary(field, op)
        } else if let f = json.member("compositeFilter") {
            let op = try RequestDecoding.enumName(f.member("op"), names: ["OPERATOR_UNSPECIFIED", "AND", "OR"], path: "\(path).compositeFilter.op")
            var filters: [StructuredQuery.Filter] = []
            for (i, sub) in (f.member("filters")?.arrayValue ?? []).enumerated() {
                filters.append(try StructuredQuery.Filter(json: sub, path: "\(path).compositeFilter.filters[\(i)]"))
            }
            guard !filters.isEmpty else { throw RequestDecoding.fail("\(path).compositeFilter.filters", "a composite filter needs at least one filter") }
            switch op {
            case "AND": self = .and(filters)
            case "OR": self = .or(filters)
            default: throw RequestDecoding.fail("\(path).compositeFilter.op", "must be AND or OR")
            }
        } else {
            throw RequestDecoding.fail(path, "a filter must set fieldFilter, unaryFilter or compositeFilter")
        }
    }
}
