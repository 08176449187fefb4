import FirestoreModel

/// Evaluates a structured query over candidate documents as Firestore does. Pure.
enum QueryEvaluation {
    static let namePath = FieldPath("__name__")

    /// The explicit order, then every inequality field not yet ordered (by path), then `__name__`,
    /// the implicit ones in the direction of the last explicit one.
    static func effectiveOrder(_ query: StructuredQuery) -> [StructuredQuery.Order] {
        var orders = query.orderBy
        let lastDirection = orders.last?.direction ?? .ascending
        let inequalities = Set(inequalityFields(query.filter)).subtracting(orders.map(\.field))
        for field in inequalities.sorted() where field != namePath {
            orders.append(.init(field, lastDirection))
        }
        if !orders.contains(where: { $0.field == namePath }) { orders.append(.init(namePath, lastDirection)) }
        return orders
    }

    static func inequalityFields(_ filter: StructuredQuery.Filter?) -> [FieldPath] {
        switch filter {
        case nil: return []
        case .unary(let path, let op): return op == .isNotNull || op == .isNotNaN ? [path] : []
        case .field(let path, let op, _):
            switch op {
            case .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual, .notEqual, .notIn: return [path]
            default: return []
            }
        case .and(let filters), .or(let filters): return filters.flatMap(inequalityFields)
        }
    }

    static func validate(_ query: StructuredQuery) throws(LocalAPIError) {
        func check(_ filter: StructuredQuery.Filter?) throws(LocalAPIError) {
            switch filter {
            case .field(_, let op, let value):
                if [.in, .notIn, .arrayContainsAny].contains(op) {
                    guard let list = value.arrayValue, !list.isEmpty else {
                        throw .invalidArgument("'\(op.rawValue)' requires a non-empty ArrayValue")
                    }
                    guard list.count <= 30 else { throw .invalidArgument("'\(op.rawValue)' supports up to 30 comparison values") }
                }
            case .and(let filters), .or(let filters):
                for f in filters { try check(f) }
            case nil, .unary: return
            }
        }
        try check(query.filter)
        if arrayContainsPerDisjunction(query.filter) > 1 {
            throw .invalidArgument("A maximum of 1 'ARRAY_CONTAINS' filter is allowed per disjunction.")
        }
        if negations(query.filter) > 1 {
            throw .invalidArgument("Only a single 'NOT_EQUAL', 'NOT_IN', 'IS_NOT_NAN', or 'IS_NOT_NULL' filter allowed per query.")
        }
        let operators = operators(query.filter)
        if operators.contains(.notIn), operators.contains(.in) || operators.contains(.arrayContainsAny) || containsOr(query.filter) {
            throw .invalidArgument("'NOT_IN' cannot be used in the same query with 'IN', 'ARRAY_CONTAINS_ANY' or 'OR'.")
        }
    }

    /// The most ARRAY_CONTAINS / ARRAY_CONTAINS_ANY filters any one branch of the filter ANDs together.
    static func arrayContainsPerDisjunction(_ filter: StructuredQuery.Filter?) -> Int {
        switch filter {
        case nil, .unary: 0
        case .field(_, let op, _): op == .arrayContains || op == .arrayContainsAny ? 1 : 0
        case .and(let filters): Set(filters).map(arrayContainsPerDisjunction).reduce(0, +)
        case .or(let filters): filters.map(arrayContainsPerDisjunction).max() ?? 0
        }
    }

    /// How many NOT_EQUAL, NOT_IN, IS_NOT_NAN and IS_NOT_NULL filters the whole filter holds, in any branch.
    static func negations(_ filter: StructuredQuery.Filter?) -> Int {
        switch filter {
        case nil: 0
        case .unary(_, let op): op == .isNotNull || op == .isNotNaN ? 1 : 0
        case .field(_, let op, _): op == .notEqual || op == .notIn ? 1 : 0
        case .and(let filters), .or(let filters): filters.map(negations).reduce(0, +)
        }
    }

    static func operators(_ filter: StructuredQuery.Filter?) -> [StructuredQuery.Operator] {
        switch filter {
        case nil, .unary: []
        case .field(_, let op, _): [op]
        case .and(let filters), .or(let filters): filters.flatMap(operators)
        }
    }

    static func containsOr(_ filter: StructuredQuery.Filter?) -> Bool {
        switch filter {
        case .or: true
        case .and(let filters): filters.contains(where: containsOr)
        default: false
        }
    }

