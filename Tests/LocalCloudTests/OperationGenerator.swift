import FirestoreModel
import Foundation
import GoogleClients
import HeraldTesting
import WireFormats

/// How a generated write states its precondition; `fresh` uses the version the backend last showed.
enum PreconditionSpec: Sendable {
    case none
    case exists(Bool)
    case fresh, stale
}

struct WriteSpec: Sendable {
    var path: String
    var operation: Operation
    var transforms: [FieldTransform]
    var precondition: PreconditionSpec

    enum Operation: Sendable {
        case set([String: FirestoreValue])
        case merge([String: FirestoreValue], [FieldPath])
        case delete, transformOnly
    }

    func write(_ client: FirestoreClient, _ versions: [DocumentName: Timestamp]) throws -> Write {
        let name = try client.name(path)
        let op: Write.Operation =
            switch operation {
            case .set(let fields): .update(name, fields: fields, mask: nil)
            case .merge(let fields, let mask): .update(name, fields: fields, mask: mask)
            case .delete: .delete(name)
            case .transformOnly: .transform(name)
            }
        let precondition: Precondition? =
            switch self.precondition {
            case .none: nil
            case .exists(let b): .exists(b)
            case .fresh: versions[name].map { .updateTime($0) } ?? .exists(false)
            case .stale: .updateTime(Timestamp(seconds: 1_000_000_000))
            }
        return Write(op, transforms: transforms, precondition: precondition)
    }
}

/// One step of a generated sequence, with what it returns described the same way for any backend.
struct Operation: Sendable {
    enum Kind: Sendable {
        case commit([WriteSpec])
        case get([String])
        case query(parent: String?, StructuredQuery)
        case count(StructuredQuery)
        case transaction(reads: [String], writes: [WriteSpec])
        case rolledBack(reads: [String])
    }

    var project: String
    var kind: Kind

    var summary: String { "\(project) \(kind)".prefix(1500).description }

    func run(_ client: FirestoreClient, _ versions: inout [DocumentName: Timestamp]) async throws -> String {
        switch kind {
        case .commit(let specs):
            let writes = try specs.map { try $0.write(client, versions) }
            let result = try await client.commit(writes)
            return "ok " + Self.describe(result) + (try await describe(specs.map(\.path), client, &versions))
        case .get(let paths):
            return try await describe(paths, client, &versions)
        case .query(let parent, let query):
            let documents = try await client.runQuery(query, parent: try parent.map { try client.name($0) })
            return documents.map { "\($0.name.path) \(Self.describe($0.fields))" }.joined(separator: " | ")
        case .count(let query):
            return "count \(try await client.count(query))"
        case .transaction(let reads, let specs):
            let id = try await client.beginTransaction()
            let found = try await client.batchGet(try reads.map { try client.name($0) }, transaction: id)
            let writes = try specs.map { try $0.write(client, versions) }
            let result = try await client.commit(writes, transaction: id)
            return Self.describe(result) + "tx read \(found.values.compactMap { $0 }.count) " + (try await describe(specs.map(\.path), client, &versions))
        case .rolledBack(let reads):
            let id = try await client.beginTransaction()
            _ = try await client.batchGet(try reads.map { try client.name($0) }, transaction: id)
            try await client.rollback(id)
            return "rolled back"
        }
    }

    func describe(_ paths: [String], _ client: FirestoreClient, _ versions: inout [DocumentName: Timestamp]) async throws -> String {
        let names = try Array(Set(paths)).sorted().map { try client.name($0) }
        let found = try await client.batchGet(names)
        return names.map { name in
            guard let document = found[name] ?? nil else {
                versions[name] = nil
                return "\(name.path) missing"
            }
            versions[name] = document.updateTime
            return "\(name.path) \(Self.describe(document.fields))"
        }.joined(separator: " | ")
    }

    /// Each write's transform results (the values Firestore returns for its increments, maxima and
    /// server times), server times shown as SERVER_TIME.
    static func describe(_ result: FirestoreClient.CommitResult) -> String {
        let transforms = result.transformResults.map { values in FirestoreJSON.json(.array(values.map(normalized))).serialized() }
        return "transforms \(transforms.joined(separator: ",")) | "
    }

