/// Which traces are recorded, as OpenTelemetry's `OTEL_TRACES_SAMPLER` names them. The decision is
/// the trace's, not the span's: every span of a trace, in every process, decides alike.
public enum TraceSampler: Sendable, Equatable {
    case always
    case never
    /// This fraction of traces, chosen by trace id (the same trace is chosen everywhere).
    case ratio(Double)
    /// As the caller decided (its `traceparent` flag), and `root` for traces that start here.
    indirect case parentBased(root: TraceSampler)

    public func samples(_ traceID: String, parentSampled: Bool?) -> Bool {
        switch self {
        case .always: return true
        case .never: return false
        case .ratio(let fraction):
            guard fraction < 1 else { return true }
            guard fraction > 0, let low = UInt64(traceID.suffix(16), radix: 16) else { return false }
            return Double(low) < fraction * Double(UInt64.max)
        case .parentBased(let root):
            return parentSampled ?? root.samples(traceID, parentSampled: nil)
        }
    }

    /// `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG`; nil for a name or fraction it does not know.
    public init?(name: String, argument: String?) {
        let fraction = argument.map { Double($0) } ?? 1.0
        guard let fraction, (0...1).contains(fraction) else { return nil }
        switch name.lowercased() {
        case "always_on": self = .always
        case "always_off": self = .never
        case "traceidratio": self = .ratio(fraction)
        case "parentbased_always_on": self = .parentBased(root: .always)
        case "parentbased_always_off": self = .parentBased(root: .never)
        case "parentbased_traceidratio": self = .parentBased(root: .ratio(fraction))
        default: return nil
        }
    }
}
