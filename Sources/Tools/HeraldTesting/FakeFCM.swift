import FirestoreModel
import Foundation
import HeraldHTTPClient
import Hummingbird
import Synchronization
import WireFormats

/// A stand-in for FCM that answers from a script per token and records what it was sent.
public final class FakeFCM: Sendable {
    public struct Answer: Sendable {
        public var status: HTTPResponse.Status
        public var body: String
        public var retryAfter: String? = nil
        public init(status: HTTPResponse.Status, body: String, retryAfter: String? = nil) {
            self.status = status
            self.body = body
            self.retryAfter = retryAfter
        }
    }

    let script: @Sendable (_ token: String, _ attempt: Int) -> Answer
    public let attempts = Mutex<[String: Int]>([:])
    public let bodies = Mutex<[JSONValue]>([])
    public let inFlight = Mutex<(now: Int, peak: Int)>((0, 0))
    let delay: Duration
    /// Attempts per token that wait `delay` before answering; later ones answer at once.
    let slowAttempts: Int
    /// While held, every send waits (after being counted) until `release()`: a test can act while a
    /// push is surely in flight instead of guessing how long that takes.
    let held = Mutex(false)

    public init(
        delay: Duration = .zero, slowAttempts: Int = .max, script: @escaping @Sendable (String, Int) -> Answer = { token, _ in FakeFCM.ok(token) }
    ) {
        self.script = script
        self.delay = delay
        self.slowAttempts = slowAttempts
    }

    public func hold() { held.withLock { $0 = true } }
    public func release() { held.withLock { $0 = false } }

    /// Waits until a send is in flight (counted, not yet answered).
    public func waitForASendInFlight(timeout: Duration = .seconds(60)) async throws {
        let deadline = ContinuousClock.now + timeout
        while inFlight.withLock({ $0.now }) == 0 {
            guard ContinuousClock.now < deadline else { throw CancellationError() }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    public static func ok(_ token: String) -> Answer { Answer(status: .ok, body: #"{"name": "projects/p/messages/\#(token)"}"#) }

    public static func error(_ status: HTTPResponse.Status, _ grpc: String, _ fcm: String?, message: String = "error", retryAfter: String? = nil) -> Answer {
        let details = fcm.map { #", "details": [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "\#($0)"}]"# } ?? ""
        return Answer(
            status: status, body: #"{"error": {"code": \#(status.code), "message": "\#(message)", "status": "\#(grpc)"\#(details)}}"#, retryAfter: retryAfter)
    }

    public var router: Router<BasicRequestContext> {
        let router = Router()
        router.post("/v1/projects/:project/messages:send") { request, _ -> Response in
            var request = request
            let json = try JSONValue(parsing: Array(buffer: try await request.collectBody(upTo: 1 << 20)))
            self.bodies.withLock { $0.append(json) }
            let token = json["message"]?["token"]?.stringValue ?? ""
            let attempt = self.attempts.withLock {
                $0[token, default: 0] += 1
                return $0[token]!
            }
            self.inFlight.withLock {
                $0.now += 1
                $0.peak = max($0.peak, $0.now)
            }
            if attempt <= self.slowAttempts { try await Task.sleep(for: self.delay) }
            while self.held.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
            self.inFlight.withLock { $0.now -= 1 }
            let answer = self.script(token, attempt)
            var headers: HTTPFields = [.contentType: "application/json"]
            if let after = answer.retryAfter { headers[.retryAfter] = after }
            return Response(status: answer.status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: answer.body)))
        }
        return router
    }
}
