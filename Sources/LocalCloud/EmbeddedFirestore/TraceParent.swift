/// W3C trace context as the local cloud uses it: each delivery carries a new trace, and the calls a
/// function makes for that event come back with the same trace id, which ties them to the event.
package enum TraceParent {
    /// The trace id of a `traceparent` header (`00-<32 hex>-<16 hex>-<2 hex>`), lowercased; nil if malformed.
    package static func traceID(_ header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count >= 4, parts[1].count == 32, parts[1].allSatisfy(\.isHexDigit), parts[1].contains(where: { $0 != "0" }) else {
            return nil
        }
        return parts[1].lowercased()
    }

    package static func newTraceID() -> String { hex(.random(in: 1...UInt64.max)) + hex(.random(in: 0...UInt64.max)) }

    /// The header a delivery of the event with trace `traceID` carries (a new span id each attempt).
    package static func header(traceID: String) -> String { "00-\(traceID)-\(hex(.random(in: 1...UInt64.max)))-01" }

    package static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
