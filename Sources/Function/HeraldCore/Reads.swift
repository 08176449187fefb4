import FirestoreEvents
import FirestoreModel

/// What a plan reads, as it reads it. A plan asks for documents in the order its behaviour needs them
/// (the conversation, then its members); whatever is not read yet stops the plan with `NotReadYet`,
/// naming everything that step wants. The runtime reads it all in one batch and plans again, so a
/// function reads top to bottom in one place while Firestore sees one request per step.
public struct Reads: Sendable {
    public private(set) var read: DocumentsRead

    public init(_ read: DocumentsRead = DocumentsRead()) { self.read = read }

    /// The document, or nil if it does not exist.
    public func document(_ name: DocumentName) throws(NotReadYet) -> FirestoreDocument? {
        if let document = read[name] { return document }
        if read.missing.contains(name) { return nil }
        throw NotReadYet(documents: [name])
    }

    /// The documents that exist among `names`, by name.
    public func documents(_ names: [DocumentName]) throws(NotReadYet) -> [DocumentName: FirestoreDocument] {
        try need(documents: names)
        var found: [DocumentName: FirestoreDocument] = [:]
        for name in names { found[name] = read[name] }
        return found
    }

    /// Every document of a small collection under a document (a user's push tokens).
    public func collection(_ path: CollectionPath) throws(NotReadYet) -> [FirestoreDocument] {
        try need(collections: [path])
        return read.collections[path] ?? []
    }

    /// The documents found by a value they hold (at most `ValueLookup.maximumFound`).
    public func lookUp(_ lookup: ValueLookup) throws(NotReadYet) -> [FirestoreDocument] {
        try need(lookups: [lookup])
        return read.lookups[lookup] ?? []
    }

    /// Asks for several things in one step, so they are read in one batch; returns once all are read.
    public func need(documents: [DocumentName] = [], collections: [CollectionPath] = [], lookups: [ValueLookup] = []) throws(NotReadYet) {
        // A plan asks again for what it read in earlier steps each time it runs: that answer is cheap.
        if documents.allSatisfy(isRead), collections.allSatisfy({ read.collections[$0] != nil }), lookups.allSatisfy({ read.lookups[$0] != nil }) {
            return
        }
        let wanted = NotReadYet(
            documents: documents.filter { read[$0] == nil && !read.missing.contains($0) },
            collections: collections.filter { read.collections[$0] == nil },
            lookups: lookups.filter { read.lookups[$0] == nil })
        if !wanted.isEmpty { throw wanted }
    }

    private func isRead(_ name: DocumentName) -> Bool { read[name] != nil || read.missing.contains(name) }

    /// Adds what a batch found; names asked for and not found are known missing.
    public mutating func add(_ more: DocumentsRead, asked: NotReadYet) {
        if read.found.isEmpty {
            read.found = more.found
        } else {
            read.found.merge(more.found) { _, new in new }
        }
        for name in asked.documents where more.found[name] == nil { read.missing.insert(name) }
        if !more.missing.isEmpty { read.missing.formUnion(more.missing) }
        for path in asked.collections { read.collections[path] = more.collections[path] ?? [] }
        for lookup in asked.lookups { read.lookups[lookup] = more.lookups[lookup] ?? [] }
    }
}

/// What a plan needs read before it can go on.
public struct NotReadYet: Error, Sendable, Hashable {
    public var documents: [DocumentName]
    public var collections: [CollectionPath]
    public var lookups: [ValueLookup]

    public init(documents: [DocumentName] = [], collections: [CollectionPath] = [], lookups: [ValueLookup] = []) {
        self.documents = documents
        self.collections = collections
        self.lookups = lookups
    }

    public var isEmpty: Bool { documents.isEmpty && collections.isEmpty && lookups.isEmpty }
}

