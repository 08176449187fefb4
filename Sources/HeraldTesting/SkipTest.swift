#if canImport(Testing)
import Testing

/// Ends the running test (or test case) as not run, with the reason in the runner's output
/// (`➜ Test … was cancelled: "reason"`), so a run without a tool does not look like a run with it.
public func skipTest(_ reason: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Never {
    try Test.cancel(Comment(rawValue: reason), sourceLocation: sourceLocation)
}
#endif
