import Foundation
import Logging
import Synchronization

/// Firestore's limit that development never shows: about one sustained write a second per document
/// (the best-practices page; the sharded-counter guide). Every document's writes are tracked: one
/// written more than once a second on average over 10 s is logged as a WARNING, once a minute, with
/// who wrote it, and listed for the console. With `limit` on (`herald dev --write-rate-limit`), a
/// document's writes are admitted as a token bucket (1 a second, a burst of `burst`), and a commit
/// that cannot be admitted within `admissionDeadline` fails as Firestore fails it: ABORTED, "Too much
/// contention on these documents. Please try again." A model of the symptom, not of Firestore's
/// internals: real contention depends on the write mix, indexes and split points.
public final class DocumentWriteRates: Sendable {
    public struct Options: Sendable {
        /// Admit writes at the sustained rate (else only measure).
        public var limit = false
        public var perSecond = 1.0
        public var burst = 5.0
        public var admissionDeadline: Duration = .seconds(5)
        public static let window: Duration = .seconds(10)
        public init() {}
    }

    public struct Hot: Sendable, Equatable {
        public var document: String
        public var perSecond: Double
        /// Writes in the window by writer (a function's name, or "app").
        public var writers: [String: Int]
        /// The highest rate over any window since the document was first written (herald dev's figure).
        public var peakPerSecond: Double
    }

    package struct Document {
        package var writes: [(at: ContinuousClock.Instant, writer: String)] = []
        package var tokens: Double
        package var refilled: ContinuousClock.Instant
        package var warned: ContinuousClock.Instant?
        package var peak: Int = 0
        /// The most writes by functions (not the app) in one window.
        package var peakByFunctions: Int = 0
    }

    /// Since the start: document writes applied (what Firestore bills as writes) and commits refused
    /// for contention (with `limit` on).
    public struct Totals: Sendable, Equatable {
        public var written = 0
        public var refused = 0
    }

    public let options: Options
    package let logger: Logger
    private let documents = Mutex<[String: Document]>([:])
    private let counted = Mutex(Totals())
    package static let maximumTracked = 200_000

    public init(options: Options = Options(), logger: Logger) {
        self.options = options
        self.logger = logger
    }

    /// Waits until every document of a commit may be written (with `limit` on), or throws ABORTED.
    package func admit(_ paths: [String]) async throws(LocalAPIError) {
        guard options.limit, !paths.isEmpty else { return }
        let now = ContinuousClock.now
        let wait: Duration? = documents.withLock { documents in
            var longest: Duration = .zero
            var states: [(String, Document)] = []
            for path in Set(paths) {
                var state = documents[path] ?? Document(tokens: options.burst, refilled: now)
                let elapsed = Double((now - state.refilled) / .milliseconds(1)) / 1000
                state.tokens = min(options.burst, state.tokens + elapsed * options.perSecond)
                state.refilled = now
                // A negative balance is the queue of writes admitted ahead of this one.
                let shortfall = max(0, 1 - state.tokens)
                longest = max(longest, .milliseconds(Int64(shortfall / options.perSecond * 1000)))
                states.append((path, state))
            }
            guard longest <= options.admissionDeadline else { return nil }
            for (path, var state) in states {
                state.tokens -= 1
                documents[path] = state
            }
            return longest
        }
        guard let wait else {
            counted.withLock { $0.refused += 1 }
            throw LocalAPIError(code: 409, status: "ABORTED", message: "Too much contention on these documents. Please try again.")
        }
        if wait > .zero { try? await Task.sleep(for: wait) }
    }

    /// Gives back what `admit` took for a commit that then wrote nothing (a precondition that failed, a
    /// document missing or already there): Firestore's rate is of writes, and such a commit makes none.
    package func refund(_ paths: [String]) {
        guard options.limit, !paths.isEmpty else { return }
        documents.withLock { documents in
            for path in Set(paths) {
                guard var state = documents[path] else { continue }
                state.tokens = min(options.burst, state.tokens + 1)
                documents[path] = state
            }
        }
    }

    /// Records a committed write to each document, and warns about one written too often.
    package func record(_ paths: [String], writer: String) {
        counted.withLock { $0.written += paths.count }
        let now = ContinuousClock.now
        let window = Options.window
        var warnings: [String] = []
        documents.withLock { documents in
            if documents.count > Self.maximumTracked {
                documents = documents.filter { now - ($0.value.writes.last?.at ?? now) < window }
            }
            for path in Set(paths) {
                var state = documents[path] ?? Document(tokens: options.burst, refilled: now)
                state.writes.removeAll { now - $0.at > window }
                state.writes.append((now, writer))
                state.peak = max(state.peak, state.writes.count)
                if writer != "app" { state.peakByFunctions = max(state.peakByFunctions, state.writes.filter { $0.writer != "app" }.count) }
                let perSecond = Double(state.writes.count) / (Double(window / .milliseconds(1)) / 1000)
                if perSecond > options.perSecond, state.warned.map({ now - $0 > .seconds(60) }) ?? true {
                    state.warned = now
                    let by = Dictionary(state.writes.map { ($0.writer, 1) }, uniquingKeysWith: +).sorted { $0.value > $1.value }
                        .map { "\($0.key) \($0.value)" }.joined(separator: ", ")
                    warnings.append(
                        "\(path) was written \(state.writes.count) times in the last 10 s (\(String(format: "%.1f", perSecond))/s; by \(by)): Firestore sustains about one write a second per document, above which commits fail with ABORTED (too much contention)"
                    )
                }
                documents[path] = state
            }
        }
        for warning in warnings { logger.warning("\(warning)") }
    }

    /// Documents written more than the sustained rate over the last 10 s, hottest first.
    public func hot() -> [Hot] {
        let now = ContinuousClock.now
        let seconds = Double(Options.window / .milliseconds(1)) / 1000
        return documents.withLock { documents in
            documents.compactMap { path, state -> Hot? in
                let recent = state.writes.filter { now - $0.at <= Options.window }
                let perSecond = Double(recent.count) / seconds
                guard perSecond > options.perSecond else { return nil }
                return Hot(
                    document: path, perSecond: perSecond, writers: Dictionary(recent.map { ($0.writer, 1) }, uniquingKeysWith: +),
                    peakPerSecond: Double(state.peak) / seconds)
            }.sorted { $0.perSecond > $1.perSecond }
        }
    }

    public var totals: Totals { counted.withLock { $0 } }

    /// The highest rate any document reached over a 10 s window, and which (for load tests); `byFunctions`:
    /// counting the functions' writes only, not the app's.
    public func peak(byFunctions: Bool = false) -> (document: String, perSecond: Double)? {
        let seconds = Double(Options.window / .milliseconds(1)) / 1000
        return documents.withLock { documents in
            let count = { (state: Document) in byFunctions ? state.peakByFunctions : state.peak }
            return documents.max { count($0.value) < count($1.value) }.map { ($0.key, Double(count($0.value)) / seconds) }
        }
    }
}
