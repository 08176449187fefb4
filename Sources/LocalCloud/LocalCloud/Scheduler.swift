import EmbeddedFirestore
import Foundation
import HeraldHTTPClient
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import Synchronization

/// A Cloud Scheduler HTTP job: POST to `url` on a schedule, with a Google-signed OIDC identity token.
public struct ScheduledJob: Sendable, Hashable {
    public var name: String
    public var schedule: CronSchedule
    public var url: String
    /// The identity token's audience (Cloud Scheduler's `oidcToken.audience`); the URL when nil.
    public var audience: String?
    public var paused: Bool

    public init(name: String, schedule: CronSchedule, url: String, audience: String? = nil, paused: Bool = false) {
        self.name = name
        self.schedule = schedule
        self.url = url
        self.audience = audience
        self.paused = paused
    }
}

public struct JobRunReport: Sendable {
    public var job: String
    public var status: Int?
    public var error: String?
    public var at = Date()
    /// The trace the run carried, which the function's writes and pushes come back with.
    public var traceID: String? = nil
}

/// Calls each job's URL when its schedule says, as Cloud Scheduler does (one attempt per run).
public final class Scheduler: Service, Sendable {
    let jobs = Mutex<[String: (job: ScheduledJob, next: Date)]>([:])
    let lastRuns = Mutex<[String: JobRunReport]>([:])
    let identity: LocalIdentity
    let httpClient: HTTPTransport
    let onRun: @Sendable (JobRunReport) -> Void

    init(identity: LocalIdentity, httpClient: HTTPTransport, jobs: [ScheduledJob], onRun: @escaping @Sendable (JobRunReport) -> Void) {
        self.identity = identity
        self.httpClient = httpClient
        self.onRun = onRun
        for job in jobs { register(job) }
    }

    public func register(_ job: ScheduledJob) {
        jobs.withLock { $0[job.name] = (job, job.schedule.next(after: Date())) }
    }

    public var all: [ScheduledJob] { jobs.withLock { $0.values.map(\.job).sorted { $0.name < $1.name } } }

    /// When each job runs next by its schedule.
    public var nextRuns: [String: Date] { jobs.withLock { $0.mapValues(\.next) } }

    /// Each job's latest run, by this process.
    public var latestRuns: [String: JobRunReport] { lastRuns.withLock { $0 } }

    public func run() async throws {
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            let now = Date()
            let due: [ScheduledJob] = jobs.withLock { table in
                var due: [ScheduledJob] = []
                for (name, entry) in table where entry.next <= now {
                    table[name]?.next = entry.job.schedule.next(after: now)
                    if !entry.job.paused { due.append(entry.job) }
                }
                return due
            }
            for job in due { onRun(await runNow(job)) }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// Runs a job once, now, whatever its schedule.
    public func runNow(_ job: ScheduledJob) async -> JobRunReport {
        let traceID = TraceParent.newTraceID()
        var report = await call(job, traceID: traceID)
        report.traceID = traceID
        lastRuns.withLock { [report] in $0[job.name] = report }
        return report
    }

    func call(_ job: ScheduledJob, traceID: String) async -> JobRunReport {
        do {
            let headers: HTTPHeaders = [
                "authorization": "Bearer \(try await identity.pushToken(audience: job.audience ?? job.url))",
                "user-agent": "Google-Cloud-Scheduler", "x-cloudscheduler": "true", "x-cloudscheduler-jobname": job.name,
                "content-type": "application/json", "traceparent": TraceParent.header(traceID: traceID),
            ]
            let request = HeraldHTTPClient.HTTPRequest(method: .POST, url: job.url, headers: headers, body: ByteBuffer(string: "{}"))
            let response = try await httpClient.execute(request, timeout: .seconds(180), maximumBodySize: 1 << 20)
            let code = Int(response.status.code)
            return JobRunReport(job: job.name, status: code, error: (200..<300).contains(code) ? nil : String(buffer: response.body))
        } catch {
            return JobRunReport(job: job.name, status: nil, error: "\(error)")
        }
    }
}
