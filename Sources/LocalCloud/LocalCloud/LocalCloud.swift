import EmbeddedFirestore
import FirestoreModel
import Foundation
import HTTPTypes
import HeraldHTTPClient
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import WireFormats

public struct LocalCloudOptions: Sendable {
    public var host = "127.0.0.1"
    public var port = 8787
    /// Where state lives (`DIR/herald.sqlite`, the local key); nil: a temporary database, removed at stop.
    public var dataDirectory: String? = ".herald"
    public var project = "herald-local"
    public var delivery = DeliveryOptions()
    public var triggers: [TriggerRegistration] = []
    public var jobs: [ScheduledJob] = []
    /// How long the OAuth access tokens it issues last (Google's: an hour).
    public var accessTokenLifetime: TimeInterval = 3600
    /// Host names requests may name besides IP addresses and `localhost` (see `RequestGuard`).
    public var allowedHosts: [String] = []
    /// Which peers reach more than the documents API (see `PeerAccess`).
    public var peerAccess = PeerAccess()
    /// Per-document write rates: always measured, admitted at Firestore's sustained rate when `limit` is on.
    public var writeRates = DocumentWriteRates.Options()
    /// The local service account's key (PEM) when none is kept in the data directory; nil: a new one.
    /// Tests share one: a 2048-bit key takes seconds to make in a debug build.
    public var identityKeyPEM: String?
    /// Serve `project` only: a Firestore or FCM request for another is refused, naming the project
    /// served (`herald dev`: its functions read one project, so another's documents would fire triggers
    /// that find nothing). Off, any project is served, as tests use it.
    public var singleProject = false
    /// Where the documents live when not here (`herald dev --firestore`: `http://HOST:PORT`): the
    /// console reads and writes them there, through that Firestore's REST API.
    public var documentsElsewhere: String?
    /// The ports of the Expo and APNs stand-ins (`expoApplication`, `apnsApplication`); 0: any free one.
    public var expoPort = 0
    public var apnsPort = 0

    public init() {}
}

/// Google's cloud on one port: Firestore REST (over SQLite), Eventarc-style trigger delivery,
/// an FCM v1 sink, an OAuth token endpoint, the metadata server and OIDC identity tokens.
public final class LocalCloud: Sendable {
    public let options: LocalCloudOptions
    public let database: LocalDatabase
    public let firestore: LocalFirestore
    public let fcm: FCMSink
    /// Expo's push service and Apple's APNs, each on a port of its own.
    public let pushStandIns: PushStandIns
    /// Firebase Auth, on this port (`/identitytoolkit.googleapis.com/…`).
    public let auth: LocalAuth
    public let identity: LocalIdentity
    public let triggers: TriggerRegistry
    public let delivery: EventDelivery
    public let scheduler: Scheduler
    /// Writes each commit's events into `deliveries`, in the commit's own transaction.
    let outbox: EventOutbox
    /// The web SDK's streams (WebChannel sessions).
    public let webChannels: WebChannelSessions
    public let faults = APIFaults()
    /// Events of `herald dev`'s probe trigger received from Google's emulator (`EmulatorEventReceiver`).
    public let emulatorProbes = ActivityCounter()
    /// Counts changes the console shows (writes, deliveries, pushes, job runs, settings), so an open
    /// console learns of them without asking.
    public let activity: ActivityCounter
    let domain = Mutex<(any ConsoleDomain)?>(nil)
    let logger: Logger
    let stateDirectory: String

