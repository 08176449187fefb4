import Foundation
import HeraldTesting
import Testing

/// `herald schema infer --from DIR` on 20,000 documents any client could have written (markup and
/// control characters in texts, maps nested 20 deep, hundreds of odd field names, times of every type
/// and year 9999): an answer in seconds, in bounded memory, and no crash.
@Suite struct HostileExportInferenceTests {
    static func hostileExport() throws -> URL {
        let hostile = #"<script>alert(1)</script>\u0000\u001b[31m\u202e'\"$(touch x)`id`; DROP TABLE"#
        func deep(_ levels: Int) -> String { levels == 0 ? #"{"stringValue":"bottom"}"# : #"{"mapValue":{"fields":{"d":\#(deep(levels - 1))}}}"# }
        let deepMap = deep(19)  // with its field: 20 levels, the most Firestore takes
        let oddFields = (0..<120).map { #""f.\#($0) `\#($0)` ✓":{"integerValue":"\#($0)"}"# }.joined(separator: ",")
        var lines: [String] = []
        lines.reserveCapacity(20_000)
        for user in 0..<50 {
            lines.append(DataAtRestTests.line("users/u\(user)", #"{"name":{"stringValue":"\#(hostile)"},"fcmToken":{"stringValue":"\#(hostile)"}}"#))
        }
        for room in 0..<2_000 {
            lines.append(
                DataAtRestTests.line(
                    "rooms/r\(room)",
                    #"{"members":{"arrayValue":{"values":[{"stringValue":"u\#(room % 50)"},{"stringValue":"u\#((room + 1) % 50)"}]}},"title":{"stringValue":"\#(hostile)"},"deep":\#(deepMap)}"#
                ))
        }
        for message in 0..<18_000 {
            let time =
                switch message % 4 {
                case 0: #"{"timestampValue":"9999-12-31T23:59:59Z"}"#
                case 1: #"{"integerValue":"-9223372036854775808"}"#
                case 2: #"{"doubleValue":"NaN"}"#
                default: #"{"stringValue":"tomorrow"}"#
                }
            lines.append(
                DataAtRestTests.line(
                    "rooms/r\(message % 2_000)/posts/p\(message)",
                    #"{"authorId":{"stringValue":"u\#(message % 50)"},"body":{"stringValue":"\#(String(repeating: hostile, count: 8))"},"sentAt":\#(time),"deep":\#(deepMap),\#(oddFields)}"#
                ))
        }
        return try DataAtRestTests.export(lines)
    }

    @Test func aHostileExportOf20000DocumentsIsReadInSecondsAndBoundedMemory() async throws {
        let export = try Self.hostileExport()
        defer { try? FileManager.default.removeItem(at: export) }
        // Python's getrusage reads the child's CPU time and peak resident memory: CPU time, not the wall
        // clock, which the rest of a test run on the same cores stretches.
        let script = """
            import resource, subprocess, sys
            run = subprocess.run(sys.argv[1:], capture_output=True)
            usage = resource.getrusage(resource.RUSAGE_CHILDREN)
            print(run.returncode, usage.ru_utime + usage.ru_stime, usage.ru_maxrss)
            sys.stderr.write(run.stderr.decode(errors="replace")[-2000:])
            """
        let run = try await ProcessRunner.run(
            URL(fileURLWithPath: "/usr/bin/python3"), ["-c", script, TestPaths.executable("herald").path, "schema", "infer", "--from", export.path])
        let figures = run.stdoutText.split(separator: " ").map(String.init)
        let status = Int(figures.first ?? "") ?? -1
        let seconds = Double(figures.count > 1 ? figures[1] : "") ?? .infinity
        let peakKB = Int(figures.count > 2 ? figures[2].trimmingCharacters(in: .whitespacesAndNewlines) : "") ?? .max
        print("schema infer on a hostile export of 20,000 documents: \(String(format: "%.1f", seconds)) s of CPU, peak \(peakKB / 1024) MB")
        #expect(status == 0, "status \(status): \(run.stderr)")
        #expect(seconds < 30, "\(seconds) s of CPU")
        // Bounded by the bytes kept (24 MB of documents), not by what the export holds (about 70 MB).
        #expect(peakKB < 128 * 1024, "\(peakKB) kB")
    }
}
