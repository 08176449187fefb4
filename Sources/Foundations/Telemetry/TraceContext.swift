import Tracing

/// A W3C trace context (https://www.w3.org/TR/trace-context/), what a `traceparent` header carries:
/// `00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`.
public struct TraceContext: Sendable, Hashable {
    /// 32 lowercase hex digits, not all zero.
    public let traceID: String
    /// 16 lowercase hex digits, not all zero.
    public let spanID: String
    /// The caller's sampling decision (flag 01): an unsampled trace is carried on but not recorded.
    public let sampled: Bool

    public init(traceID: String, spanID: String, sampled: Bool) {
        self.traceID = traceID
        self.spanID = spanID
        self.sampled = sampled
    }

    /// Reads a version-00 header (or a later version's first four fields, as the spec asks); nil when malformed.
    public init?(traceparent header: String?) {
        guard let header, header.utf8.count <= 512 else { return nil }
        let parts = header.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count >= 4, parts[0].count == 2, parts[0] != "ff", parts[0] == "00" ? parts.count == 4 : true,
            parts[1].count == 32, parts[2].count == 16, parts[3].count == 2,
            parts.prefix(4).allSatisfy({ $0.allSatisfy(\.isHexDigit) }),
            parts[1].contains(where: { $0 != "0" }), parts[2].contains(where: { $0 != "0" }),
            let flags = UInt8(parts[3], radix: 16)
        else { return nil }
        self.init(traceID: parts[1].lowercased(), spanID: parts[2].lowercased(), sampled: flags & 1 == 1)
    }

    public var traceparent: String { "00-\(traceID)-\(spanID)-\(sampled ? "01" : "00")" }

    /// The same trace, a new span.
    public func child() -> TraceContext { TraceContext(traceID: traceID, spanID: Self.newSpanID(), sampled: sampled) }

    public static func newTrace() -> TraceContext { TraceContext(traceID: newSpanID() + hex(.random(in: 0...UInt64.max)), spanID: newSpanID(), sampled: true) }

    public static func newSpanID() -> String { hex(.random(in: 1...UInt64.max)) }

    static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}

enum TraceContextKey: InstrumentationContextKey {
    typealias Value = TraceContext
    static var nameOverride: String? { "traceparent" }
}

extension InstrumentationContext {
    /// The span this context belongs to, as W3C trace context.
    public var traceContext: TraceContext? {
        get { self[TraceContextKey.self] }
        set { self[TraceContextKey.self] = newValue }
    }
}
