import Foundation

/// Runs `count` operations with at most `inFlight` at once and records how long each took.
struct TimedRun {
    /// Each operation's duration, shortest first.
    var latencies: [Duration]
    var elapsed: Duration

    static func measure(count: Int, inFlight: Int, _ operation: @escaping @Sendable (Int) async throws -> Void) async throws -> TimedRun {
        let clock = ContinuousClock()
        let start = clock.now
        let latencies = try await withThrowingTaskGroup(of: Duration.self) { group in
            var next = 0
            var latencies: [Duration] = []
            func launch(_ i: Int) {
                group.addTask {
                    let t0 = clock.now
                    try await operation(i)
                    return clock.now - t0
                }
            }
            while next < min(inFlight, count) {
                launch(next)
                next += 1
            }
            for try await latency in group {
                latencies.append(latency)
                if next < count {
                    launch(next)
                    next += 1
                }
            }
            return latencies
        }
        return TimedRun(latencies: latencies.sorted(), elapsed: clock.now - start)
    }

    /// Appends another run's figures, as if both were one.
    mutating func add(_ other: TimedRun) {
        latencies = (latencies + other.latencies).sorted()
        elapsed += other.elapsed
    }

    static let empty = TimedRun(latencies: [], elapsed: .zero)

    func perSecond(_ items: Int) -> Double { Double(items) / Self.seconds(elapsed) }
    func percentile(_ p: Int) -> String { Self.milliseconds(latencies[min(latencies.count - 1, latencies.count * p / 100)]) }
    var maximum: String { Self.milliseconds(latencies.last ?? .zero) }

    static func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
    static func milliseconds(_ d: Duration) -> String { String(format: "%.2f ms", seconds(d) * 1000) }
}
