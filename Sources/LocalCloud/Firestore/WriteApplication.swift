import FirestoreModel

/// What one `Write` does to one document, as Firestore applies it inside a commit. Pure.
enum WriteApplication {
    struct Outcome {
        var document: FirestoreDocument?
        var transformResults: [FirestoreValue]
    }

    static func check(_ precondition: Precondition?, _ current: FirestoreDocument?, name: DocumentName) throws(LocalAPIError) {
        switch precondition {
        case nil: return
        case .exists(true) where current == nil:
            throw .notFound("No document to update: \(name.resourceName)")
        case .exists(false) where current != nil:
            throw .alreadyExists("Document already exists: \(name.resourceName)")
        case .updateTime(let required):
            guard let current, current.updateTime == required else {
                throw .failedPrecondition(
                    "the stored version (\(current?.updateTime?.rfc3339 ?? "none")) does not match the required base version (\(required.rfc3339))")
            }
        default: return
        }
    }

    /// Several writes to one document in one commit: the combinations Firestore refuses before it
    /// looks at any data (as Google's emulator answers them).
    static func checkCombination(_ writes: [Write]) throws(LocalAPIError) {
        var earlier: [DocumentName: [Write]] = [:]
        for write in writes {
            defer { earlier[write.document, default: []].append(write) }
            guard let before = earlier[write.document] else { continue }
            if case .delete? = before.last?.operation, write.precondition == .exists(true) || isVersioned(write.precondition) {
                let kind = if case .delete = write.operation { "delete" } else { "update" }
                throw .invalidArgument("Cannot delete then \(kind) an entity in the same request.")
            }
            if isVersioned(write.precondition), before.contains(where: { $0.precondition != write.precondition }) {
                throw .invalidArgument("Cannot collapse mutations with different version preconditions on \(write.document.path).")
            }
            if write.precondition == .exists(false), let last = before.last(where: { if case .delete = $0.operation { false } else { true } }) {
                let kind =
                    switch last.precondition {
                    case .exists(true)?, .updateTime?: "update"
                    case .exists(false)?: "insert"
                    case nil: "upsert"
                    }
                throw .invalidArgument("Cannot \(kind) then insert an entity in the same request.")
            }
        }
    }

    /// The names a write gives that Firestore refuses, as Google's emulator refuses them: a reserved or
    /// invalid id in the document's path, and a field name (in the fields, a mask or a transform) that
    /// is empty, reserved or over 1,500 bytes, which production Firestore refuses though the emulator
    /// lets a long one through (and a document holding one could not be read back).
    static func checkNames(_ write: Write) throws(LocalAPIError) {
        for segment in write.document.segments {
            if let problem = FirestoreNames.idProblem(segment) {
                throw .invalidArgument("Resource id \(FirestoreNames.quoted(segment)) is invalid: \(problem).")
            }
        }
        func check(_ path: FieldPath) throws(LocalAPIError) {
            for segment in path.segments {
                if let problem = FirestoreNames.fieldNameProblem(segment) { throw .invalidArgument("Invalid field path \(path): \(problem).") }
            }
        }
        func check(_ fields: [String: FirestoreValue]) throws(LocalAPIError) {
            for (key, value) in fields {
                if let problem = FirestoreNames.fieldNameProblem(key) { throw .invalidArgument("Invalid field name: \(problem).") }
                try check(value)
            }
        }
        func check(_ value: FirestoreValue) throws(LocalAPIError) {
            switch value {
            case .map(let fields): try check(fields)
            case .array(let values): for value in values { try check(value) }
            default: return
            }
        }
        if case .update(_, let fields, let mask) = write.operation {
            try check(fields)
            for path in mask ?? [] { try check(path) }
        }
        for transform in write.transforms { try check(transform.field) }
    }

    static func isVersioned(_ precondition: Precondition?) -> Bool {
        if case .updateTime? = precondition { return true }
        return false
    }

