import AsyncHTTPClient
import FirestoreEvents
import FirestoreModel
import Foundation
import Glibc
import HeraldRuntime
import NIOCore
import NIOHTTP1
import Supervision
import WireFormats

/// A function executable serving on a free loopback port, set up only by the environment the test
/// gives it (Herald's and Google's own variables from the test's environment are dropped), with its
/// output in a file. Tests post events to it as Eventarc would and watch what it answers.
public final class FunctionUnderTest: Sendable {
    public let name: String
    public let process: ChildProcess
    public let log: URL
    public let port: Int

    init(name: String, process: ChildProcess, log: URL, port: Int) {
        self.name = name
        self.process = process
        self.log = log
        self.port = port
    }

    /// Starts `NAME serve --host 127.0.0.1 --port PORT …` (a free one by default) and waits for it to say where it listens.
    public static func start(_ name: String, environment: [String: String], arguments: [String] = [], port: Int = 0) async throws -> FunctionUnderTest {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("herald-\(name)-\(UUID().uuidString).log")
        let process = try await ChildProcess.start(
            TestPaths.executable(name).path, arguments: ["serve", "--host", "127.0.0.1", "--port", String(port)] + arguments,
            environment: cleanEnvironment().merging(["LOG_FORMAT": "text"]) { _, new in new }.merging(environment) { _, new in new },
            output: .file(log.path))
        for _ in 0..<600 where !process.hasExited {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            if let range = text.range(of: #"listening on [0-9.]+:[0-9]+"#, options: .regularExpression),
                let port = Int(text[range].split(separator: ":").last ?? "")
            {
                return FunctionUnderTest(name: name, process: process, log: log, port: port)
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        let said = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        await process.stop(grace: .zero)
        try? FileManager.default.removeItem(at: log)
        throw StillBusy(description: "\(name) did not start listening; it said: \(said.suffix(2000))")
    }

    /// The test's environment without anything that would tell a function where Google is or how it is configured.
    public static func cleanEnvironment() -> [String: String] {
        ProcessInfo.processInfo.environment.filter { key, _ in
            !key.hasPrefix("HERALD_") && !key.hasPrefix("GOOGLE_") && !key.hasPrefix("GCLOUD_") && !key.hasPrefix("FIRESTORE_")
                && !["GCE_METADATA_HOST", "FCM_ENDPOINT", "K_SERVICE", "PORT", "LOG_LEVEL", "LOG_FORMAT"].contains(key)
        }
    }

    /// What the function printed so far.
    public var output: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    public var isRunning: Bool { !process.hasExited }

    /// CPU time the process has used so far (user and system, from /proc): what a request costs the
    /// function itself, however busy the machine is with other work.
    public var cpuTime: Duration {
        guard let stat = try? String(contentsOfFile: "/proc/\(process.pid)/stat", encoding: .utf8),
            let fields = stat.split(separator: ")").last?.split(separator: " "), fields.count > 13,
            let user = Int64(fields[12]), let system = Int64(fields[13])
        else { return .zero }
        let ticks = Int64(sysconf(Int32(_SC_CLK_TCK)))
        return .milliseconds((user + system) * 1000 / max(ticks, 1))
    }

    public struct Answer: Sendable {
        public var status: Int
        public var body: String
        public var retryAfter: String?
        public var elapsed: Duration
        public var json: JSONValue? { try? JSONValue(parsing: body) }
    }

    /// POSTs an HTTP request (`headers`, `body`) to `path` and times the answer.
    public func post(_ request: EventRequest, path: String = "/", timeout: Duration = .seconds(120)) async throws -> Answer {
        var http = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        http.method = .POST
        for (name, value) in request.headers { http.headers.add(name: name, value: value) }
        http.body = .bytes(ByteBuffer(bytes: request.body))
        let clock = ContinuousClock()
        let start = clock.now
        let response = try await HTTPClient.shared.execute(http, timeout: .nanoseconds(Int64(timeout / .nanoseconds(1))))
        let body = try await response.body.collect(upTo: 16 << 20)
        return Answer(
            status: Int(response.status.code), body: String(buffer: body), retryAfter: response.headers.first(name: "retry-after"),
            elapsed: clock.now - start)
    }

    /// POSTs over a plain socket and times the answer from the body's last byte: what the function
    /// itself takes, without the test's own HTTP client sending megabytes in a debug build.
    public func postRaw(_ request: EventRequest) async throws -> (status: Int, body: String, elapsed: Duration) {
        try await offThePool { [port] in try Self.postRaw(request, port: port) }
    }

    static func postRaw(_ request: EventRequest, port: Int) throws -> (status: Int, body: String, elapsed: Duration) {
        let connection = try RawHTTPConnection(port: port)
        var head = "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: \(request.body.count)\r\n"
        for (name, value) in request.headers { head += "\(name): \(value)\r\n" }
        try connection.send(head + "\r\n")
        // A body over the limit may be refused (and the connection closed) before it is all sent.
        try? connection.send(request.body)
        let clock = ContinuousClock()
        let sent = clock.now
        let answer = connection.readAll(timeout: 30)
        let elapsed = clock.now - sent
        let status = Int(answer.split(separator: " ", maxSplits: 2).dropFirst().first ?? "") ?? 0
        let body = answer.range(of: "\r\n\r\n").map { String(answer[$0.upperBound...]) } ?? ""
        return (status, body, elapsed)
    }

    /// SIGTERM, then (in the background, so a `defer` can call it) SIGKILL if it is still there 5 s
    /// later; the log is removed.
    public func stop() {
        Task { [process, log] in
            await process.stop(grace: .seconds(5))
            try? FileManager.default.removeItem(at: log)
        }
    }
}

extension RunningDev {
    /// How a function process outside `herald dev` reaches it, as Infra/compose.yaml wires one: tokens
    /// from its metadata server, Firestore and FCM at its base URL, Expo and APNs at their stand-ins.
    public func functionEnvironment(project: String = "e2e") -> [String: String] {
        [
            "GOOGLE_CLOUD_PROJECT": project, "GCE_METADATA_HOST": base.replacingOccurrences(of: "http://", with: ""),
            "FIRESTORE_ENDPOINT": base, "FCM_ENDPOINT": base,
        ].merging(pushServiceEnvironment) { _, new in new }
    }
}

/// A Firestore change as Eventarc delivers it in binary mode with protobuf data, for a test to post.
public enum EventarcRequest {
    /// `document` as created (or updated, with `old`), carrying both documents, or no data at all when
    /// `withData` is false (as Eventarc sends an event over its size limit).
    public static func make(
        id: String, kind: DocumentChange.Kind, document: FirestoreDocument?, old: FirestoreDocument? = nil,
        name: DocumentName, time: Timestamp = .now(), withData: Bool = true
    ) throws -> EventRequest {
        let change = DocumentChange(
            eventID: id, kind: kind, time: time, document: name,
            oldDocument: withData ? old : nil, newDocument: withData ? document : nil)
        let event = DecodedEvent(
            change: change, envelope: EventEnvelope(encoding: .binaryProtobuf, type: "google.cloud.firestore.document.v1.\(kind.rawValue)"))
        return try Fixture.request(from: Array(Fixture.binary(event, json: false).serialized().utf8))
    }
}
