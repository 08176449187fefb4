import FirestoreEvents
import FirestoreModel
import GoogleClients
import HeraldCore
import HeraldHTTPServer
import Logging
import NIOHTTP1
import Telemetry
import Tracing
import WireFormats

#if canImport(Glibc)
import Glibc
#endif

/// Runs a scheduled function once: over Firestore (`SweepRunner`) or over a snapshot (`SnapshotSweeper`).
public protocol SweepRunning: Sendable {
    func run(at date: Timestamp, logger: Logger) async throws -> SweepReport
}

extension SweepRunner: SweepRunning {}

/// The HTTP face of one function, as Cloud Run, Eventarc and Cloud Scheduler expect: `POST /` takes one
/// event (or, for a function that only runs on a schedule, runs it), `POST /sweep` runs a scheduled
/// function (its host says which, `FunctionHost`), `GET /healthz` answers 200. With an identity
/// verifier, every POST needs an OIDC token. SIGTERM stops accepting, finishes in-flight requests, and exits.
public struct FunctionServer<Host: FunctionHost>: Sendable {
    public static var maximumBodyBytes: Int { 10 * 1024 * 1024 }

    public var name: String { Host.Function.name }
    let host: Host
    let identity: IdentityTokenVerifier?
    public let logger: Logger
    /// Served at `GET /metrics` (Prometheus text), when given.
    let metrics: RuntimeMetrics?
    /// Where each request's span and its calls' spans go, when traces are exported.
    let spans: SpanRecorder?

    public init(
        host: Host, identity: IdentityTokenVerifier? = nil, logger: Logger, metrics: RuntimeMetrics? = nil, spans: SpanRecorder? = nil
    ) {
        self.host = host
        self.identity = identity
        self.logger = logger
        self.metrics = metrics
        self.spans = spans
    }

    /// Serves on `host:port` until `stop` fires, then finishes the requests in flight and returns.
    public func run(host: String = "0.0.0.0", port: Int, stop: StopSignal, onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let server = self
        // The caller's identity is checked on the request's head, before its body (up to 10 MiB) is read.
        var headCheck: HTTPServer.HeadCheck?
        if identity != nil {
            headCheck = { @Sendable request in
                guard let refusal = await server.refusal(of: request) else { return nil }
                return FunctionServer.response(refusal)
            }
        }
        try await HTTPServer(host: host, port: port, maximumBodyBytes: Self.maximumBodyBytes, headCheck: headCheck) { body in
            await server.respond(to: body)
        }.run(stop: stop, onRunning: onRunning)
    }

    /// `GET /metrics` alone, on 127.0.0.1, without the identity check: for a collector in the same
    /// instance (`HERALD_METRICS_PORT`).
    public func runMetrics(port: Int, stop: StopSignal) async throws {
        let metrics = metrics
        try await HTTPServer(host: "127.0.0.1", port: port, maximumBodyBytes: 0) { body in
            guard case .complete(let request) = body, request.method == .GET, request.path == "/metrics" else { return HTTPServer.Response(status: 404) }
            guard let metrics else { return HTTPServer.Response(status: 404) }
            return Self.exposition(metrics)
        }.run(stop: stop)
    }

    /// `GET /healthz`, `GET /metrics`, `POST /` (an event, or a scheduled run) and `POST /sweep`, their
    /// callers' identity checked before (`refusal(of:)`, on the request's head).
    func respond(to body: HTTPServer.Body) async -> HTTPServer.Response {
        switch body {
        case .complete(let request):
            if request.method == .GET, request.path == "/metrics", let metrics { return Self.exposition(metrics) }
            return Self.response(await respond(to: request))
        case .tooLarge:
            let reason = "body exceeds the \(Self.maximumBodyBytes / 1024 / 1024) MiB limit"
            logger.error("refused event: \(reason)")
            return Self.response(failure(400, "INVALID_ARGUMENT", reason))
        }
    }

    func respond(to request: HTTPServer.Request) async -> EventResponse {
        switch (request.method, request.path) {
        case (.GET, "/healthz"):
            // The process id says which process answered: herald dev starts its functions on ports it
            // picked, and a port another process took meanwhile must not pass for its own function's.
            return EventResponse(status: 200, body: ["status": "ok", "pid": .number(String(getpid()))])
        case (.GET, "/metrics"):
            return failure(404, "NOT_FOUND", "\(name) keeps no metrics here")
        case (.POST, "/"), (.POST, "/sweep"):
            return await host.respond(toPost: request, on: self)
        case (_, "/healthz"), (_, "/metrics"), (_, "/"), (_, "/sweep"):
            return failure(405, "METHOD_NOT_ALLOWED", "\(request.method) is not served at \(request.path)")
        default:
            return failure(404, "NOT_FOUND", "nothing is served at \(request.path)")
        }
    }

