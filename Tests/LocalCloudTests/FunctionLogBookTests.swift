import FirestoreModel
import Testing
import WireFormats

@testable import HeraldCLI

/// The console's Logs: the functions' Cloud Logging lines, bounded, newest first, each with its trace.
@Suite struct FunctionLogBookTests {
    @Test func keepsTheNewestLinesWithTheirTraceAndSkipsWhatIsNotALogLine() throws {
        let book = FunctionLogBook(capacity: 3)
        for n in 1...5 {
            book.append(
                try JSONValue(
                    parsing:
                        #"{"severity":"INFO","message":"line \#(n)","time":"2026-11-26T06:00:0\#(n)Z","logging.googleapis.com/trace":"projects/p/traces/abc\#(n)","eventId":"e\#(n)"}"#
                ),
                function: "onMessageCreated")
        }
        book.append(nil, function: "onMessageCreated")  // not JSON at all
        book.append(try JSONValue(parsing: #"{"severity":"INFO"}"#), function: "tokenCleanup")
        let lines = try #require(book.json(limit: 10)["lines"]?.arrayValue)
        #expect(lines.map { $0["message"]?.stringValue } == ["line 5", "line 4", "line 3"])
        #expect(lines.first?["traceId"] == "abc5" && lines.first?["eventId"] == "e5" && lines.first?["function"] == "onMessageCreated")
        #expect(book.json(limit: 1)["lines"]?.arrayValue?.count == 1)
    }
}
