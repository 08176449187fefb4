import Foundation
import HeraldTesting
import Testing

/// A real browser for tests: Debian's Chromium, driven by Playwright for Python (which cannot download
/// its own browsers here). Missing, a test skips; in CI (`CI=true`) a missing one fails.
enum Browser {
    static var chromium: String? {
        [ProcessInfo.processInfo.environment["HERALD_CHROMIUM"], "/usr/bin/chromium", "/usr/bin/chromium-browser"].compactMap { $0 }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Python with Playwright, and Chromium's path.
    static func forTest() async throws -> (python: URL, chromium: String) {
        let python = try await PythonReference.forTest(importing: "playwright")
        guard let chromium else {
            let message = "no Chromium (apt-get install chromium, or set HERALD_CHROMIUM)"
            if PythonReference.isRequired { Issue.record(Comment(rawValue: message)) }
            try skipTest(message)
        }
        return (python, chromium)
    }
}
