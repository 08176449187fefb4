import FirestoreModel
import LocalCloud
import Synchronization
import WireFormats

/// Seeding's own events (each seeded user or token document fires tokenCleanup) as one line once they are handled,
/// instead of two lines per event on the first screen. Only what went well is summed up: a failure,
/// a retry or a warning still gets its own line.
final class SeedingSummary: Sendable {
    private struct State {
        var documents: Set<String> = []
        var active = false
        /// Function → outcome (applied, skipped, …) → events.
        var outcomes: [String: [String: Int]] = [:]
    }
    private let state = Mutex(State())

    func begin(documents: [String]) {
        state.withLock { $0 = State(documents: Set(documents), active: true) }
    }

    /// True (and counted) for a seeded document's event answered 2xx while seeding's events run.
    func absorbs(_ report: DeliveryReport) -> Bool {
        state.withLock { state in
            guard state.active, state.documents.contains(report.document), let status = report.status, (200..<300).contains(status),
                report.error == nil
            else { return false }
            let outcome = report.answer.flatMap(LiveLog.summary).map { $0.hasPrefix("applied") ? "applied" : $0.hasPrefix("skipped") ? "skipped" : $0 }
            state.outcomes[report.trigger, default: [:]][outcome ?? "answered \(status)", default: 0] += 1
            return true
        }
    }

    /// True for a function's INFO or DEBUG line (its Cloud Logging JSON) about a seeded document meanwhile.
    func absorbs(functionLine json: JSONValue?) -> Bool {
        guard state.withLock({ $0.active }), let json,
            let document = json["document"]?.stringValue, ["INFO", "DEBUG"].contains(json["severity"]?.stringValue ?? "INFO")
        else { return false }
        return state.withLock { $0.documents.contains(document) }
    }

    /// Stops summing up, and the line that says what seeding's events did (nil if there were none).
    func end() -> String? {
        let outcomes = state.withLock { state -> [String: [String: Int]] in
            state.active = false
            return state.outcomes
        }
        guard !outcomes.isEmpty else { return nil }
        let total = outcomes.values.flatMap(\.values).reduce(0, +)
        let parts = outcomes.sorted { $0.key < $1.key }.map { function, counts in
            "\(function) " + counts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        }.joined(separator: "; ")
        return "seed    \(total) event\(total == 1 ? "" : "s") from seeding handled: \(parts) (the console's Events lists each)"
    }
}
