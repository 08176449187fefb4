import FirestoreModel
import GoogleClients
import HeraldCore

/// The counts pushes carry (a user's badge), as Firestore committed them.
///
/// A plan computes a badge from what it read; when two events for one user run side by side, each read
/// before the other's commit and both would send a stale count. So a push carries the value its own
/// commit produced (`transformResults`), or, when another delivery made that commit, the value stored
/// now. And since pushes of different events can still leave in another order than their commits, the
/// executor reads the counts again once its pushes are out and sends a badge-only correction to every
/// device whose count changed meanwhile: whichever push a device gets last was checked against the
/// store after it left.
struct CommittedCounts: Sendable {
    private(set) var values: [CountSource: FirestoreValue] = [:]

    /// Records what each write's transforms produced (the last transform on a field is its final value).
    mutating func record(_ writes: [Write], _ result: FirestoreClient.CommitResult) {
        for (write, results) in zip(writes, result.transformResults) {
            for (transform, value) in zip(write.transforms, results) {
                values[CountSource(document: write.document, field: transform.field)] = value
            }
        }
    }
}

extension CountSource {
    /// Recorded for a device whose badge is not known (a correction not known to have gone out): no
    /// stored count is equal to it, so the next check corrects the device.
    static let unknownBadge = -1
}
