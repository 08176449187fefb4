/// The W3C trace context a request to Google carries: the trace of the event being handled, so
/// Cloud Trace (or the local cloud's console) joins the calls a function made to the event that
/// caused them. Set for the duration of one event with `OutboundTrace.$traceparent.withValue`.
public enum OutboundTrace {
    @TaskLocal public static var traceparent: String?

    /// A `traceparent` for calls made on behalf of `incoming` (the request's own header): the same
    /// trace id, a new span id; nil when `incoming` is not a valid version-00 header.
    public static func child(of incoming: String?, spanID: UInt64 = .random(in: 1...UInt64.max)) -> String? {
        guard let incoming else { return nil }
        let parts = incoming.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count >= 4, parts[0].count == 2, parts[1].count == 32, parts[2].count == 16, parts[3].count == 2,
            parts[1].allSatisfy(\.isHexDigit), parts[3].allSatisfy(\.isHexDigit),
            parts[1] != Substring(String(repeating: "0", count: 32))
        else { return nil }
        let span = String(spanID, radix: 16)
        return "00-\(parts[1].lowercased())-\(String(repeating: "0", count: 16 - span.count))\(span)-\(parts[3])"
    }
}
