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
    /// invalid id in the document's path, and a field name (in the fields written, a mask or a transform) that
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
        func checkReserved(_ value: FirestoreValue) throws(LocalAPIError) {
            switch value {
            case .map(let fields):
                for (key, value) in fields {
                    if FirestoreNames.isReserved(key) { throw .invalidArgument("Invalid field name: \(FirestoreNames.fieldNameProblem(key) ?? key).") }
                    try checkReserved(value)
                }
            case .array(let values): for value in values { try checkReserved(value) }
            default: return
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
            if let mask {
                // What the mask selects is checked as written; in the rest Google's emulator refuses reserved
                // names only (an empty one it lets through, as it is not written).
                for path in mask {
                    try check(path)
                    if let value = FieldPath.value(in: fields, at: path.segments[...]) { try check(value) }
                }
                try checkReserved(.map(fields))
            } else {
                try check(fields)
            }
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
        let (after, results) = write.fields(after: current?.fields, commitTime: commitTime)
        guard let fields = after else { return Outcome(document: nil, transformResults: []) }
        let changed = current == nil || current!.fields != fields
        let document = FirestoreDocument(
            name: write.document, fields: fields,
            createTime: current?.createTime ?? commitTime,
            updateTime: changed ? commitTime : current?.updateTime
        )
        return Outcome(document: document, transformResults: results)
    }
}
