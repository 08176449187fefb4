import Synchronization
import Tracing

/// A swift-distributed-tracing `Tracer` that keeps finished spans for an exporter to take
/// (`TraceExporter` sends them over OTLP). Spans follow W3C trace context: a span started in a
/// context that carries one (an event's `traceparent`) is its child; an unsampled parent's children
/// are carried on but not kept. At most `capacity` spans wait; more are counted as dropped, so a
/// collector that is down costs memory no more than that.
public final class SpanRecorder: Tracer, Sendable {
    public let capacity: Int
    public let sampler: TraceSampler
    let waiting = Mutex<(spans: [FinishedSpan], dropped: Int)>(([], 0))

    public init(capacity: Int = 4096, sampler: TraceSampler = .parentBased(root: .always)) {
        self.capacity = capacity
        self.sampler = sampler
    }

    public func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> InstrumentationContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> RecordedSpan {
        let context = context()
        let parent = context.traceContext
        let fresh = parent?.child() ?? TraceContext.newTrace()
        let own = TraceContext(traceID: fresh.traceID, spanID: fresh.spanID, sampled: sampler.samples(fresh.traceID, parentSampled: parent?.sampled))
        return startSpan(operationName, own: own, parentSpanID: parent?.spanID, context: context, kind: kind, start: instant().nanosecondsSinceEpoch)
    }

    /// A span whose own context (ids and sampling) is already decided.
    func startSpan(_ name: String, own: TraceContext, parentSpanID: String?, context: InstrumentationContext, kind: SpanKind, start: UInt64)
        -> RecordedSpan
    {
        var context = context
        context.traceContext = own
        return RecordedSpan(name: name, context: context, parentSpanID: parentSpanID, kind: kind, start: start, recorder: own.sampled ? self : nil)
    }

    /// Takes every finished span waiting, and how many were dropped since the last take.
    public func take() -> (spans: [FinishedSpan], dropped: Int) {
        waiting.withLock { waiting in
            defer { waiting = ([], 0) }
            return waiting
        }
    }

    /// Puts back spans an export could not deliver, ahead of the newer ones, within the capacity.
    public func putBack(_ spans: [FinishedSpan]) {
        waiting.withLock { waiting in
            let kept = spans.prefix(max(0, capacity - waiting.spans.count))
            waiting.dropped += spans.count - kept.count
            waiting.spans.insert(contentsOf: kept, at: 0)
        }
    }

    public var waitingCount: Int { waiting.withLock { $0.spans.count } }

    func keep(_ span: FinishedSpan) {
        waiting.withLock { waiting in
            if waiting.spans.count < capacity { waiting.spans.append(span) } else { waiting.dropped += 1 }
        }
    }

    public func forceFlush() {}

    public func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout InstrumentationContext, using extractor: Extract)
    where Extract.Carrier == Carrier {
        if let incoming = TraceContext(traceparent: extractor.extract(key: "traceparent", from: carrier)) { context.traceContext = incoming }
    }

    public func inject<Carrier, Inject: Injector>(_ context: InstrumentationContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {
        if let own = context.traceContext { injector.inject(own.traceparent, forKey: "traceparent", into: &carrier) }
    }
}

/// A span as it is exported: names, ids, times in nanoseconds since 1970, attributes and status.
public struct FinishedSpan: Sendable {
    public var name: String
    public var context: TraceContext
    public var parentSpanID: String?
    public var kind: SpanKind
    public var start: UInt64
    public var end: UInt64
    public var attributes: SpanAttributes
    public var status: SpanStatus?
    public var events: [SpanEvent]
}

public final class RecordedSpan: Span {
    public let context: InstrumentationContext
    let recorder: SpanRecorder?
    let state: Mutex<(span: FinishedSpan, ended: Bool)>

    init(name: String, context: InstrumentationContext, parentSpanID: String?, kind: SpanKind, start: UInt64, recorder: SpanRecorder?) {
        self.context = context
        self.recorder = recorder
        let span = FinishedSpan(
            name: name, context: context.traceContext!, parentSpanID: parentSpanID, kind: kind, start: start, end: start,
            attributes: [:], status: nil, events: [])
        state = Mutex((span, false))
    }

    /// This span's own trace context: what calls made within it send as `traceparent`.
    public var traceContext: TraceContext { state.withLock { $0.span.context } }

    public var operationName: String {
        get { state.withLock { $0.span.name } }
        set { state.withLock { $0.span.name = newValue } }
    }

    public var attributes: SpanAttributes {
        get { state.withLock { $0.span.attributes } }
        set { state.withLock { $0.span.attributes = newValue } }
    }

    public var isRecording: Bool { recorder != nil && !state.withLock { $0.ended } }

    public func setStatus(_ status: SpanStatus) { state.withLock { $0.span.status = status } }

    public func addEvent(_ event: SpanEvent) { state.withLock { $0.span.events.append(event) } }

    public func recordError<Instant: TracerInstant>(_ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant) {
        var attributes = attributes
        attributes["exception.message"] = "\(error)"
        addEvent(SpanEvent(name: "exception", at: instant(), attributes: attributes))
    }

    public func addLink(_ link: SpanLink) {}

    public func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) {
        let finished: FinishedSpan? = state.withLock { state in
            guard !state.ended else { return nil }
            state.ended = true
            state.span.end = max(state.span.start, instant().nanosecondsSinceEpoch)
            return state.span
        }
        if let finished { recorder?.keep(finished) }
    }
}
