import FirestoreModel

extension Plan {
    /// The plan without the writes that would take a document it read past Firestore's size limit, each
    /// named in a warning. Any client can fill a document to just under the limit (a conversation with a
    /// huge description, a message of 1 MB); the commit that adds a last message or an unread mark would
    /// then be refused as a whole, every retry, and nobody would be notified or counted. A write in
    /// `writes` is left out alone; a recipient's group goes whole or not at all, so their count, badge
    /// and mark stay together.
    public func fittingDocumentLimits(_ read: DocumentsRead) -> Plan {
        guard decision == .apply else { return self }
        var known: [DocumentName: FirestoreDocument?] = [:]
        for name in read.missing { known[name] = .some(nil) }
        for (name, document) in read.found { known[name] = document }
        for documents in read.collections.values { for document in documents { known[document.name] = document } }
        for documents in read.lookups.values { for document in documents { known[document.name] = document } }

        // Cheap first: the documents written, their sizes as read and what the writes can add at most.
        var bound: [DocumentName: Int] = [:]
        for write in writes + groups.joined() {
            guard let document = known[write.document] else { continue }
            bound[write.document, default: document.map(DocumentSize.of) ?? 0] += DocumentSize.growthBound(of: write)
        }
        guard bound.values.contains(where: { $0 > DocumentSize.maximumBytes }) else { return self }

        var simulation = DocumentSimulation(known: known)
        var fitted = self
        fitted.writes = writes.filter { write in
            guard let problem = simulation.apply([write]) else { return true }
            fitted.warnings.append("\(problem): that write is left out")
            return false
        }
        fitted.groups = groups.filter { group in
            guard let problem = simulation.apply(group) else { return true }
            fitted.warnings.append("\(problem): a recipient's writes (\(group.map(\.document.path).joined(separator: ", "))) are left out")
            return false
        }
        return fitted
    }
}

/// The documents a plan read, as its writes would leave them, with their sizes.
struct DocumentSimulation {
    var known: [DocumentName: FirestoreDocument?]
    var fields: [DocumentName: [String: FirestoreValue]?] = [:]

    init(known: [DocumentName: FirestoreDocument?]) { self.known = known }

    /// Applies the writes together, or, if one would take its document past the limit, none of them
    /// and says which.
    mutating func apply(_ writes: [Write]) -> String? {
        var changed: [DocumentName: [String: FirestoreValue]?] = [:]
        for write in writes {
            let name = write.document
            guard let before = changed[name] ?? fields[name] ?? known[name].map({ $0?.fields }) else { continue }
            let after = write.fields(after: before, commitTime: Timestamp(seconds: 0, nanos: 0)).fields
            if let after {
                let size = DocumentSize.of(name: name, fields: after)
                if size > DocumentSize.maximumBytes {
                    return "\(name.path) would be \(size) bytes, over Firestore's limit of \(DocumentSize.maximumBytes)"
                }
            }
            changed[name] = .some(after)
        }
        fields.merge(changed) { _, new in new }
        return nil
    }
}
