import EmbeddedFirestore
import FirestoreModel
import Foundation
import PushTokens
import WireFormats

/// What an app built on the local cloud adds to its console: actions a person can take (a composer)
/// and names for what the console shows (whose phone a token is). The local cloud itself knows no
/// app; the console draws whatever is described here.
public protocol ConsoleDomain: Sendable {
    /// `{"actions": [{"name", "label", "parameters": [{"name", "label", "choices": [{"value", "label"}]?}]}],
    ///   "devices": {token: label}}`
    func describe() async throws -> JSONValue
    /// Performs an action with the person's arguments; the answer says what was done.
    func perform(_ action: String, arguments: [String: String]) async throws -> String
    /// The app's services beside the local cloud (`herald dev`'s function processes) and their figures:
    /// `{"functions": [{"name", "url", "restarts", "figures": [{"label", "value"}] | "error"}]}`.
    func services() async -> JSONValue
    /// The services' own log lines, newest first: `{"lines": [{"id", "function", "time", "severity",
    /// "message", "traceId", "eventId", "document"}]}`.
    func logs(limit: Int) async -> JSONValue
}

extension ConsoleDomain {
    public func logs(limit: Int) async -> JSONValue { ["lines": []] }
}

/// `/herald/console/…`: what the browser console reads beyond the Google APIs and the admin endpoints.
struct ConsoleAPI: Sendable {
    let cloud: LocalCloud

    func handle(_ request: LocalRequest, path: String) async throws(LocalAPIError) -> LocalResponse {
        switch (request.method, path) {
        case ("GET", "events"):
            let limit = min(500, max(1, request.query["limit"]?.first.flatMap { Int($0) } ?? 100))
            return LocalResponse(json: ["events": .array(try await eventPaths(limit: limit))])
        case ("GET", "devices"):
            return LocalResponse(json: try await devices())
        case ("GET", "world"):
            guard let domain = cloud.consoleDomain else { return LocalResponse(json: ["actions": [], "devices": .object([:])]) }
            do { return LocalResponse(json: try await domain.describe()) } catch { throw .internalError("cannot describe the app: \(error)") }
        case ("POST", let action) where action.hasPrefix("actions/"):
            guard let domain = cloud.consoleDomain else { throw .notFound("This local cloud has no app actions.") }
            let arguments = try request.json().objectValue?.compactMapValues(\.stringValue) ?? [:]
            do {
                return LocalResponse(json: ["done": .string(try await domain.perform(String(action.dropFirst(8)), arguments: arguments))])
            } catch let error as LocalAPIError {
                throw error
            } catch {
                throw .invalidArgument("\(error)")
            }
        case ("GET", "users"):
            let base = "http://\(request.headers["host"] ?? "\(cloud.options.host):\(cloud.options.port)")"
            return LocalResponse(json: try await cloud.auth.console(project: cloud.options.project, base: base))
        case ("POST", let action) where action.hasPrefix("users/"):
            // users/{uid}:{disable|enable|delete}
            let target = action.dropFirst("users/".count)
            guard let colon = target.lastIndex(of: ":") else { throw .invalidArgument("users/UID:ACTION") }
            try await cloud.auth.perform(String(target[target.index(after: colon)...]), uid: String(target[..<colon]), project: cloud.options.project)
            return LocalResponse(json: .object([:]))
        case ("GET", "functions"):
            return LocalResponse(json: await cloud.consoleDomain?.services() ?? ["functions": []])
        case ("GET", "logs"):
            let limit = min(2000, max(1, request.query["limit"]?.first.flatMap { Int($0) } ?? 300))
            return LocalResponse(json: await cloud.consoleDomain?.logs(limit: limit) ?? ["lines": []])
        case ("GET", "jobs"):
            return LocalResponse(json: ["jobs": .array(jobs())])
        case ("GET", "faults"):
            return LocalResponse(json: faults())
        default:
            throw .notFound("No console endpoint \(request.method) /herald/console/\(path.prefix(100)).")
        }
    }

