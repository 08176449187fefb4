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
        // The sampler decides once per request; a trace it leaves out costs no span: it is carried on, flagged unsampled.
        let own = caller?.child() ?? TraceContext.newTrace()
        let sampled = recorder.sampler.samples(own.traceID, parentSampled: caller?.sampled)
        guard sampled else {
            context.traceContext = TraceContext(traceID: own.traceID, spanID: own.spanID, sampled: false)
            return await InstrumentationContext.$current.withValue(context) { await operation(nil) }
        }
        // What `withSpan` does (start, make current, end), with the ids and decision made above.
        let span = recorder.startSpan(
            name, own: TraceContext(traceID: own.traceID, spanID: own.spanID, sampled: true), parentSpanID: caller?.spanID,
            context: context, kind: .server, start: DefaultTracerClock.now.nanosecondsSinceEpoch)
        defer { span.end() }
        return await $recorder.withValue(recorder) {
            await InstrumentationContext.$current.withValue(span.context) { await operation(span) }
        }
    }

    /// One outbound call: its span (when recording) and the `traceparent` it sends (nil outside a handled request).
    public static func call(_ name: String) -> (span: RecordedSpan?, traceparent: String?) {
        if let recorder {
            let span = recorder.startSpan(name, ofKind: .client)
            return (span, span.traceContext.traceparent)
        }
        return (nil, InstrumentationContext.current?.traceContext?.child().traceparent)
    }
}