    /// - schedulerClient: the scheduler's calls to the functions (trigger deliveries have connections of their own).
    public init(
        options: LocalCloudOptions, logger: Logger, schedulerClient: HTTPTransport = .shared,
        onDelivery: @escaping @Sendable (DeliveryReport) -> Void = { _ in },
        onPush: @escaping @Sendable (FCMSink.Recorded) -> Void = { _ in },
        onServicePush: @escaping @Sendable (PushStandInRecords.Recorded) -> Void = { _ in },
        onAuthLink: @escaping @Sendable (String) -> Void = { _ in },
        onJob: @escaping @Sendable (JobRunReport) -> Void = { _ in }
    ) async throws {
        self.options = options
        self.logger = logger
        let activity = ActivityCounter()
        self.activity = activity
        database = try LocalCloudDatabase.open(directory: options.dataDirectory)
        stateDirectory = options.dataDirectory ?? (NSTemporaryDirectory() + "herald-\(UUID().uuidString)")
        triggers = TriggerRegistry(options.triggers)
        identity = try await LocalIdentity(
            project: options.project, directory: stateDirectory, accessTokenLifetime: options.accessTokenLifetime,
            newKeyPEM: options.identityKeyPEM)
        // Eventarc pushes as many requests at once as a service takes (its concurrency per instance):
        // the deliveries' own connections, as many per function process as the delivery limit allows,
        // so no delivery waits for a connection where Cloud Run would take it.
        let deliveryClient = HTTPTransport(http1ConnectionsPerOrigin: options.delivery.totalConcurrency)
        delivery = EventDelivery(
            database: database, registry: triggers, httpClient: deliveryClient, options: options.delivery,
            identity: identity, logger: logger,
            onReport: { report in
                activity.bump()
                onDelivery(report)
            })
        let delivery = self.delivery
        outbox = EventOutbox(
            registry: triggers,
            wake: {
                activity.bump()
                delivery.wake()
            })
        firestore = LocalFirestore(
            database: database, observer: outbox.observer, writeRates: DocumentWriteRates(options: options.writeRates, logger: logger),
            writerOfTrace: { trace in delivery.function(ofTrace: trace) })
        fcm = FCMSink(
            database: database,
            onRecord: { push in
                activity.bump()
                onPush(push)
            })
        pushStandIns = try await PushStandIns(
            database: database, directory: (stateDirectory as NSString).appendingPathComponent("apns"), options: options, logger: logger,
            onRecord: { push in
                activity.bump()
                onServicePush(push)
            })
        auth = LocalAuth(database: database, onChange: { activity.bump() }, onLink: onAuthLink)
        webChannels = WebChannelSessions(logger: logger)
        scheduler = Scheduler(
            identity: identity, httpClient: schedulerClient, jobs: options.jobs,
            onRun: { run in
                activity.bump()
                onJob(run)
            })
    }

    /// What the console offers beyond the local cloud's own views (an app's composer, names of devices).
    public var consoleDomain: (any ConsoleDomain)? {
        get { domain.withLock { $0 } }
        set { domain.withLock { $0 = newValue } }
    }

    /// The background work to run beside `application`: trigger delivery, the scheduler, WebChannel sessions.
    public var services: [any Service] { [delivery, scheduler, webChannels] }

    /// Closes the database; a temporary one and its key are removed.
    public func close() {
        let deliveries = delivery.httpClient
        Task { await deliveries.shutdown() }
        database.close()
        if options.dataDirectory == nil { try? FileManager.default.removeItem(atPath: stateDirectory) }
    }

    /// Writes the service-account key file the functions use (its `token_uri` is this cloud's).
    public func writeKeyFile(baseURL: String) throws -> String {
        let path = (stateDirectory as NSString).appendingPathComponent("service-account.json")
        try PrivateFiles.write(identity.keyFile(tokenURI: "\(baseURL)/token").serialized(pretty: true), to: path)
        return path
    }