    static func exposition(_ metrics: RuntimeMetrics) -> HTTPServer.Response {
        HTTPServer.Response(status: 200, headers: [("content-type", "text/plain; version=0.0.4; charset=utf-8")], body: metrics.exposition())
    }

    /// 401 when an identity token is required and this one does not verify; 503 when its keys cannot be
    /// fetched. `GET /healthz` needs none (Cloud Run's probes carry no token).
    func refusal(of request: HTTPServer.Request) async -> EventResponse? {
        guard let identity, !(request.method == .GET && request.path == "/healthz") else { return nil }
        do {
            let claims = try await identity.verify(authorization: request.headers["authorization"])
            logger.debug("caller \(claims.email ?? "(no email)") verified")
            return nil
        } catch {
            switch error {
            case .refused(let reason):
                logger.warning("refused a caller: \(reason)")
                return failure(401, "UNAUTHENTICATED", reason)
            case .unavailable(let reason):
                logger.error("cannot verify callers: \(reason)")
                return failure(503, "UNAVAILABLE", reason)
            }
        }
    }

    /// A scheduled run, traced, answered with its report.
    func tracedSweep(_ request: HTTPServer.Request, run: (Logger) async throws -> SweepReport) async -> EventResponse {
        await OutboundTrace.handling("\(name) sweep", incoming: request.headers["traceparent"], recorder: spans) { span in
            let response: EventResponse
            do {
                response = EventResponse(status: 200, body: try await run(logger).json)
            } catch {
                response = responseToFailure(error, logger: logger)
            }
            Self.annotate(span, response)
            return response
        }
    }

    /// One event, traced and (with metrics) measured.
    func handleEvent(_ request: HTTPServer.Request, process: (EventRequest, Logger) async -> EventResponse) async -> EventResponse {
        let event = EventRequest(headers: request.headers, body: request.body)
        // The calls made for this event carry its trace, so they can be told apart from other events'.
        return await OutboundTrace.handling("\(name) event", incoming: request.headers["traceparent"], recorder: spans) { span in
            let response = if let metrics { await measured(event, process: process, metrics: metrics) } else { await process(event, logger) }
            Self.annotate(span, response)
            return response
        }
    }

    /// What a request's span says of its answer: the event, its outcome, the status; an error for a 5xx.
    static func annotate(_ span: RecordedSpan?, _ response: EventResponse) {
        guard let span, span.isRecording else { return }
        span.updateAttributes { attributes in
            attributes["http.response.status_code"] = Int64(response.status)
            attributes["herald.outcome"] = outcome(of: response)
            if let event = response.report?.event {
                attributes["cloudevents.event_id"] = event.change.eventID
                attributes["herald.document"] = event.change.document.path
            }
        }
        if response.status >= 500 { span.setStatus(SpanStatus(code: .error, message: "HTTP \(response.status)")) }
    }

    func measured(_ event: EventRequest, process: (EventRequest, Logger) async -> EventResponse, metrics: RuntimeMetrics) async -> EventResponse {
        let started = ContinuousClock.now
        metrics.eventsInFlight(1)
        defer { metrics.eventsInFlight(-1) }
        let response = await process(event, logger)
        metrics.event(
            encoding: response.report?.event.envelope.encoding.rawValue ?? "unknown", outcome: Self.outcome(of: response),
            duration: .now - started)
        return response
    }

    /// What the metrics call an answer: the report's outcome, or `refused` (4xx, never retried) or `failed` (retried).
    static func outcome(of response: EventResponse) -> String {
        switch response.report?.outcome {
        case .applied?: "applied"
        case .duplicate?: "duplicate"
        case .skipped?: "skipped"
        case nil: (400..<500).contains(response.status) && response.status != 429 ? "refused" : "failed"
        }
    }

    static func response(_ result: EventResponse) -> HTTPServer.Response {
        var headers = [("content-type", "application/json")]
        if let after = result.retryAfterSeconds { headers.append(("retry-after", String(after))) }
        return HTTPServer.Response(status: result.status, headers: headers, body: result.body.serializedBytes())
    }
}