    static func normalized(_ value: FirestoreValue) -> FirestoreValue {
        switch value {
        case .timestamp(let t) where t.seconds > 1_600_000_000: .string("SERVER_TIME")
        case .array(let items): .array(items.map(normalized))
        case .map(let inner): .map(inner.mapValues(normalized))
        default: value
        }
    }

    /// Fields as canonical JSON, with server-set times (anything after 2020) shown as SERVER_TIME.
    static func describe(_ fields: [String: FirestoreValue]) -> String { FirestoreJSON.json(fields.mapValues(normalized)).serialized() }
}

/// Random operations over a small space of documents and values, so that they collide often.
enum OperationGenerator {
    static let paths = ["c/d0", "c/d1", "c/d2", "c/d3", "c/d4", "c/d0/s/e0", "c/d0/s/e1", "c/d1/s/e0", "g/x0", "g/x1"]
    static let fieldNames = ["a", "b", "n", "tags", "m"]

    static func pick<T>(_ items: [T], _ rng: inout SeededRandom) -> T { items.randomElement(using: &rng)! }
    static func chance(_ p: Double, _ rng: inout SeededRandom) -> Bool { Double.random(in: 0..<1, using: &rng) < p }

    static func scalar(_ rng: inout SeededRandom) -> FirestoreValue {
        pick(
            [
                .null, .boolean(true), .boolean(false), .integer(-1), .integer(0), .integer(1), .integer(2), .integer(3),
                .double(1.5), .double(2.0), .double(-0.5), .string(""), .string("a"), .string("b"), .string("c"),
                .timestamp(Timestamp(seconds: 978_307_200)), .timestamp(Timestamp(seconds: 978_307_201, nanos: 5000)),
                .timestamp(Timestamp(seconds: 978_307_201, nanos: 5_999)),
            ], &rng)
    }

    static func value(for field: String, hostile: Bool = false, _ rng: inout SeededRandom) -> FirestoreValue {
        switch field {
        case "tags":
            return .array((0..<Int.random(in: 0...3, using: &rng)).map { _ in pick([.string("a"), .string("b"), .integer(1), .double(1.0), .null], &rng) })
        case "m":
            // Now and then a key Firestore refuses (reserved, empty): both must refuse the write. Not in a
            // transaction: Google's emulator keeps a refused transaction's locks until they time out.
            if hostile, chance(0.04, &rng) { return .map([pick(["__r__", ""], &rng): .integer(1)]) }
            return .map(["x": scalar(&rng), "y": pick([.integer(1), .string("y")], &rng)])
        default: return chance(0.1, &rng) ? .array([scalar(&rng)]) : scalar(&rng)
        }
    }

    static func fields(hostile: Bool, _ rng: inout SeededRandom) -> [String: FirestoreValue] {
        var fields: [String: FirestoreValue] = [:]
        for name in fieldNames where chance(0.6, &rng) { fields[name] = value(for: name, hostile: hostile, &rng) }
        return fields
    }

    static func transform(_ rng: inout SeededRandom) -> FieldTransform {
        switch Int.random(in: 0...6, using: &rng) {
        case 0: return FieldTransform(FieldPath("n"), .increment(pick([.integer(1), .integer(-2), .double(0.5)], &rng)))
        case 1: return FieldTransform(FieldPath("n"), .maximum(pick([.integer(2), .double(2.5), .integer(-5)], &rng)))
        case 2: return FieldTransform(FieldPath("n"), .minimum(pick([.integer(0), .double(1.0), .integer(7)], &rng)))
        case 3: return FieldTransform(FieldPath("tags"), .appendMissingElements([pick([.string("a"), .string("z"), .integer(1)], &rng), .double(1.0)]))
        case 4: return FieldTransform(FieldPath("tags"), .removeAllFromArray([pick([.string("a"), .integer(1), .null], &rng)]))
        case 5: return FieldTransform(FieldPath("m", "count"), .increment(.integer(1)))
        default: return FieldTransform(FieldPath("t"), .setToRequestTime)
        }
    }

