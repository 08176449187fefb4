import FirestoreModel
import GoogleClients
import HeraldHTTPClient
import Logging
import NIOCore
import NIOHTTP1
import Synchronization
import Telemetry
import WireFormats

/// Where one kind of OTLP data goes, from OpenTelemetry's standard variables: `OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT`
/// (the full URL) or `OTEL_EXPORTER_OTLP_ENDPOINT` (+ `/v1/<signal>`), `OTEL_EXPORTER_OTLP_<SIGNAL>_HEADERS` or
/// `OTEL_EXPORTER_OTLP_HEADERS` (`key=value,…`, e.g. a collector's API key). OTLP/HTTP with JSON
/// bodies (`http/json`), which every OpenTelemetry Collector takes on its port 4318.
public struct OTLPEndpointSettings: Sendable {
    public var endpoint: String
    /// Sent with every export; values may be secrets and are never logged.
    var headers: [(String, String)]

    /// nil when no endpoint is set for `signal` (`traces`, `metrics`); appends what is wrong to `problems`.
    static func reading(signal: String, _ value: (String) -> String?, problems: inout [String]) -> OTLPEndpointSettings? {
        let upper = signal.uppercased()
        let endpoint =
            value("OTEL_EXPORTER_OTLP_\(upper)_ENDPOINT")
            ?? value("OTEL_EXPORTER_OTLP_ENDPOINT").map { $0.hasSuffix("/") ? $0 + "v1/\(signal)" : $0 + "/v1/\(signal)" }
        guard let endpoint else { return nil }
        if let url = try? HTTPURL(endpoint), !url.hasQuery {
        } else {
            problems.append("the OTLP \(signal) endpoint must be an http(s) URL, not \"\(endpoint)\"")
        }
        for key in ["OTEL_EXPORTER_OTLP_\(upper)_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"] {
            if let proto = value(key), proto != "http/json" {
                problems.append("\(key) is \(proto): Herald exports \(signal) as http/json (OTLP/HTTP, JSON), which a collector takes on :4318")
            }
        }
        var headers: [(String, String)] = []
        for pair in (value("OTEL_EXPORTER_OTLP_\(upper)_HEADERS") ?? value("OTEL_EXPORTER_OTLP_HEADERS") ?? "").split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            let key = parts.first.map { $0.trimmingWhitespace } ?? ""
            guard parts.count == 2, !key.isEmpty, key.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
                // The value may be a secret: only the key is named.
                problems.append("OTEL_EXPORTER_OTLP_HEADERS must be key=value pairs separated by commas (near \"\(key.prefix(40))\")")
                continue
            }
            headers.append((key, percentDecoded(String(parts[1].trimmingWhitespace))))
        }
        return OTLPEndpointSettings(endpoint: endpoint, headers: headers)
    }

    /// The spec's header values are percent-encoded (`Bearer%20abc`); a malformed escape stays as written.
    static func percentDecoded(_ text: String) -> String {
        let utf8 = Array(text.utf8)
        var bytes: [UInt8] = []
        var index = 0
        while index < utf8.count {
            if utf8[index] == UInt8(ascii: "%"), index + 2 < utf8.count,
                let byte = UInt8(String(decoding: utf8[index + 1...index + 2], as: UTF8.self), radix: 16)
            {
                bytes.append(byte)
                index += 3
            } else {
                bytes.append(utf8[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Where spans go (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`, …) and which are
/// kept (`OTEL_TRACES_SAMPLER`). Off when no endpoint is set or `OTEL_TRACES_EXPORTER=none`.
public struct TraceExportSettings: Sendable {
    public var target: OTLPEndpointSettings
    public var endpoint: String { target.endpoint }
    public var service: String?
    /// `OTEL_TRACES_SAMPLER` (default `parentbased_always_on`: as the caller decided, every trace that starts here).
    public var sampler: TraceSampler

    /// nil when traces are off; appends what is wrong to `problems`.
    static func reading(_ value: (String) -> String?, problems: inout [String]) -> TraceExportSettings? {
        if value("OTEL_TRACES_EXPORTER")?.lowercased() == "none" { return nil }
        if let exporter = value("OTEL_TRACES_EXPORTER"), exporter.lowercased() != "otlp" {
            problems.append("OTEL_TRACES_EXPORTER must be otlp or none, not \"\(exporter)\"")
        }
        guard let target = OTLPEndpointSettings.reading(signal: "traces", value, problems: &problems) else { return nil }
        var sampler = TraceSampler.parentBased(root: .always)
        if let name = value("OTEL_TRACES_SAMPLER") {
            if let chosen = TraceSampler(name: name, argument: value("OTEL_TRACES_SAMPLER_ARG")) {
                sampler = chosen
            } else {
                problems.append(
                    """
                    OTEL_TRACES_SAMPLER must be always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or \
                    parentbased_traceidratio, with OTEL_TRACES_SAMPLER_ARG a fraction from 0 to 1; not "\(name)" "\(value("OTEL_TRACES_SAMPLER_ARG") ?? "")"
                    """)
            }
        }
        return TraceExportSettings(target: target, service: value("OTEL_SERVICE_NAME"), sampler: sampler)
    }
}

/// Posts OTLP/HTTP JSON bodies to one endpoint. A failure is said once in the log until exports work
/// again; the caller learns whether the data is worth sending again.
final class OTLPSender: Sendable {
    let target: OTLPEndpointSettings
    /// What is sent, for the log: `spans`, `metrics`.
    let what: String
    let httpClient: HTTPTransport
    let logger: Logger
    let failing = Mutex(false)

    init(target: OTLPEndpointSettings, what: String, httpClient: HTTPTransport, logger: Logger) {
        self.target = target
        self.what = what
        self.httpClient = httpClient
        self.logger = logger
    }

    var isFailing: Bool { failing.withLock { $0 } }

    /// False when the data is worth sending again: no answer, 429 or 5xx (OTLP's retryable answers).
    /// A collector that refuses it otherwise would refuse it again: it is dropped.
    func send(_ body: String, describing count: String) async -> Bool {
        var request = HTTPRequest(url: target.endpoint)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/json")
        for (name, value) in target.headers { request.headers.add(name: name, value: value) }
        request.body = (ByteBuffer(string: body))
        var problem: String?
        var retryable = true
        do {
            let response = try await httpClient.execute(request, timeout: .seconds(5), maximumBodySize: 64 * 1024)
            let answer = response.body
            if !(200..<300).contains(response.status.code) {
                problem = "HTTP \(response.status.code): \(String(buffer: answer).prefix(200))"
                retryable = response.status.code == 429 || response.status.code >= 500
            }
        } catch {
            // Stopping mid-export: kept for the last export, which runs outside the cancelled task.
            if Task.isCancelled { return false }
            problem = "\(error)"
        }
        let wasFailing = failing.withLock { failing in
            defer { failing = problem != nil }
            return failing
        }
        if let problem, !wasFailing {
            logger.warning("cannot export \(count) to \(target.endpoint): \(problem) (said once until exports work again)")
        } else if problem == nil, wasFailing {
            logger.info("exporting \(what) to \(target.endpoint) again")
        }
        return problem == nil || !retryable
    }
}

/// Sends what a `SpanRecorder` keeps to the collector, once a second and once more at shutdown.
/// An export that fails is kept for the next (within the recorder's bound: spans are best effort,
/// and an event never waits for one) and said once in the log until exports work again.
public final class TraceExporter: Sendable {
    public let recorder: SpanRecorder
    let settings: TraceExportSettings
    let service: String
    let sender: OTLPSender
    let logger: Logger
    let drops = Mutex<(count: Int, saidAt: ContinuousClock.Instant?)>((0, nil))

    public init(recorder: SpanRecorder, settings: TraceExportSettings, service: String, httpClient: HTTPTransport = .shared, logger: Logger) {
        self.recorder = recorder
        self.settings = settings
        self.service = settings.service ?? service
        sender = OTLPSender(target: settings.target, what: "spans", httpClient: httpClient, logger: logger)
        self.logger = logger
    }

    /// Exports every second until cancelled.
    public func run(every interval: Duration = .seconds(1)) async {
        // Stopping cancels the sleep: the last export is the caller's, outside the cancelled task.
        while (try? await Task.sleep(for: interval)) != nil {
            await export()
        }
    }

    /// Sends every span waiting now, in batches of at most 512. What cannot be sent is put back for
    /// the next export (a collector starting beside the function takes a moment), up to the
    /// recorder's capacity.
    public func export() async {
        let (spans, dropped) = recorder.take()
        // Said at most once a minute, with what was dropped since: under a sustained load it would say so every second.
        let droppedSince: Int? = drops.withLock { drops in
            drops.count += dropped
            guard drops.count > 0, drops.saidAt.map({ .now - $0 >= .seconds(60) }) ?? true else { return nil }
            defer { drops = (0, .now) }
            return drops.count
        }
        if let droppedSince, !sender.isFailing {
            logger.warning(
                "dropped \(droppedSince) spans (more than \(recorder.capacity) a second, or while the collector at \(settings.endpoint) did not answer)")
        }
        var start = 0
        while start < spans.count {
            let batch = Array(spans[start..<min(start + 512, spans.count)])
            start += batch.count
            guard await send(batch) else {
                recorder.putBack(Array(spans[(start - batch.count)...]))
                return
            }
        }
    }

    func send(_ spans: [FinishedSpan]) async -> Bool {
        await sender.send(OTLPTraces.body(spans, service: service, version: HeraldVersion.current), describing: "\(spans.count) spans")
    }
}
