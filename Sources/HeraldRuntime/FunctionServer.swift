import FirestoreEvents
import FirestoreModel
import HeraldCore
import Hummingbird
import Logging
import NIOCore

/// The HTTP face of one function, as Cloud Run and Eventarc expect: `POST /` takes one event,
/// `GET /healthz` answers 200. SIGTERM stops accepting, finishes in-flight events, and exits.
public struct FunctionServer<Function: EventFunction>: Sendable {
    public static var maximumBodyBytes: Int { 10 * 1024 * 1024 }

    public let processor: EventProcessor<Function>
    public let logger: Logger

    public init(processor: EventProcessor<Function>, logger: Logger) {
        self.processor = processor
        self.logger = logger
    }

    public func application(
        host: String = "0.0.0.0", port: Int, onRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let router = Router()
        let processor = self.processor
        let logger = self.logger
        router.get("/healthz") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: "{\"status\":\"ok\"}")))
        }
        router.post("/") { request, _ in
            var request = request
            let body: ByteBuffer
            do {
                body = try await request.collectBody(upTo: Self.maximumBodyBytes)
            } catch is NIOTooManyBytesError {
                let reason = "body exceeds the \(Self.maximumBodyBytes / 1024 / 1024) MiB limit"
                logger.error("refused event: \(reason)")
                return Self.response(EventProcessor<Function>.failure(400, "INVALID_ARGUMENT", reason))
            }
            var headers: [String: String] = [:]
            for field in request.headers where headers[field.name.canonicalName] == nil {
                headers[field.name.canonicalName] = field.value
            }
            let result = await processor.process(EventRequest(headers: headers, body: Array(buffer: body)), logger: logger)
            return Self.response(result)
        }
        return Application(
            router: router,
            configuration: .init(address: .hostname(host, port: port), serverName: Function.name),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? port) },
            logger: logger
        )
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