    static func writeSpec(hostile: Bool = true, _ rng: inout SeededRandom) -> WriteSpec {
        let path = pick(paths, &rng)
        let operation: WriteSpec.Operation
        switch Int.random(in: 0...9, using: &rng) {
        case 0...3: operation = .set(fields(hostile: hostile, &rng))
        case 4...6:
            let mask = pick(
                [[FieldPath("a")], [FieldPath("a"), FieldPath("b")], [FieldPath("m", "x")], [FieldPath("n"), FieldPath("zz")], [FieldPath("tags")]], &rng)
            operation = .merge(fields(hostile: hostile, &rng), mask)
        case 7: operation = .delete
        default: operation = .transformOnly
        }
        var transforms: [FieldTransform] = []
        if case .delete = operation {
        } else {
            let count = if case .transformOnly = operation { Int.random(in: 1...2, using: &rng) } else { chance(0.3, &rng) ? 1 : 0 }
            transforms = (0..<count).map { _ in transform(&rng) }
        }
        let precondition: PreconditionSpec =
            switch Int.random(in: 0...9, using: &rng) {
            case 0...4: .none
            case 5: .exists(true)
            case 6: .exists(false)
            case 7, 8: .fresh
            default: .stale
            }
        return WriteSpec(path: path, operation: operation, transforms: transforms, precondition: precondition)
    }

    static func filter(_ rng: inout SeededRandom, depth: Int = 0) -> StructuredQuery.Filter {
        let field = pick([FieldPath("a"), FieldPath("b"), FieldPath("n"), FieldPath("m", "x")], &rng)
        switch Int.random(in: 0...(depth == 0 ? 9 : 7), using: &rng) {
        case 0: return .unary(field, pick([.isNull, .isNotNull, .isNaN, .isNotNaN], &rng))
        case 1: return .field(FieldPath("tags"), .arrayContains, pick([.string("a"), .integer(1), .double(1.0)], &rng))
        case 2: return .field(FieldPath("tags"), .arrayContainsAny, .array([.string("b"), .integer(1)]))
        case 3: return .field(field, .in, .array([scalar(&rng), scalar(&rng)]))
        case 4: return .field(field, .notIn, .array([scalar(&rng)]))
        case 5...7:
            return .field(field, pick([.equal, .notEqual, .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual], &rng), scalar(&rng))
        case 8: return .and([filter(&rng, depth: 1), filter(&rng, depth: 1)])
        default: return .or([filter(&rng, depth: 1), filter(&rng, depth: 1)])
        }
    }

    static func query(_ rng: inout SeededRandom) -> (String?, StructuredQuery) {
        let (parent, collection, group): (String?, String, Bool) = pick(
            [(nil, "c", false), (nil, "c", false), ("c/d0", "s", false), (nil, "s", true), (nil, "g", false)], &rng)
        var query = StructuredQuery(collectionID: collection, allDescendants: group)
        if chance(0.7, &rng) { query.filter = filter(&rng) }
        if chance(0.4, &rng) {
            query.orderBy = [StructuredQuery.Order(pick([FieldPath("a"), FieldPath("n"), FieldPath("b")], &rng), pick([.ascending, .descending], &rng))]
        }
        if chance(0.3, &rng) { query.limit = Int.random(in: 1...3, using: &rng) }
        if chance(0.15, &rng) { query.offset = Int.random(in: 1...2, using: &rng) }
        if chance(0.15, &rng), !query.orderBy.isEmpty { query.startAt = .init(values: [scalar(&rng)], before: Bool.random(using: &rng)) }
        if chance(0.1, &rng), !query.orderBy.isEmpty { query.endAt = .init(values: [scalar(&rng)], before: Bool.random(using: &rng)) }
        return (parent, query)
    }

    static func next(_ rng: inout SeededRandom, project: String) -> Operation {
        switch Int.random(in: 0...19, using: &rng) {
        case 0...8:
            return Operation(project: project, kind: .commit((0..<Int.random(in: 1...3, using: &rng)).map { _ in writeSpec(&rng) }))
        case 9, 10:
            return Operation(project: project, kind: .get((0..<Int.random(in: 1...3, using: &rng)).map { _ in pick(paths, &rng) }))
        case 11...15:
            let (parent, query) = query(&rng)
            return Operation(project: project, kind: .query(parent: parent, query))
        case 16:
            var (_, query) = query(&rng)
            (query.limit, query.offset, query.startAt, query.endAt) = (nil, nil, nil, nil)
            return Operation(project: project, kind: .count(query))
        case 17, 18:
            return Operation(project: project, kind: .transaction(reads: [pick(paths, &rng), pick(paths, &rng)], writes: [writeSpec(hostile: false, &rng)]))
        default:
            return Operation(project: project, kind: .rolledBack(reads: [pick(paths, &rng)]))
        }
    }
}