    /// Deliveries, oldest first: all, or those in one state (pending, in_flight, delivered, dead).
    /// `pending` means not yet delivered: waiting for an attempt or being attempted now (`in_flight`);
    /// a script waiting for quiet must not miss the ones in flight.
    public func deliveries(state: String? = nil) async throws(LocalAPIError) -> [JSONValue] {
        let states = state == "pending" ? ["pending", "in_flight"] : state.map { [$0] } ?? []
        return try await database.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: "SELECT id, trigger, event_id, event_type, document, state, attempts, last_error, trace_id, writer FROM deliveries"
                    + (states.isEmpty ? "" : " WHERE state IN (\(states.map { _ in "?" }.joined(separator: ", ")))") + " ORDER BY id",
                arguments: StatementArguments(states))
            return rows.map { row in
                let error: String? = row["last_error"]
                let trace: String? = row["trace_id"]
                let writer: String? = row["writer"]
                return [
                    "id": .integer(row["id"] as Int64), "trigger": .string(row["trigger"]), "eventId": .string(row["event_id"]),
                    "eventType": .string(row["event_type"]), "document": .string(row["document"]), "state": .string(row["state"]),
                    "attempts": .integer(row["attempts"] as Int64), "lastError": error.map { .string($0) } ?? .null,
                    "traceId": trace.map { .string($0) } ?? .null, "writer": writer.map { .string($0) } ?? .null,
                ] as JSONValue
            }
        }
    }

    /// Sends a dead-lettered event again, from its first attempt (the console's "replay").
    public func replay(deliveryID: Int64) async throws(LocalAPIError) {
        let replayed = try await database.write { db in
            try db.execute(
                sql: """
                    UPDATE deliveries SET state = 'pending', attempts = 0, next_attempt_at = ?, finished_at = NULL
                    WHERE id = ? AND state = 'dead'
                    """,
                arguments: [Date().timeIntervalSince1970, deliveryID])
            return db.changes > 0
        }
        guard replayed else { throw .failedPrecondition("Delivery \(deliveryID) is not a dead letter: only dead letters are replayed.") }
        delivery.wake()
    }

    /// Queues the events of changes made elsewhere (an external Firestore that `herald dev` watches).
    public func enqueueEvents(for changes: [LocalFirestore.Change], at time: Timestamp) async throws(LocalAPIError) {
        let outbox = self.outbox
        try await database.write { db in try outbox.enqueue(changes, commitTime: time, db) }
        delivery.wake()
    }

    /// Events not yet delivered nor dead-lettered.
    public func pendingDeliveries() async throws(LocalAPIError) -> Int {
        try await database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM deliveries WHERE state IN ('pending', 'in_flight')") ?? 0 }
    }

    /// Waits until no event is pending for `quiet` checks in a row (a function's writes make new events,
    /// so one empty look is not enough). False if deliveries were still pending at `timeout`.
    public func waitUntilIdle(timeout: Duration, quiet: Int = 3, interval: Duration = .milliseconds(100)) async throws(LocalAPIError) -> Bool {
        let deadline = ContinuousClock.now + timeout
        var quietLooks = 0
        while ContinuousClock.now < deadline {
            quietLooks = try await pendingDeliveries() == 0 ? quietLooks + 1 : 0
            if quietLooks >= quiet { return true }
            do { try await Task.sleep(for: interval) } catch { return false }
        }
        return false
    }

    /// The HTTP server; run it together with `delivery`.
    public func application(onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) -> some ApplicationProtocol {
        let router = Router(context: PeerRequestContext.self)
        let handler = LocalCloudHandler(cloud: self)
        for method in [HTTPRequest.Method.get, .post, .patch, .delete, .put, .options] {
            router.on("**", method: method) { request, context in await handler.respond(request, peer: context.remoteAddress) }
            router.on("/", method: method) { request, context in await handler.respond(request, peer: context.remoteAddress) }
        }
        return Application(
            router: router,
            server: .http1AndFirestoreGRPC(handler.streamHost),
            configuration: .init(address: .hostname(options.host, port: options.port), serverName: "herald-local-cloud"),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? 0) },
            logger: logger
        )
    }
}

/// Routes a request to the Firestore API, the FCM sink, identity endpoints or `/herald/` admin endpoints.
struct LocalCloudHandler: Sendable {
    let cloud: LocalCloud
    let firestore: FirestoreREST

    init(cloud: LocalCloud) {
        self.cloud = cloud
        self.firestore = FirestoreREST(firestore: cloud.firestore)
    }

    static let maximumBodyBytes = 16 * 1024 * 1024

    func respond(_ request: Request, peer: SocketAddress?) async -> Response {
        var request = request
        var headers: [String: String] = [:]
        for field in request.headers where headers[field.name.canonicalName] == nil { headers[field.name.canonicalName] = field.value }
        if let authority = request.head.authority { headers["host"] = authority }
        let body: ByteBuffer
        do { body = try await request.collectBody(upTo: Self.maximumBodyBytes) } catch {
            return Response(LocalResponse(.invalidArgument("request body over 16 MiB")))
        }
        let local = LocalRequest(method: request.method.rawValue, path: request.uri.path, query: request.uri.query, headers: headers, body: Array(buffer: body))
        if let refusal = RequestGuard(allowedHosts: cloud.options.allowedHosts).refusal(of: local) { return Response(LocalResponse(refusal)) }
        if let refusal = cloud.options.peerAccess.refusal(of: local, from: peer) { return Response(LocalResponse(refusal)) }
        if let preflight = CrossOrigin.preflight(local) { return preflight }
        return CrossOrigin.allowing(headers["origin"], await respond(checked: local))
    }

    /// A request the guard let in.
    func respond(checked local: LocalRequest) async -> Response {
        if let stream = FirestoreWebChannel.stream(of: local) { return await FirestoreWebChannel(host: streamHost).respond(local, stream: stream) }
        if local.method == "GET", local.segments == ["herald", "export"] { return exportResponse() }
        if local.method == "GET", local.segments == ["herald", "console", "stream"] { return ConsoleFiles.changeStream(cloud.activity) }
        switch await answer(local) {
        case .response(let result): return Response(result)
        case .reset: return Self.reset
        }
    }