    /// Applies `write` to `current`. Firestore collapses a commit's writes to one document into one
    /// mutation: a version precondition is checked once, against the document before the commit
    /// (`isFirst`), and existence ones against the document as the earlier writes left it.
    static func apply(_ write: Write, to current: FirestoreDocument?, isFirst: Bool, commitTime: Timestamp) throws(LocalAPIError) -> Outcome {
        if isFirst || !isVersioned(write.precondition) { try check(write.precondition, current, name: write.document) }
        var fields: [String: FirestoreValue]
        switch write.operation {
        case .delete:
            return Outcome(document: nil, transformResults: [])
        case .update(_, let updateFields, let mask):
            if let mask {
                fields = current?.fields ?? [:]
                for path in mask {
                    FieldPath.set(FieldPath.value(in: updateFields, at: path.segments[...]), in: &fields, at: path.segments[...])
                }
            } else {
                fields = updateFields
            }
        case .transform:
            fields = current?.fields ?? [:]
        }
        var results: [FirestoreValue] = []
        for transform in write.transforms {
            let path = transform.field.segments[...]
            let (value, result) = apply(transform.operation, to: FieldPath.value(in: fields, at: path), commitTime: commitTime)
            FieldPath.set(value, in: &fields, at: path)
            results.append(result)
        }
        fields = fields.mapValues(Self.storable)
        let changed = current == nil || current!.fields != fields
        let document = FirestoreDocument(
            name: write.document, fields: fields,
            createTime: current?.createTime ?? commitTime,
            updateTime: changed ? commitTime : current?.updateTime
        )
        return Outcome(document: document, transformResults: results)
    }

    /// A value as Firestore keeps it: timestamps to the microsecond (it truncates finer digits).
    static func storable(_ value: FirestoreValue) -> FirestoreValue {
        switch value {
        case .timestamp(let time) where time.nanos % 1000 != 0: .timestamp(Timestamp(seconds: time.seconds, nanos: time.nanos / 1000 * 1000))
        case .array(let values): .array(values.map(storable))
        case .map(let members): .map(members.mapValues(storable))
        default: value
        }
    }

    /// The field's new value, and the transform's result as `WriteResult.transformResults` reports it.
    static func apply(_ operation: FieldTransform.Operation, to current: FirestoreValue?, commitTime: Timestamp) -> (FirestoreValue, FirestoreValue) {
        switch operation {
        case .setToRequestTime:
            return (.timestamp(commitTime), .timestamp(commitTime))
        case .increment(let operand):
            let value: FirestoreValue
            switch (current, operand) {
            case (.integer(let a)?, .integer(let b)):
                let (sum, overflow) = a.addingReportingOverflow(b)
                value = .integer(overflow ? (b > 0 ? .max : .min) : sum)
            case (.integer(let a)?, .double(let b)): value = .double(Double(a) + b)
            case (.double(let a)?, .integer(let b)): value = .double(a + Double(b))
            case (.double(let a)?, .double(let b)): value = .double(a + b)
            default: value = operand
            }
            return (value, value)
        case .maximum(let operand), .minimum(let operand):
            guard let current, ValueOrder.typeRank(current) == 2 else { return (operand, operand) }
            let isMaximum = operationIsMaximum(operation)
            if isNaN(current) { return (current, current) }
            if isNaN(operand) { return (operand, operand) }
            let c = ValueOrder.compare(operand, current)
            let takeOperand = isMaximum ? c > 0 : c < 0
            let value = takeOperand ? operand : current
            return (value, value)
        case .appendMissingElements(let elements):
            var array = current?.arrayValue ?? []
            for element in elements where !array.contains(where: { ValueOrder.equivalent($0, element) }) {
                array.append(element)
            }
            return (.array(array), .null)
        case .removeAllFromArray(let elements):
            let array = (current?.arrayValue ?? []).filter { item in !elements.contains { ValueOrder.equivalent($0, item) } }
            return (.array(array), .null)
        }
    }

    static func operationIsMaximum(_ operation: FieldTransform.Operation) -> Bool {
        if case .maximum = operation { return true }
        return false
    }

    static func isNaN(_ value: FirestoreValue) -> Bool {
        if case .double(let d) = value { return d.isNaN }
        return false
    }
}
