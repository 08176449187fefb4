/// What one write does to a document's fields, as Firestore applies it in a commit: the update (the
/// masked fields, or all of them), then each transform in order. Pure: the local cloud applies commits
/// with it, and the runtime sizes a plan's writes with it before they are sent.
extension Write {
    /// The document's fields after this write, and each transform's result as
    /// `WriteResult.transformResults` reports it. `current` is the document before (nil: absent); a
    /// delete leaves no fields.
    public func fields(after current: [String: FirestoreValue]?, commitTime: Timestamp) -> (
        fields: [String: FirestoreValue]?, transformResults: [FirestoreValue]
    ) {
        var fields: [String: FirestoreValue]
        switch operation {
        case .delete:
            return (nil, [])
        case .update(_, let updateFields, let mask):
            if let mask {
                fields = current ?? [:]
                for path in mask {
                    FieldPath.set(FieldPath.value(in: updateFields, at: path.segments[...]), in: &fields, at: path.segments[...])
                }
            } else {
                fields = updateFields
            }
        case .transform:
            fields = current ?? [:]
        }
        var results: [FirestoreValue] = []
        results.reserveCapacity(transforms.count)
        for transform in transforms {
            let path = transform.field.segments[...]
            let (value, result) = transform.operation.applied(to: FieldPath.value(in: fields, at: path), commitTime: commitTime)
            FieldPath.set(value, in: &fields, at: path)
            results.append(result)
        }
        return (fields.mapValues(FirestoreValue.storable), results)
    }
}

extension FieldTransform.Operation {
    /// The field's new value, and the transform's result as `WriteResult.transformResults` reports it.
    public func applied(to current: FirestoreValue?, commitTime: Timestamp) -> (value: FirestoreValue, result: FirestoreValue) {
        switch self {
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
            if current.isNaN { return (current, current) }
            if operand.isNaN { return (operand, operand) }
            let order = ValueOrder.compare(operand, current)
            let takeOperand: Bool
            if case .maximum = self { takeOperand = order > 0 } else { takeOperand = order < 0 }
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
}

extension FirestoreValue {
    /// The value as Firestore keeps it: timestamps to the microsecond (it truncates finer digits).
    public static func storable(_ value: FirestoreValue) -> FirestoreValue {
        switch value {
        case .timestamp(let time) where time.nanos % 1000 != 0: .timestamp(Timestamp(seconds: time.seconds, nanos: time.nanos / 1000 * 1000))
        case .array(let values): .array(values.map(storable))
        case .map(let members): .map(members.mapValues(storable))
        default: value
        }
    }

    var isNaN: Bool {
        if case .double(let d) = self { return d.isNaN }
        return false
    }
}