    /// What the Firestore streams ask of this server: REST over HTTP/1.1 and gRPC over HTTP/2 both come
    /// to `answer`, past the same checks.
    var streamHost: FirestoreStreamHost {
        let (cloud, handler) = (cloud, self)
        return FirestoreStreamHost(
            firestore: cloud.firestore, webChannels: cloud.webChannels, allowedHosts: cloud.options.allowedHosts,
            authorize: { header throws(LocalAPIError) in try cloud.identity.authorize(header) },
            checkServed: { project throws(LocalAPIError) in try handler.checkServed(project: project) },
            answer: { request in await handler.answer(request) })
    }

    func answer(_ local: LocalRequest) async -> FirestoreStreamHost.Answer {
        if !["GET", "HEAD"].contains(local.method) { cloud.activity.bump() }
        defer { if !["GET", "HEAD"].contains(local.method) { cloud.activity.bump() } }
        let fault = Self.api(of: local).flatMap {
            cloud.faults.draw(for: $0, userAgent: local.headers["user-agent"], trace: TraceParent.traceID(local.headers["traceparent"]))
        }
        switch fault {
        case .unavailable?:
            return .response(LocalResponse(LocalAPIError(code: 503, status: "UNAVAILABLE", message: "injected fault: unavailable", retryAfterSeconds: 1)))
        case .rateLimited?:
            return .response(
                LocalResponse(LocalAPIError(code: 429, status: "RESOURCE_EXHAUSTED", message: "injected fault: rate limited", retryAfterSeconds: 1)))
        case .reset?:
            return .reset
        case .timeout?:
            try? await Task.sleep(for: cloud.faults.plan.hangFor)
            return .reset
        case .resetAfterApplying?, .slow?, nil:
            break
        }
        let result: LocalResponse
        // Who is asking, as their ID token says: what the request writes is recorded as theirs.
        let caller = cloud.identity.caller(local.headers["authorization"])
        result = await WriteOrigin.$caller.withValue(caller) {
            do throws(LocalAPIError) { return try await route(local) } catch { return LocalResponse(error) }
        }
        if fault == .slow { try? await Task.sleep(for: cloud.faults.plan.slowFor) }
        if result.status >= 500 {
            cloud.logger.warning("\(local.method) /\(local.segments.joined(separator: "/")) → \(result.status) \(result.body.prefix(300))")
        }
        return fault == .resetAfterApplying ? .reset : .response(result)
    }

    /// `GET /herald/export`: every document as a line of Herald's export format, streamed a page at a time
    /// from one snapshot.
    func exportResponse() -> Response {
        let firestore = cloud.firestore
        return Response(
            status: .ok, headers: [.contentType: "application/x-ndjson"],
            body: ResponseBody { writer in
                _ = try await firestore.exportLines { lines in
                    var buffer = ByteBuffer()
                    for line in lines {
                        buffer.writeString(line)
                        buffer.writeString("\n")
                    }
                    try await writer.write(buffer)
                }
                try await writer.finish(nil)
            })
    }

    /// The Google API a request is for, as fault injection tells them apart.
    static func api(of request: LocalRequest) -> APIFaultPlan.API? {
        let s = request.segments
        switch s.first {
        case "v1" where s.count == 4 && s[3] == "messages:send": return .fcm
        case "v1": return .firestore
        case "token": return .token
        default: return nil
        }
    }

    /// A response whose body fails before its first byte: the server closes the connection, and the
    /// caller sees it reset with no answer.
    static var reset: Response {
        Response(status: .ok, headers: [.contentLength: "2"], body: ResponseBody { _ in throw ConnectionReset() })
    }

    struct ConnectionReset: Error {}

    /// In single-project mode, a request for another project is refused, naming the one served.
    func checkServed(project: some StringProtocol) throws(LocalAPIError) {
        guard cloud.options.singleProject, project != cloud.options.project else { return }
        throw LocalAPIError(
            code: 400, status: "FAILED_PRECONDITION",
            message: """
                This local cloud serves project "\(cloud.options.project)" only, not "\(project.prefix(100))": its functions read \
                "\(cloud.options.project)". Point the client at that project, or start herald dev with --project \(project.prefix(100)) \
                (or GOOGLE_CLOUD_PROJECT).
                """)
    }