    /// The newest deliveries, each with what caused it (the event or job whose function wrote the
    /// document), the function's answer, the writes and pushes made under its trace, and its calls to Google.
    func eventPaths(limit: Int) async throws(LocalAPIError) -> [JSONValue] {
        let jobRuns = cloud.scheduler.latestRuns.values.reduce(into: [String: String]()) { runs, run in
            if let trace = run.traceID { runs[trace] = run.job }
        }
        let (events, traces) = try await cloud.database.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT d.id, d.trigger, d.event_id, d.event_type, d.document, d.state, d.attempts, d.last_error, d.response,
                        d.latency_ms, d.created_at, d.finished_at, d.trace_id, d.source_trace, d.injected, d.writer,
                        cause.id AS cause_id, cause.trigger AS cause_trigger, cause.document AS cause_document
                    FROM deliveries d LEFT JOIN deliveries cause ON cause.trace_id = d.source_trace
                    ORDER BY d.id DESC LIMIT ?
                    """,
                arguments: [limit])
            let traces = rows.compactMap { $0["trace_id"] as String? }
            var writes: [String: [JSONValue]] = [:]
            for chunk in stride(from: 0, to: traces.count, by: 200).map({ Array(traces[$0..<min($0 + 200, traces.count)]) }) {
                let found = try Row.fetchAll(
                    db,
                    sql: "SELECT trace_id, document, kind FROM trace_writes WHERE trace_id IN (\(chunk.map { _ in "?" }.joined(separator: ", "))) ORDER BY id",
                    arguments: StatementArguments(chunk))
                for row in found {
                    writes[row["trace_id"], default: []].append(["document": .string(row["document"]), "kind": .string(row["kind"])])
                }
            }
            let events = rows.map { row -> (JSONValue, String?) in
                let traceID: String? = row["trace_id"]
                let source: String? = row["source_trace"]
                var cause: JSONValue = .null
                if let causeID = row["cause_id"] as Int64? {
                    cause = ["deliveryId": .integer(causeID), "trigger": .string(row["cause_trigger"]), "document": .string(row["cause_document"])]
                } else if let source, let job = jobRuns[source] {
                    cause = ["job": .string(job)]
                }
                let injected: String? = row["injected"]
                let response: String? = row["response"]
                let error: String? = row["last_error"]
                let latency: Double? = row["latency_ms"]
                let finished: Double? = row["finished_at"]
                let event: JSONValue = [
                    "id": .integer(row["id"] as Int64), "trigger": .string(row["trigger"]), "eventId": .string(row["event_id"]),
                    "eventType": .string(row["event_type"]), "document": .string(row["document"]), "state": .string(row["state"]),
                    "attempts": .integer(row["attempts"] as Int64), "lastError": error.map { .string($0) } ?? .null,
                    "answer": response.flatMap { try? JSONValue(parsing: $0) } ?? .null,
                    "latencyMs": latency.map { .number(String(($0 * 10).rounded() / 10)) } ?? .null,
                    "createdAt": .number(String(row["created_at"] as Double)), "finishedAt": finished.map { .number(String($0)) } ?? .null,
                    "traceId": traceID.map { .string($0) } ?? .null, "cause": cause, "writer": (row["writer"] as String?).map { .string($0) } ?? .null,
                    "writes": .array(traceID.flatMap { writes[$0] } ?? []),
                    "deliveryFaults": injected.map { .string($0) } ?? .null,
                ]
                return (event, traceID)
            }
            return (events, traces)
        }
        // Each push as its stand-in took it: FCM's message, Expo's message, APNs's payload, with its token and service.
        let fcm = try await cloud.fcm.messages(traces: traces).map { push -> (String, JSONValue) in
            var members = push.json.objectValue ?? [:]
            members["service"] = "fcm"
            return (push.traceID ?? "", .object(members))
        }
        let others = try await cloud.pushStandIns.records.messages(traces: traces).map { ($0.traceID ?? "", $0.json) }
        let pushes = Dictionary(grouping: fcm + others, by: \.0).mapValues { $0.map(\.1) }
        let calls = cloud.faults.requests(traces: traces)
        return events.map { event, trace in
            guard case .object(var members) = event else { return event }
            members["pushes"] = .array(trace.flatMap { pushes[$0] } ?? [])
            let made = trace.flatMap { calls[$0] }
            members["calls"] = .object((made?.requests ?? [:]).mapValues { .integer(Int64($0)) })
            members["injected"] = .array((made?.injected ?? []).map { .string($0) })
            return .object(members)
        }
    }

    /// Every token that has received a push (or is marked dead), with its newest pushes first and the
    /// label the app gives it.
    func devices() async throws(LocalAPIError) -> JSONValue {
        let labels = (try? await cloud.consoleDomain?.describe())?.member("devices")?.objectValue ?? [:]
        // Every service's pushes, newest first: FCM's, Expo's and APNs's.
        let (recent, dead) = try await cloud.database.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM (
                        SELECT 'fcm' AS service, id, token, message, received_at FROM fcm_messages WHERE token IS NOT NULL
                        UNION ALL SELECT service, id, token, message, received_at FROM push_messages
                    ) ORDER BY received_at DESC, id DESC LIMIT 2000
                    """)
            let dead =
                try Row.fetchAll(db, sql: "SELECT token FROM fcm_dead_tokens").map { $0["token"] as String }
                + Row.fetchAll(db, sql: "SELECT token FROM push_dead_tokens").map { $0["token"] as String }
            return (
                rows.map { row in (row["service"] as String, row["token"] as String, row["id"] as Int64, row["message"] as String, row["received_at"] as Double)
                },
                Set(dead)
            )
        }
        var order: [String] = []
        var byToken: [String: [JSONValue]] = [:]
        var service: [String: String] = [:]
        for (kind, token, id, message, at) in recent {
            if byToken[token] == nil { order.append(token) }
            service[token] = kind
            guard byToken[token, default: []].count < 30 else { continue }
            byToken[token, default: []].append([
                "id": .integer(id), "receivedAt": .number(String(at)), "message": (try? JSONValue(parsing: message)) ?? .null,
            ])
        }
        for token in labels.keys.sorted() where byToken[token] == nil {
            order.append(token)
            byToken[token] = []
        }
        return [
            "devices": .array(
                order.map { token in
                    [
                        "token": .string(token), "label": labels[token] ?? .null, "dead": .bool(dead.contains(token)),
                        "service": .string(service[token] ?? PushToken.kind(of: token).rawValue),
                        "pushes": .array(byToken[token] ?? []),
                    ]
                })
        ]
    }

    func jobs() -> [JSONValue] {
        let next = cloud.scheduler.nextRuns
        let latest = cloud.scheduler.latestRuns
        return cloud.scheduler.all.map { job in
            var json = AdminAPI.json(job)
            guard case .object(var members) = json else { return json }
            members["nextRun"] = next[job.name].map { .number(String($0.timeIntervalSince1970)) } ?? .null
            if let run = latest[job.name] {
                members["lastRun"] = [
                    "at": .number(String(run.at.timeIntervalSince1970)), "status": run.status.map { .integer(Int64($0)) } ?? .null,
                    "error": run.error.map { .string(String($0.prefix(500))) } ?? .null,
                ]
            }
            json = .object(members)
            return json
        }
    }

    func faults() -> JSONValue {
        let delivery = cloud.delivery.faults
        let injected = cloud.faults.injected.mapValues { JSONValue.integer(Int64($0)) }
        return [
            "api": ["plan": cloud.faults.plan.json, "injected": .object(injected)],
            "delivery": [
                "duplicateProbability": .number(String(delivery.duplicateProbability)),
                "dropResponseProbability": .number(String(delivery.dropResponseProbability)),
                "maximumDelayMilliseconds": .integer(Int64(delivery.maximumDelay / .milliseconds(1))),
                "omitDataProbability": .number(String(delivery.omitDataProbability)),
            ],
            "fcm": ["rate": .number(String(cloud.fcm.currentFailureRate))],
            "requests": .object(cloud.faults.requests.mapValues { .integer(Int64($0)) }),
        ]
    }
}
