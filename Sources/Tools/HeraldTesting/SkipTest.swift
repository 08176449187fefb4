#if canImport(Testing)
import Testing

/// Ends the running test (or test case) as not run, with the reason in the runner's output
/// (`➜ Test … was cancelled: "reason"`), so a run without a tool does not look like a run with it.
public func skipTest(_ reason: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Never {
    try Test.cancel(Comment(rawValue: reason), sourceLocation: sourceLocation)
}

/// Records a failure in the running test, which goes on.
public func recordFailure(_ message: String) { Issue.record(Comment(rawValue: message)) }
#else
/// Outside a test run (the benchmarks link this module in release builds, without Swift Testing), a
/// skip is an error that names what is missing, and a failure is the caller's to report.
public struct TestSkipped: Error, CustomStringConvertible {
    public var description: String
}

public func skipTest(_ reason: String) throws -> Never { throw TestSkipped(description: reason) }
public func recordFailure(_ message: String) {}
#endif
