import EmbeddedFirestore
import FirestoreModel
import Foundation
import GoogleClients
import HeraldCore
import LocalCloud
import ServiceLifecycle
import Synchronization

/// With `herald dev --firestore HOST:PORT` the documents live in another Firestore (Google's
/// emulator, say). One that takes triggers (Google's emulator: `EmulatorTriggers`) sends each write's
/// event itself, and this watcher stays idle. One that does not is polled: the watcher reads the
/// collections the triggers name and turns each difference into the event Eventarc would send.
/// Changes between two polls coalesce into one event, and the first poll is the baseline.
final class ExternalFirestoreWatcher: Service, Sendable {
    let firestore: FirestoreClient
    let cloud: LocalCloud
    let interval: Duration
    /// Set once the Firestore sends its own events: nothing to poll.
    let exactTriggers = Atomic<Bool>(false)

    init(firestore: FirestoreClient, cloud: LocalCloud, interval: Duration = .milliseconds(250)) {
        self.firestore = firestore
        self.cloud = cloud
        self.interval = interval
    }

    func run() async throws {
        var known: [DocumentName: FirestoreDocument]?
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            if exactTriggers.load(ordering: .relaxed) {
                try? await Task.sleep(for: interval)
                continue
            }
            do {
                let now = try await snapshot()
                if let before = known {
                    let changes = Set(before.keys).union(now.keys).sorted().compactMap { name -> LocalFirestore.Change? in
                        let (old, new) = (before[name], now[name])
                        return old?.updateTime == new?.updateTime && (old == nil) == (new == nil)
                            ? nil : LocalFirestore.Change(name: name, before: old, after: new)
                    }
                    if !changes.isEmpty {
                        let time = changes.compactMap { $0.after?.updateTime }.max() ?? Timestamp.now()
                        try await cloud.enqueueEvents(for: changes, at: time)
                    }
                }
                known = now
            } catch {
                // The external Firestore is away for a moment: keep the last snapshot and look again.
            }
            try? await Task.sleep(for: interval)
        }
    }

    /// Every document that some trigger's pattern matches, read by collection group.
    func snapshot() async throws -> [DocumentName: FirestoreDocument] {
        let triggers = cloud.triggers.all.map { Trigger(pattern: $0.pattern, kinds: [$0.kind]) }
        let groups = Set(
            triggers.compactMap { trigger -> String? in
                let segments = trigger.pattern.split(separator: "/")
                return segments.count >= 2 ? String(segments[segments.count - 2]) : nil
            })
        var documents: [DocumentName: FirestoreDocument] = [:]
        for group in groups.sorted() {
            try await firestore.forEachPage(of: StructuredQuery(collectionID: group, allDescendants: true)) { page in
                for document in page where triggers.contains(where: { $0.match(document.name) != nil }) {
                    documents[document.name] = document
                }
            }
        }
        return documents
    }
}