    static func run(_ query: StructuredQuery, over candidates: [FirestoreDocument]) throws(LocalAPIError) -> [FirestoreDocument] {
        try validate(query)
        let orders = effectiveOrder(query)
        var rows: [(FirestoreDocument, [FirestoreValue])] = []
        let filter = query.filter.map(Self.asCompared)
        for document in candidates where filter.map({ matches($0, document) }) ?? true {
            var key: [FirestoreValue] = []
            for order in orders {
                guard let v = value(document, order.field) else { break }
                key.append(v)
            }
            if key.count == orders.count { rows.append((document, key)) }
        }
        rows.sort { compare($0.1, $1.1, orders) < 0 }
        if let start = query.startAt {
            rows.removeAll { row in
                let c = compare(row.1, start.values, orders)
                return start.before ? c < 0 : c <= 0
            }
        }
        if let end = query.endAt {
            rows.removeAll { row in
                let c = compare(row.1, end.values, orders)
                return end.before ? c >= 0 : c > 0
            }
        }
        var result = rows.map(\.0)
        if let offset = query.offset { result = Array(result.dropFirst(offset)) }
        if let limit = query.limit { result = Array(result.prefix(limit)) }
        if let select = query.select { result = result.map { project($0, select) } }
        return result
    }

    static func project(_ document: FirestoreDocument, _ fields: [FieldPath]) -> FirestoreDocument {
        var projected = document
        projected.fields = [:]
        for path in fields where path != namePath {
            if let v = FieldPath.value(in: document.fields, at: path.segments[...]) { FieldPath.set(v, in: &projected.fields, at: path.segments[...]) }
        }
        return projected
    }

    static func value(_ document: FirestoreDocument, _ path: FieldPath) -> FirestoreValue? {
        path == namePath ? .reference(document.name.resourceName) : FieldPath.value(in: document.fields, at: path.segments[...])
    }

    /// Compares a document's order key with another key or a cursor (a prefix of the key).
    static func compare(_ a: [FirestoreValue], _ b: [FirestoreValue], _ orders: [StructuredQuery.Order]) -> Int {
        for (i, (u, v)) in zip(a, b).enumerated() {
            var c = ValueOrder.compare(u, v)
            // A cursor may give a document as its path relative to the database, as a string.
            if case .reference(let x) = u, case .string(let y) = v {
                c = ValueOrder.referencePaths(x, "\(x.split(separator: "/").prefix(5).joined(separator: "/"))/\(y)")
            }
            if c != 0 { return orders[i].direction == .descending ? -c : c }
        }
        return 0
    }

    static func matches(_ filter: StructuredQuery.Filter, _ document: FirestoreDocument) -> Bool {
        switch filter {
        case .and(let filters): return filters.allSatisfy { matches($0, document) }
        case .or(let filters): return filters.contains { matches($0, document) }
        case .unary(let path, let op):
            guard let v = value(document, path) else { return false }
            let nan = if case .double(let d) = v { d.isNaN } else { false }
            switch op {
            case .isNull: return v == .null
            case .isNotNull: return v != .null
            case .isNaN: return nan
            case .isNotNaN: return !nan && v != .null
            }
        case .field(let path, let op, let operand):
            guard let v = value(document, path) else { return false }
            let sameKind = ValueOrder.typeRank(v) == ValueOrder.typeRank(operand)
            let c = ValueOrder.compare(v, operand)
            switch op {
            case .equal: return c == 0
            case .notEqual: return c != 0 && v != .null && operand != .null
            case .lessThan: return sameKind && c < 0 && !isNaN(v) && !isNaN(operand)
            case .lessThanOrEqual: return sameKind && c <= 0 && !isNaN(v) && !isNaN(operand)
            case .greaterThan: return sameKind && c > 0 && !isNaN(v) && !isNaN(operand)
            case .greaterThanOrEqual: return sameKind && c >= 0 && !isNaN(v) && !isNaN(operand)
            case .arrayContains: return v.arrayValue?.contains { ValueOrder.equivalent($0, operand) } ?? false
            case .arrayContainsAny:
                let wanted = operand.arrayValue ?? []
                return v.arrayValue?.contains { item in wanted.contains { ValueOrder.equivalent($0, item) } } ?? false
            case .in: return (operand.arrayValue ?? []).contains { ValueOrder.equivalent($0, v) }
            case .notIn:
                // A list holding null matches nothing, as Firestore answers it.
                let list = operand.arrayValue ?? []
                return v != .null && !list.contains(.null) && !list.contains { ValueOrder.equivalent($0, v) }
            }
        }
    }

    /// The filter as Firestore compares it: timestamps inside an array or map operand (`in`,
    /// `not-in`, `array-contains-any`, equality with an array or map) are cut to the microsecond, as
    /// stored values are; a bare timestamp operand is compared as given (as Google's emulator does).
    static func asCompared(_ filter: StructuredQuery.Filter) -> StructuredQuery.Filter {
        switch filter {
        case .and(let filters): .and(filters.map(asCompared))
        case .or(let filters): .or(filters.map(asCompared))
        case .unary: filter
        case .field(let path, let op, let operand):
            switch operand {
            case .array, .map: .field(path, op, FirestoreValue.storable(operand))
            default: filter
            }
        }
    }

    static func isNaN(_ value: FirestoreValue) -> Bool {
        if case .double(let d) = value { return d.isNaN }
        return false
    }
}