    func route(_ request: LocalRequest) async throws(LocalAPIError) -> LocalResponse {
        let s = request.segments
        if s.first == "v1", s.count > 2, s[1] == "projects" { try checkServed(project: s[2]) }
        switch s.first {
        case "v1" where s.count == 4 && s[1] == "projects" && s[3] == "messages:send":
            try cloud.identity.authorize(request.headers["authorization"])
            guard request.method == "POST" else { throw .notFound("messages:send takes POST") }
            return LocalResponse(
                json: try await cloud.fcm.send(project: s[2], body: try request.json(), trace: TraceParent.traceID(request.headers["traceparent"])))
        case "v1":
            try cloud.identity.authorize(request.headers["authorization"])
            return try await firestore.handle(request)
        case "token" where request.method == "POST":
            let base = "http://\(request.headers["host"] ?? "\(cloud.options.host):\(cloud.options.port)")"
            let (status, json) = await cloud.identity.exchange(formBody: String(decoding: request.body, as: UTF8.self), tokenURI: "\(base)/token")
            if status != 200 { cloud.logger.warning("refused a token request: \(json["error_description"]?.stringValue ?? "")") }
            return LocalResponse(status: status, json: json)
        case "identitytoolkit.googleapis.com", "securetoken.googleapis.com", "emulator":
            let host = request.headers["host"] ?? "\(cloud.options.host):\(cloud.options.port)"
            let api = AuthAPI(
                auth: cloud.auth, project: cloud.options.project, base: "http://\(host)",
                isAdmin: cloud.identity.isAdministrator(request.headers["authorization"]))
            if s.first == "emulator", s.count == 2, s[1] == "action" { return await api.action(request) }
            return await api.handle(request)
        case "computeMetadata":
            var response = try await metadata(request)
            response.headers["Metadata-Flavor"] = "Google"
            return response
        case "functions" where s.count == 5 && s[1] == "projects" && s[3] == "triggers":
            try checkServed(project: s[2])
            return try await EmulatorEventReceiver(cloud: cloud).handle(request, key: s[4])
        case "herald" where s.count > 1 && s[1] == "console":
            return try await ConsoleAPI(cloud: cloud).handle(request, path: s.dropFirst(2).joined(separator: "/"))
        case "herald":
            return try await AdminAPI(cloud: cloud).handle(request)
        case "console" where request.method == "GET":
            return try ConsoleFiles.file(s.dropFirst().joined(separator: "/"))
        case nil where request.method == "GET" && request.headers["metadata-flavor"] == nil && request.headers["accept"]?.contains("text/html") == true:
            // A browser: the console. (Google's auth libraries probe `GET /` for a metadata server, with its header.)
            return try ConsoleFiles.file("index.html")
        case nil:
            // Google's auth libraries find a metadata server by this header on `GET /` (google-auth's `ping`).
            var about: [String: JSONValue] = ["service": "herald local cloud", "project": .string(cloud.options.project)]
            about["firestore"] = cloud.options.documentsElsewhere.map { .string($0) }
            var response = LocalResponse(json: .object(about))
            response.headers["Metadata-Flavor"] = "Google"
            return response
        default:
            throw .notFound("Nothing at /\(s.joined(separator: "/").prefix(200)).")
        }
    }

    /// The parts of the metadata server a Cloud Run function uses.
    func metadata(_ request: LocalRequest) async throws(LocalAPIError) -> LocalResponse {
        guard request.headers["metadata-flavor"] == "Google" else {
            return LocalResponse(status: 403, text: "Missing required header: Metadata-Flavor: Google\n", contentType: "text/plain")
        }
        let path = request.segments.dropFirst(2).joined(separator: "/")
        switch path {
        case "project/project-id":
            return LocalResponse(text: cloud.options.project, contentType: "application/text")
        case "instance/service-accounts/default/email":
            return LocalResponse(text: cloud.identity.clientEmail, contentType: "application/text")
        case "instance/service-accounts/default/token":
            return LocalResponse(json: cloud.identity.issueAccessToken(email: cloud.identity.clientEmail, scope: ServiceScope.cloudPlatform))
        case "instance/service-accounts/default/identity":
            guard let audience = request.query["audience"]?.first, !audience.isEmpty else { throw .invalidArgument("audience is required") }
            do {
                return LocalResponse(text: try await cloud.identity.identityToken(audience: audience), contentType: "application/text")
            } catch { throw .internalError("cannot sign an identity token") }
        default:
            return LocalResponse(status: 404, text: "Not found\n", contentType: "text/plain")
        }
    }
}

enum ServiceScope {
    static let cloudPlatform = "https://www.googleapis.com/auth/cloud-platform"
}