extension EventFunction {
    /// The plan from documents at hand (a snapshot, a test's world): whatever it asks for that `documents`
    /// lacks is missing. Also returns what each step asked for, in order.
    public func plan(for change: DocumentChange, from documents: [FirestoreDocument]) -> (plan: Plan, steps: [NotReadYet]) {
        let world = Dictionary(documents.map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
        return plan(for: change, startingWith: Reads()) { DocumentsRead.answering($0, from: world) }
    }

    /// The plan from what was read already: whatever else it asks for is missing (lists and lookups empty).
    public func plan(for change: DocumentChange, given read: DocumentsRead) -> (plan: Plan, steps: [NotReadYet]) {
        plan(for: change, startingWith: Reads(read)) { _ in DocumentsRead() }
    }

    /// What the plan asks for first, before anything is read; nil when it needs nothing.
    public func firstReads(for change: DocumentChange) -> NotReadYet? {
        do {
            _ = try plan(for: change, reading: Reads())
            return nil
        } catch { return error }
    }

    func plan(
        for change: DocumentChange, startingWith start: Reads,
        answering answer: (NotReadYet) -> DocumentsRead
    ) -> (plan: Plan, steps: [NotReadYet]) {
        var steps = PlanSteps(self, for: change, startingWith: start)
        while true {
            switch steps.next() {
            case .planned(let plan): return (plan, steps.asked)
            case .read(let wanted): steps.add(answer(wanted), asked: wanted)
            case .gaveUp: return (.skip("the function kept asking for more documents after \(steps.asked.count) steps"), steps.asked)
            }
        }
    }

    /// A plan that keeps asking for more is stopped after this many reads.
    public static var maximumReadSteps: Int { 4 }
}

/// Plans one change step by step: plan with what is read; when the plan stops on `NotReadYet`, the
/// caller reads what it names (from Firestore, a snapshot or a test's documents), adds it, and asks
/// again. The one loop the runtime (`EventProcessor`) and the tests both run, so a plan a test
/// passes is planned the same way in production.
public struct PlanSteps<Function: EventFunction>: Sendable {
    public enum Next: Sendable {
        /// The plan, made from what is read.
        case planned(Plan)
        /// Read this, `add` it, and ask again.
        case read(NotReadYet)
        /// It kept asking for more after `Function.maximumReadSteps` reads.
        case gaveUp
    }

    public let function: Function
    public let change: DocumentChange
    public private(set) var reads: Reads
    /// What each read asked for, in order.
    public private(set) var asked: [NotReadYet] = []

    public init(_ function: Function, for change: DocumentChange, startingWith reads: Reads = Reads()) {
        self.function = function
        self.change = change
        self.reads = reads
    }

    public func next() -> Next {
        do {
            return .planned(try function.plan(for: change, reading: reads))
        } catch {
            return asked.count < Function.maximumReadSteps ? .read(error) : .gaveUp
        }
    }

    /// What a read found for `wanted` (which may ask for more than the step did: a prediction).
    public mutating func add(_ read: DocumentsRead, asked wanted: NotReadYet) {
        reads.add(read, asked: wanted)
        asked.append(wanted)
    }
}

extension DocumentsRead {
    /// What `wanted` finds among `documents`: each document found or missing, each collection's
    /// documents, each lookup's first `ValueLookup.maximumFound` matches (by name).
    public static func answering(_ wanted: NotReadYet, from documents: [DocumentName: FirestoreDocument]) -> DocumentsRead {
        var read = DocumentsRead()
        for name in wanted.documents {
            if let document = documents[name] { read.found[name] = document } else { read.missing.insert(name) }
        }
        for path in wanted.collections { read.collections[path] = documents.values.filter { path.contains($0.name) }.sorted { $0.name < $1.name } }
        for lookup in wanted.lookups {
            read.lookups[lookup] = Array(documents.values.filter(lookup.matches).sorted { $0.name < $1.name }.prefix(ValueLookup.maximumFound))
        }
        return read
    }
}
