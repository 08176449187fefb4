import FirestoreModel
import Logging
import Synchronization
import WireFormats

#if canImport(Glibc)
import Glibc
#endif

/// Writes one line per log record to stdout: Google Cloud Logging's structured JSON
/// (`severity`, `message`, `time`, `logging.googleapis.com/trace`, metadata as fields), or plain
/// text for a person at a terminal.
public struct CloudLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level
    public var metadataProvider: Logger.MetadataProvider?
    let label: String
    let format: RuntimeConfiguration.LogFormat
    let sink: LineSink

    public init(label: String, level: Logger.Level, format: RuntimeConfiguration.LogFormat, sink: LineSink = .standardOutput) {
        self.label = label
        self.logLevel = level
        self.format = format
        self.sink = sink
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        let time = Timestamp.now()
        switch format {
        case .json:
            var fields: [(key: String, value: JSONValue)] = [
                ("severity", .string(Self.severity(event.level))), ("message", .string(event.message.description)),
                ("time", .string(time.rfc3339)), ("logger", .string(label)),
            ]
            fields.reserveCapacity(4 + merged.count)
            for (key, value) in merged {
                // Metadata named like one of the four replaces it.
                if let own = fields.prefix(4).firstIndex(where: { $0.key == key }) {
                    fields[own].value = Self.json(value)
                } else {
                    fields.append((key, Self.json(value)))
                }
            }
            sink.write(JSONValue.serializedObject(fields))
        case .text:
            let meta = merged.isEmpty ? "" : " " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            sink.write("\(time.rfc3339) \(Self.severity(event.level)) \(label): \(event.message)\(meta)")
        }
    }

    static func severity(_ level: Logger.Level) -> String {
        switch level {
        case .trace, .debug: "DEBUG"
        case .info: "INFO"
        case .notice: "NOTICE"
        case .warning: "WARNING"
        case .error: "ERROR"
        case .critical: "CRITICAL"
        }
    }

    static func json(_ value: Logger.Metadata.Value) -> JSONValue {
        switch value {
        case .string(let s): .string(s)
        case .stringConvertible(let c): .string(c.description)
        case .array(let a): .array(a.map(json))
        case .dictionary(let d): .object(d.mapValues(json))
        }
    }
}

/// Where log lines go. Lines from concurrent requests never interleave; each is written before
/// `write` returns.
public final class LineSink: Sendable {
    private let write: @Sendable (String) -> Void
    /// Whether lines are written one at a time here (false: the writer keeps them apart itself).
    private let serialized: Bool
    private let lock = Mutex(())

    public init(_ write: @escaping @Sendable (String) -> Void) {
        self.write = write
        serialized = true
    }

    private init(keepingLinesApart write: @escaping @Sendable (String) -> Void) {
        self.write = write
        serialized = false
    }

    /// stdout, one line per record. A closed stdout loses the line rather than stopping the function.
    public static let standardOutput = LineSink(keepingLinesApart: StandardOutput().write)

    public func write(_ line: String) {
        if serialized { lock.withLock { _ in write(line) } } else { write(line) }
    }
}

/// Lines to stdout without one lock around every write: a line of at most `PIPE_BUF` bytes is one
/// `write(2)`, which the kernel keeps whole (a pipe, as Cloud Run collects stdout, a file, a terminal),
/// so such lines share the lock; a longer line, written in parts, takes it alone. One lock held through
/// each system call had the two event loops waiting on each other (a futex) every other event.
final class StandardOutput: @unchecked Sendable {
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    init() {
        lock = .allocate(capacity: 1)
        pthread_rwlock_init(lock, nil)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    func write(_ line: String) {
        var text = line
        text.append("\n")
        text.withUTF8 { bytes in
            if bytes.count <= Int(PIPE_BUF) { pthread_rwlock_rdlock(lock) } else { pthread_rwlock_wrlock(lock) }
            defer { pthread_rwlock_unlock(lock) }
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(STDOUT_FILENO, bytes.baseAddress! + offset, bytes.count - offset)
                if written <= 0 { return }
                offset += written
            }
        }
    }
}

extension Logger {
    /// A logger for one function process, writing in the configured format.
    public static func herald(_ label: String, configuration: RuntimeConfiguration, sink: LineSink = .standardOutput) -> Logger {
        Logger(label: label) { label in
            CloudLogHandler(label: label, level: configuration.logLevel, format: configuration.logFormat, sink: sink)
        }
    }
}

/// The trace id of a request, from W3C `traceparent` or Google's `X-Cloud-Trace-Context`.
enum TraceContext {
    static func traceID(headers: [String: String]) -> String? {
        if let parent = headers["traceparent"] {
            let parts = parent.split(separator: "-")
            if parts.count >= 4, parts[1].count == 32, parts[1].allSatisfy(\.isHexDigit), parts[1] != String(repeating: "0", count: 32) {
                return String(parts[1]).lowercased()
            }
        }
        if let cloud = headers["x-cloud-trace-context"], let id = cloud.split(separator: "/").first,
            !id.isEmpty, id.count <= 32, id.allSatisfy(\.isHexDigit)
        {
            return String(id).lowercased()
        }
        return nil
    }

    /// The value of `logging.googleapis.com/trace`, which Cloud Logging wants with the project.
    static func loggingField(traceID: String, project: String) -> String { "projects/\(project)/traces/\(traceID)" }
}
