import FirestoreModel
import GoogleClients
import HeraldCore

/// An instance's reads of documents: gathered into one `batchGet` when its lanes are busy, each caller
/// getting its own documents, and every document read shown to the commit coalescer, which makes its
/// shared writes conditional on the versions the plans saw.
struct DocumentReads: Sendable {
    let gatherer: RequestGatherer<[DocumentName], [DocumentName: FirestoreDocument?]>
    let commits: CommitCoalescer

    init(_ firestore: any FirestoreAPI, commits: CommitCoalescer) {
        self.gatherer = Self.gatherer(firestore)
        self.commits = commits
    }

    static func gatherer(
        _ firestore: any FirestoreAPI, lanes: Int = 1, maximum: Int = 300, patience: Duration = .milliseconds(250)
    ) -> RequestGatherer<[DocumentName], [DocumentName: FirestoreDocument?]> {
        RequestGatherer(
            lanes: lanes, maximum: maximum, patience: patience, size: { $0.count },
            send: { parts in
                let found = try await firestore.batchGet(Array(Set(parts.joined())), transaction: nil)
                return parts.map { names in
                    Dictionary(Set(names).compactMap { name in found[name].map { (name, $0) } }, uniquingKeysWith: { first, _ in first })
                }
            })
    }

    /// The documents found and those missing; a failure as what the trigger should do about it.
    func callAsFunction(_ names: [DocumentName]) async throws -> DocumentsRead {
        do {
            var read = DocumentsRead()
            for (name, document) in try await gatherer(names) {
                if let document { read.found[name] = document } else { read.missing.insert(name) }
            }
            await commits.observe(Array(read.found.values))
            return read
        } catch { throw DownstreamError.from(firestore: error) }
    }
}
