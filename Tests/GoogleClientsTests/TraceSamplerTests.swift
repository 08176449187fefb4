import GoogleClients
import Telemetry
import Testing
import Tracing

struct HeaderExtractor: Extractor {
    func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
}

struct TraceSamplerTests {
    static func randomTraceID() -> String { TraceContext.newTrace().traceID }

    @Test func aRatioKeepsThatShareOfTracesAndDecidesEachTraceAlikeEverywhere() {
        let sampler = TraceSampler.ratio(0.25)
        let ids = (0..<20_000).map { _ in Self.randomTraceID() }
        let kept = ids.filter { sampler.samples($0, parentSampled: nil) }
        #expect(abs(Double(kept.count) / Double(ids.count) - 0.25) < 0.02, "\(kept.count) of \(ids.count)")
        #expect(ids.prefix(200).allSatisfy { sampler.samples($0, parentSampled: nil) == sampler.samples($0, parentSampled: true) })
        #expect(!TraceSampler.ratio(0).samples(ids[0], parentSampled: nil) && TraceSampler.ratio(1).samples(ids[0], parentSampled: nil))
    }

    @Test func parentBasedFollowsTheCallerAndDecidesRootsItself() {
        let id = Self.randomTraceID()
        let sampler = TraceSampler.parentBased(root: .never)
        #expect(sampler.samples(id, parentSampled: true) && !sampler.samples(id, parentSampled: false))
        #expect(!sampler.samples(id, parentSampled: nil) && TraceSampler.parentBased(root: .always).samples(id, parentSampled: nil))
        // A recorder with it: an unsampled caller's children are carried on, not kept.
        let recorder = SpanRecorder(sampler: .parentBased(root: .always))
        for (name, flags) in [("ignored", "00"), ("kept", "01")] {
            var context = InstrumentationContext.topLevel
            recorder.extract(["traceparent": "00-\(id)-00f067aa0ba902b7-\(flags)"], into: &context, using: HeaderExtractor())
            recorder.startSpan(name, context: context, ofKind: .server).end()
        }
        #expect(recorder.take().spans.map(\.name) == ["kept"])
    }

    @Test func samplerNamesAreOpenTelemetrysAndBadOnesAreRefused() {
        #expect(TraceSampler(name: "parentbased_traceidratio", argument: "0.1") == .parentBased(root: .ratio(0.1)))
        #expect(TraceSampler(name: "ALWAYS_OFF", argument: nil) == .never)
        #expect(TraceSampler(name: "traceidratio", argument: "1.5") == nil)
        #expect(TraceSampler(name: "traceidratio", argument: "half") == nil)
        #expect(TraceSampler(name: "sometimes", argument: nil) == nil)
    }

    /// A request that starts a trace is decided once: a half of them kept, not a half of a half.
    @Test func aRequestStartingATraceIsSampledOnce() async {
        let recorder = SpanRecorder(capacity: 10_000, sampler: .parentBased(root: .ratio(0.5)))
        for _ in 0..<4_000 {
            await OutboundTrace.handling("event", incoming: nil, recorder: recorder) { span in
                if let span { recorder.startSpan("call", context: span.context, ofKind: .client).end() }
            }
        }
        let spans = recorder.take().spans
        let servers = spans.filter { $0.kind == .server }
        #expect(abs(Double(servers.count) / 4_000 - 0.5) < 0.05, "\(servers.count) of 4,000")
        #expect(spans.count == 2 * servers.count, "every kept request's call is kept with it")
    }
}
