import FirestoreEvents
import FirestoreModel
import GoogleClients
import HeraldCore
import Hummingbird
import Logging
import NIOCore
import Tracing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Handles one delivered event; `EventProcessor` is the one the runtime uses.
public protocol EventHandling: Sendable {
    func process(_ request: EventRequest, logger: Logger) async -> EventResponse
}

/// Runs a scheduled function once; `SweepRunner` is the one the runtime uses.
public protocol SweepRunning: Sendable {
    func run(at date: Date, logger: Logger) async throws -> SweepReport
}

extension EventProcessor: EventHandling {}
extension SweepRunner: SweepRunning {}

/// The HTTP face of one function, as Cloud Run, Eventarc and Cloud Scheduler expect: `POST /` takes one
/// event (or, for a function that only runs on a schedule, runs it), `POST /sweep` runs a scheduled
/// function, `GET /healthz` answers 200. With an identity verifier, every POST needs an OIDC token.
/// SIGTERM stops accepting, finishes in-flight requests, and exits.
public struct FunctionServer: Sendable {
    public static var maximumBodyBytes: Int { 10 * 1024 * 1024 }

    public let name: String
    let events: (any EventHandling)?
    let sweeper: (any SweepRunning)?
    let identity: IdentityTokenVerifier?
    public let logger: Logger
    /// Served at `GET /metrics` (Prometheus text), when given.
    let metrics: RuntimeMetrics?
    /// Where each request's span and its calls' spans go, when traces are exported.
    let spans: SpanRecorder?

    public init(
        name: String, events: (any EventHandling)?, sweeper: (any SweepRunning)?, identity: IdentityTokenVerifier? = nil, logger: Logger,
        metrics: RuntimeMetrics? = nil, spans: SpanRecorder? = nil
    ) {
        self.name = name
        self.events = events
        self.sweeper = sweeper
        self.identity = identity
        self.logger = logger
        self.metrics = metrics
        self.spans = spans
    }

    public init<Function: EventFunction>(processor: EventProcessor<Function>, identity: IdentityTokenVerifier? = nil, logger: Logger) {
        self.init(name: Function.name, events: processor, sweeper: nil, identity: identity, logger: logger)
    }

    public func application(
        host: String = "0.0.0.0", port: Int, onRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let router = Router()
        let server = self
        router.get("/healthz") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: "{\"status\":\"ok\"}")))
        }
        router.get("/metrics") { request, _ in
            if let refusal = await server.refusal(of: request) { return Self.response(refusal) }
            guard let metrics = server.metrics else { return Self.response(failure(404, "NOT_FOUND", "\(server.name) keeps no metrics here")) }
            return Self.exposition(metrics)
        }
        router.post("/") { request, _ in
            if let refusal = await server.refusal(of: request) { return Self.response(refusal) }
            if server.events != nil { return Self.response(await server.handleEvent(request)) }
            return Self.response(await server.tracedSweep(request))
        }
        router.post("/sweep") { request, _ in
            if let refusal = await server.refusal(of: request) { return Self.response(refusal) }
            guard server.sweeper != nil else {
                return Self.response(failure(404, "NOT_FOUND", "\(server.name) does not run on a schedule"))
            }
            return Self.response(await server.tracedSweep(request))
        }
        return Application(
            router: router,
            configuration: .init(address: .hostname(host, port: port), serverName: name),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? port) },
            logger: logger
        )
    }

    /// `GET /metrics` alone, on 127.0.0.1, without the identity check: for a collector in the same
    /// instance (`HERALD_METRICS_PORT`).
    public func metricsApplication(port: Int) -> some ApplicationProtocol {
        let router = Router()
        let metrics = metrics
        router.get("/metrics") { _, _ in
            guard let metrics else { return Response(status: .notFound) }
            return Self.exposition(metrics)
        }
        // Its own start is said by the caller: one "listening on" line per function, for the service's port.
        var quiet = logger
        quiet.logLevel = .warning
        return Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: name), logger: quiet)
    }

    static func exposition(_ metrics: RuntimeMetrics) -> Response {
        Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition())))
    }

    /// 401 when an identity token is required and this one does not verify; 503 when its keys cannot be fetched.
    func refusal(of request: Request) async -> EventResponse? {
        guard let identity else { return nil }
        do {
            let claims = try await identity.verify(authorization: request.headers[.authorization])
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

    func tracedSweep(_ request: Request) async -> EventResponse {
        let incoming = request.headers.first { $0.name.canonicalName == "traceparent" }?.value
        return await OutboundTrace.handling("\(name) sweep", incoming: incoming, recorder: spans) { span in
            let response = await sweep()
            Self.annotate(span, response)
            return response
        }
    }

    func handleEvent(_ request: Request) async -> EventResponse {
        guard let events else { return failure(404, "NOT_FOUND", "\(name) takes no events") }
        var request = request
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: Self.maximumBodyBytes)
        } catch {
            let reason = "body exceeds the \(Self.maximumBodyBytes / 1024 / 1024) MiB limit"
            logger.error("refused event: \(reason)")
            return failure(400, "INVALID_ARGUMENT", reason)
        }
        var headers: [String: String] = [:]
        for field in request.headers where headers[field.name.canonicalName] == nil {
            headers[field.name.canonicalName] = field.value
        }
        let event = EventRequest(headers: headers, body: Array(buffer: body))
        // The calls made for this event carry its trace, so they can be told apart from other events'.
        return await OutboundTrace.handling("\(name) event", incoming: headers["traceparent"], recorder: spans) { span in
            let response = if let metrics { await measured(event, events: events, metrics: metrics) } else { await events.process(event, logger: logger) }
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

    func measured(_ event: EventRequest, events: any EventHandling, metrics: RuntimeMetrics) async -> EventResponse {
        let started = ContinuousClock.now
        metrics.eventsInFlight(1)
        defer { metrics.eventsInFlight(-1) }
        let response = await events.process(event, logger: logger)
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

    func sweep() async -> EventResponse {
        guard let sweeper else { return failure(404, "NOT_FOUND", "\(name) does not run on a schedule") }
        do {
            let report = try await sweeper.run(at: Date(), logger: logger)
            return EventResponse(status: 200, body: report.json)
        } catch {
            return responseToFailure(error, logger: logger)
        }
    }

    static func response(_ result: EventResponse) -> Response {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let after = result.retryAfterSeconds { headers[.retryAfter] = String(after) }
        return Response(
            status: .init(code: result.status),
            headers: headers,
            body: .init(byteBuffer: ByteBuffer(string: result.body.serialized()))
        )
    }
}
