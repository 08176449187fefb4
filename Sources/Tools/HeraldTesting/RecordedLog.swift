import HeraldRuntime
import Logging
import Synchronization

/// A logger whose lines a test keeps, to show them when an expectation fails.
public final class RecordedLog: Sendable {
    private let lines = Mutex<[String]>([])
    public init() {}

    public func logger(_ label: String, level: Logger.Level = .debug) -> Logger {
        let sink = LineSink { line in self.lines.withLock { $0.append(line) } }
        return Logger(label: label) { label in CloudLogHandler(label: label, level: level, format: .text, sink: sink) }
    }

    /// Every line so far, one per line.
    public var text: String { lines.withLock { $0.joined(separator: "\n") } }
}
