import WireFormats

/// A Firestore structured query (`google.firestore.v1.StructuredQuery`).
public struct StructuredQuery: Sendable, Hashable {
    public enum Operator: String, Sendable {
        case lessThan = "LESS_THAN"
        case lessThanOrEqual = "LESS_THAN_OR_EQUAL"
        case greaterThan = "GREATER_THAN"
        case greaterThanOrEqual = "GREATER_THAN_OR_EQUAL"
        case equal = "EQUAL"
        case notEqual = "NOT_EQUAL"
        case arrayContains = "ARRAY_CONTAINS"
        case `in` = "IN"
        case arrayContainsAny = "ARRAY_CONTAINS_ANY"
        case notIn = "NOT_IN"
    }

    public enum UnaryOperator: String, Sendable {
        case isNaN = "IS_NAN"
        case isNull = "IS_NULL"
        case isNotNaN = "IS_NOT_NAN"
        case isNotNull = "IS_NOT_NULL"
    }

    public indirect enum Filter: Sendable, Hashable {
        case field(FieldPath, Operator, FirestoreValue)
        case unary(FieldPath, UnaryOperator)
        case and([Filter])
        case or([Filter])
    }

    public enum Direction: String, Sendable {
        case ascending = "ASCENDING"
        case descending = "DESCENDING"
    }

    public struct Order: Sendable, Hashable {
        public var field: FieldPath
        public var direction: Direction
        public init(_ field: FieldPath, _ direction: Direction = .ascending) {
            self.field = field
            self.direction = direction
        }
    }

    public struct Cursor: Sendable, Hashable {
        public var values: [FirestoreValue]
        /// True: the cursor is just before these values (inclusive for startAt).
        public var before: Bool
        public init(values: [FirestoreValue], before: Bool) {
            self.values = values
            self.before = before
        }
    }

    public var collectionID: String
    /// A collection-group query: every collection with this id under the parent.
    public var allDescendants: Bool
    public var filter: Filter?
    public var orderBy: [Order]
    public var startAt: Cursor?
    public var endAt: Cursor?
    public var offset: Int?
    public var limit: Int?
    /// A projection: only these fields come back (nil: all of them).
    public var select: [FieldPath]?

    public init(
        collectionID: String, allDescendants: Bool = false, filter: Filter? = nil, orderBy: [Order] = [],
        startAt: Cursor? = nil, endAt: Cursor? = nil, offset: Int? = nil, limit: Int? = nil
    ) {
        self.collectionID = collectionID
        self.allDescendants = allDescendants
        self.filter = filter
        self.orderBy = orderBy
        self.startAt = startAt
        self.endAt = endAt
        self.offset = offset
        self.limit = limit
    }

    public var json: JSONValue {
        var members: [String: JSONValue] = ["from": [["collectionId": .string(collectionID), "allDescendants": .bool(allDescendants)]]]
        if let filter { members["where"] = filter.json }
        if !orderBy.isEmpty {
            members["orderBy"] = .array(orderBy.map { ["field": ["fieldPath": .string($0.field.description)], "direction": .string($0.direction.rawValue)] })
        }
        if let startAt { members["startAt"] = ["values": .array(startAt.values.map { FirestoreJSON.json($0) }), "before": .bool(startAt.before)] }
        if let endAt { members["endAt"] = ["values": .array(endAt.values.map { FirestoreJSON.json($0) }), "before": .bool(endAt.before)] }
        if let offset { members["offset"] = .integer(offset) }
        if let limit { members["limit"] = .integer(limit) }
        if let select { members["select"] = ["fields": .array(select.map { ["fieldPath": .string($0.description)] })] }
        return .object(members)
    }
}

extension StructuredQuery.Filter {
    public var json: JSONValue {
        switch self {
        case .field(let path, let op, let value):
            return ["fieldFilter": ["field": ["fieldPath": .string(path.description)], "op": .string(op.rawValue), "value": FirestoreJSON.json(value)]]
        case .unary(let path, let op):
            return ["unaryFilter": ["field": ["fieldPath": .string(path.description)], "op": .string(op.rawValue)]]
        case .and(let filters):
            return ["compositeFilter": ["op": "AND", "filters": .array(filters.map(\.json))]]
        case .or(let filters):
            return ["compositeFilter": ["op": "OR", "filters": .array(filters.map(\.json))]]
        }
    }
}
