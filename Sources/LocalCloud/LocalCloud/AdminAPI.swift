import Crypto
import EmbeddedFirestore
import FirestoreEvents
import FirestoreModel
import Foundation
import WireFormats

/// `/herald/…`: what the local cloud adds for people and tests — recorded pushes, deliveries and
/// dead letters, triggers, fault injection, the JWKS of its identity tokens.
struct AdminAPI: Sendable {
    let cloud: LocalCloud

    func handle(_ request: LocalRequest) async throws(LocalAPIError) -> LocalResponse {
        let route = (request.method, request.segments.dropFirst().joined(separator: "/"))
        switch route {
        case ("GET", "health"):
            return LocalResponse(json: ["status": "ok"])
        case ("GET", "fcm/messages"):
            let after = request.query["after"]?.first.flatMap { Int64($0) } ?? 0
            let messages = try await cloud.fcm.messages(token: request.query["token"]?.first, afterID: after)
            return LocalResponse(json: ["messages": .array(messages.map(\.json))])
        case ("POST", "fcm/dead-tokens"):
            guard let token = try request.json().member("token")?.stringValue else { throw .invalidArgument("token is required") }
            try await cloud.fcm.markDead(token)
            return LocalResponse(json: .object([:]))
        case ("POST", "fcm/faults"):
            let body = try request.json()
            var failures: [FCMSink.InjectedFailure] = []
            for item in body.member("next")?.arrayValue ?? [] {
                guard let f = item.stringValue.flatMap(FCMSink.InjectedFailure.init(rawValue:)) else {
                    throw .invalidArgument("next: each failure is unavailable, quotaExceeded or internalError")
                }
                failures.append(f)
            }
            cloud.fcm.inject(failures)
            if let rate = body.member("rate").flatMap({ Double($0.serialized()) }) { cloud.fcm.setFailureRate(rate) }
            return LocalResponse(json: .object([:]))
        case ("GET", "auth/export"):
            // Firebase Auth's users as Google's emulator exports them (`herald export` writes auth_export/accounts.json).
            return LocalResponse(json: try await cloud.auth.archive.exportAccounts(project: cloud.options.project))
        case ("GET", "push-services"):
            // The settings that point a function at the Expo and APNs stand-ins (one run outside herald dev).
            let standIns = cloud.pushStandIns
            return LocalResponse(json: ["environment": .object(standIns.functionEnvironment.mapValues { .string($0) })])
        case ("GET", "expo/messages"), ("GET", "apns/messages"):
            let service = PushStandInRecords.Service(rawValue: String(route.1.prefix(4)))
            let after = request.query["after"]?.first.flatMap { Int64($0) } ?? 0
            let messages = try await cloud.pushStandIns.records.messages(service: service, token: request.query["token"]?.first, afterID: after)
            return LocalResponse(json: ["messages": .array(messages.map(\.json))])
        case ("POST", "expo/dead-tokens"), ("POST", "apns/dead-tokens"):
            let body = try request.json()
            guard let token = body.member("token")?.stringValue, let service = PushStandInRecords.Service(rawValue: String(route.1.prefix(4))) else {
                throw .invalidArgument("token is required")
            }
            let when = body.member("when")?.stringValue ?? "send"
            guard when == "send" || (when == "receipt" && service == .expo) else { throw .invalidArgument("when: send, or receipt (Expo only)") }
            try await cloud.pushStandIns.records.markDead(token, service: service, when: when)
            return LocalResponse(json: .object([:]))
        case ("POST", "expo/faults"), ("POST", "apns/faults"):
            let body = try request.json()
            guard let service = PushStandInRecords.Service(rawValue: String(route.1.prefix(4))) else { throw .notFound("no such service") }
            var failures: [PushStandInRecords.InjectedFailure] = []
            for item in body.member("next")?.arrayValue ?? [] {
                guard let failure = item.stringValue.flatMap(PushStandInRecords.InjectedFailure.init(rawValue:)) else {
                    throw .invalidArgument("next: each failure is tooManyRequests, unavailable or lostAnswer")
                }
                failures.append(failure)
            }
            let hang = body.member("hangSeconds").flatMap { Double($0.serialized()) }.map { Duration.milliseconds(Int64(min(max($0, 0), 600) * 1000)) }
            cloud.pushStandIns.records.inject(
                failures, rate: body.member("rate").flatMap { Double($0.serialized()) }, for: service, hangFor: hang)
            return LocalResponse(json: .object([:]))
        case ("POST", "expo/projects"):
            let body = try request.json()
            guard let token = body.member("token")?.stringValue, let project = body.member("project")?.stringValue else {
                throw .invalidArgument("token and project are required")
            }
            cloud.pushStandIns.expo.assign(token, toProject: project)
            return LocalResponse(json: .object([:]))
        case ("POST", "expo/access-token"):
            // The push access token requests must carry from now on (Expo's enhanced security); null: none.
            cloud.pushStandIns.expo.requireAccessToken(try request.json().member("token")?.stringValue)
            return LocalResponse(json: .object([:]))
        case ("POST", "apns/keys"):
            let body = try request.json()
            guard let keyID = body.member("keyId")?.stringValue, let teamID = body.member("teamId")?.stringValue,
                let pem = body.member("publicKey")?.stringValue, let topics = body.member("topics")?.arrayValue?.compactMap(\.stringValue)
            else { throw .invalidArgument("keyId, teamId, publicKey (PEM) and topics are required") }
            guard let key = try? P256.Signing.PublicKey(pemRepresentation: pem) else { throw .invalidArgument("publicKey is not a P-256 public key in PEM") }
            cloud.pushStandIns.apns.register(keyID: keyID, APNsSink.Key(teamID: teamID, publicKey: key, topics: Set(topics)))
            return LocalResponse(json: .object([:]))
        case ("POST", "delivery/faults"):
            let body = try request.json()
            func number(_ key: String) -> Double { body.member(key).flatMap { Double($0.serialized()) } ?? 0 }
            let omitFor = body.member("omitDataTriggers")?.arrayValue.map { Set($0.compactMap(\.stringValue)) }
            cloud.delivery.faults = DeliveryFaults(
                duplicateProbability: number("duplicateProbability"),
                dropResponseProbability: number("dropResponseProbability"),
                maximumDelay: .milliseconds(Int64(number("maximumDelayMilliseconds"))),
                omitDataProbability: number("omitDataProbability"), omitDataTriggers: omitFor)
            return LocalResponse(json: .object([:]))
        case ("POST", "faults"), ("PUT", "faults"):
            cloud.faults.plan = try APIFaultPlan(json: try request.json())
            return LocalResponse(json: ["plan": cloud.faults.plan.json])
        case ("GET", "faults"):
            let injected = cloud.faults.injected.sorted { $0.key < $1.key }.map { ($0.key, JSONValue.integer(Int64($0.value))) }
            return LocalResponse(json: ["plan": cloud.faults.plan.json, "injected": .object(Dictionary(uniqueKeysWithValues: injected))])
        case ("GET", "writes"):
            // Documents written above Firestore's sustained rate over the last 10 s, and the highest rate seen.
            let rates = cloud.firestore.writeRates
            let hot = rates.hot().map { hot -> JSONValue in
                [
                    "document": .string(hot.document), "perSecond": .number(String(format: "%.2f", hot.perSecond)),
                    "peakPerSecond": .number(String(format: "%.2f", hot.peakPerSecond)),
                    "writers": .object(hot.writers.mapValues { JSONValue.integer(Int64($0)) }),
                ]
            }
            func peak(byFunctions: Bool) -> JSONValue {
                rates.peak(byFunctions: byFunctions).map { peak -> JSONValue in
                    ["document": .string(peak.document), "perSecond": .number(String(format: "%.2f", peak.perSecond))]
                } ?? .null
            }
            return LocalResponse(json: [
                "hot": .array(hot), "peak": peak(byFunctions: false), "peakByFunctions": peak(byFunctions: true),
                "limited": .bool(rates.options.limit), "written": .integer(Int64(rates.totals.written)),
                "refusedForContention": .integer(Int64(rates.totals.refused)),
            ])
        case ("GET", "billed"):
            let invocations = try await cloud.database.read { db in
                try Row.fetchAll(db, sql: "SELECT trigger, SUM(attempts) AS attempts FROM deliveries GROUP BY trigger").map { row in
                    (row["trigger"] as String, row["attempts"] as Int64)
                }
            }
            let operations = cloud.firestore.billed.byRequester.mapValues { counts -> JSONValue in
                ["reads": .integer(Int64(counts.reads)), "writes": .integer(Int64(counts.writes)), "deletes": .integer(Int64(counts.deletes))]
            }
            return LocalResponse(json: [
                "firestore": .object(operations),
                "invocations": .object(Dictionary(invocations.map { ($0.0, JSONValue.integer($0.1)) }, uniquingKeysWith: { a, _ in a })),
            ])
        case ("GET", "requests"):
            return LocalResponse(json: .object(cloud.faults.requests.mapValues { JSONValue.integer(Int64($0)) }))
        case ("POST", "idle"):
            // Answers once no event has been pending for a moment, or 503 after `timeoutSeconds` (at most 600).
            let seconds = min(600, max(0, request.query["timeoutSeconds"]?.first.flatMap(Double.init) ?? 30))
            guard try await cloud.waitUntilIdle(timeout: .milliseconds(Int64(seconds * 1000))) else {
                throw .unavailable("deliveries still pending after \(seconds) s")
            }
            return LocalResponse(json: ["idle": true])
        case ("GET", "deliveries"):
            return LocalResponse(json: ["deliveries": .array(try await cloud.deliveries(state: request.query["state"]?.first))])
        case ("POST", let path) where path.hasPrefix("deliveries/") && path.hasSuffix(":replay"):
            guard let id = Int64(path.dropFirst("deliveries/".count).dropLast(":replay".count)) else {
                throw .invalidArgument("replay takes a delivery id: POST /herald/deliveries/ID:replay")
            }
            try await cloud.replay(deliveryID: id)
            return LocalResponse(json: ["replayed": .integer(id)])
        case ("POST", "otlp/v1/traces"):
            return try await TraceReceiver(database: cloud.database).export(request)
        case ("GET", let path) where path.hasPrefix("traces/"):
            let spans = try await TraceReceiver(database: cloud.database).spans(trace: String(path.dropFirst("traces/".count)))
            return LocalResponse(json: ["spans": .array(spans)])
        case ("GET", "triggers"):
            return LocalResponse(json: ["triggers": .array(cloud.triggers.all.map(Self.json))])
        case ("PUT", "triggers"), ("POST", "triggers"):
            let body = try request.json()
            guard let name = body.member("name")?.stringValue, let pattern = body.member("pattern")?.stringValue,
                let kind = body.member("kind")?.stringValue.flatMap(DocumentChange.Kind.init(rawValue:)),
                let url = body.member("url")?.stringValue
            else { throw .invalidArgument("a trigger needs name, pattern, kind (created|updated|deleted|written) and url") }
            let contentType = body.member("contentType")?.stringValue == "json" ? TriggerRegistration.ContentType.json : .protobuf
            cloud.triggers.register(TriggerRegistration(name: name, pattern: pattern, kind: kind, url: url, contentType: contentType))
            return LocalResponse(json: .object([:]))
        case ("GET", "scheduler/jobs"):
            return LocalResponse(json: ["jobs": .array(cloud.scheduler.all.map(Self.json))])
        case ("PUT", "scheduler/jobs"), ("POST", "scheduler/jobs"):
            let body = try request.json()
            guard let name = body.member("name")?.stringValue, let schedule = body.member("schedule")?.stringValue,
                let url = body.member("url")?.stringValue
            else { throw .invalidArgument("a job needs name, schedule (unix-cron) and url") }
            cloud.scheduler.register(
                ScheduledJob(
                    name: name, schedule: try CronSchedule(schedule), url: url,
                    audience: body.member("audience")?.stringValue, paused: body.member("paused")?.boolValue ?? false))
            return LocalResponse(json: .object([:]))
        case ("POST", let path) where path.hasPrefix("scheduler/jobs/") && path.hasSuffix(":run"):
            let name = String(path.dropFirst("scheduler/jobs/".count).dropLast(":run".count))
            guard let job = cloud.scheduler.all.first(where: { $0.name == name }) else { throw .notFound("No job \(name.prefix(100)).") }
            let report = await cloud.scheduler.runNow(job)
            return LocalResponse(json: [
                "job": .string(name), "status": report.status.map { .integer($0) } ?? .null, "error": report.error.map { .string($0) } ?? .null,
            ])
        case ("GET", "oidc/jwks"):
            do { return LocalResponse(json: try cloud.identity.jwks()) } catch { throw .internalError("cannot export the public key") }
        case ("POST", "auth/revoke"):
            cloud.identity.revokeAll()
            return LocalResponse(json: .object([:]))
        default:
            throw .notFound("No admin endpoint \(route.0) /herald/\(route.1.prefix(100)).")
        }
    }

    static func json(_ job: ScheduledJob) -> JSONValue {
        [
            "name": .string(job.name), "schedule": .string(job.schedule.description), "url": .string(job.url),
            "audience": job.audience.map(JSONValue.string) ?? .null, "paused": .bool(job.paused),
        ]
    }

    static func json(_ trigger: TriggerRegistration) -> JSONValue {
        [
            "name": .string(trigger.name), "pattern": .string(trigger.pattern), "kind": .string(trigger.kind.rawValue),
            "url": .string(trigger.url), "contentType": .string(trigger.contentType.rawValue),
        ]
    }
}
