import Tracing

/// The trace a function's outbound calls belong to. A request handled through `handling` continues
/// its caller's W3C trace (Eventarc's or Cloud Scheduler's `traceparent`); every call to Google made
/// within it sends a `traceparent` of that trace, so Cloud Trace (or the local cloud's console) joins
/// the calls to the event that caused them. With a `SpanRecorder`, the request is a server span and
/// each call a client span under it, kept for export; without one, nothing is recorded and the
/// trace is still carried on.
public enum OutboundTrace {
    @TaskLocal public static var recorder: SpanRecorder?

    /// Runs `operation` as the handling of a request whose `traceparent` was `incoming`.
    public static func handling<T: Sendable>(
        _ name: String, incoming: String?, recorder: SpanRecorder?, _ operation: (RecordedSpan?) async -> T
    ) async -> T {
        var context = InstrumentationContext.topLevel
        let caller = TraceContext(traceparent: incoming)
        context.traceContext = caller
        guard let recorder else {
            return await InstrumentationContext.$current.withValue(context) { await operation(nil) }
        }
        // A trace the sampler leaves out costs no span: it is carried on, marked unsampled.
        let trace = caller?.traceID ?? TraceContext.newTrace().traceID
        guard recorder.sampler.samples(trace, parentSampled: caller?.sampled) else {
            context.traceContext = TraceContext(traceID: trace, spanID: caller?.spanID ?? TraceContext.newSpanID(), sampled: false)
            return await InstrumentationContext.$current.withValue(context) { await operation(nil) }
        }
        // As `withSpan` does, without its generic async path (measured: it cost more than the span itself).
        let span = recorder.startSpan(name, context: context, ofKind: .server)
        defer { span.end() }
        return await $recorder.withValue(recorder) {
            await InstrumentationContext.$current.withValue(span.context) { await operation(span) }
        }
    }

    /// One outbound call: its span (when recording) and the `traceparent` it sends (nil outside a handled request).
    static func call(_ name: String) -> (span: RecordedSpan?, traceparent: String?) {
        if let recorder {
            let span = recorder.startSpan(name, ofKind: .client)
            return (span, span.traceContext.traceparent)
        }
        return (nil, InstrumentationContext.current?.traceContext?.child().traceparent)
    }
}
