import FirestoreModel
import Synchronization
import WireFormats

/// The functions' own log lines (their Cloud Logging JSON), the newest `capacity` of them, for the
/// console's Logs view: each with its function, and the trace that links it to its event.
final class FunctionLogBook: Sendable {
    let capacity: Int
    private let lines = Mutex<(next: Int64, kept: [JSONValue])>((1, []))

    init(capacity: Int = 2000) { self.capacity = capacity }

    /// `json`: the line as parsed (nil for one that is not JSON: not kept).
    func append(_ json: JSONValue?, function: String) {
        guard let json, let message = json["message"]?.stringValue else { return }
        // `projects/P/traces/ID`, as Cloud Logging wants it: the console links by the ID.
        let trace = json["logging.googleapis.com/trace"]?.stringValue.map { String($0.split(separator: "/").last ?? "") }
        lines.withLock { book in
            book.kept.append([
                "id": .integer(book.next), "function": .string(function), "time": json["time"] ?? .null,
                "severity": json["severity"] ?? "INFO", "message": .string(String(message.prefix(2000))),
                "traceId": trace.map { .string($0) } ?? .null, "eventId": json["eventId"] ?? .null, "document": json["document"] ?? .null,
            ])
            book.next += 1
            if book.kept.count > capacity { book.kept.removeFirst(book.kept.count - capacity) }
        }
    }

    /// `{"lines": [...]}`, newest first.
    func json(limit: Int) -> JSONValue {
        ["lines": .array(lines.withLock { Array($0.kept.suffix(limit).reversed()) })]
    }
}
