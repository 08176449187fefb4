/// One function as it is deployed, declared once: the type (its name, summary, trigger and settings
/// come from it), whether Cloud Scheduler runs it, whether it sends pushes (FCM's IAM role) and how
/// Cloud Run scales it. `herald function` and `herald dev` read the catalog of these, and `herald
/// infra` writes its executables' `main.swift`, Cloud Run manifests and deploy.sh's lists from it.
public struct FunctionDeclaration: Sendable {
    /// Cloud Scheduler's job for a function that runs on a schedule.
    public struct Schedule: Sendable, Hashable {
        /// The job's name (`herald-` is prefixed in Google Cloud).
        public var job: String
        /// Unix cron, in UTC.
        public var cron: String
        /// Where the job posts: `/` or `/sweep`.
        public var path: String
        /// How long Cloud Scheduler waits for one run's answer.
        public var deadlineSeconds: Int

        public init(job: String, cron: String, path: String, deadlineSeconds: Int) {
            self.job = job
            self.cron = cron
            self.path = path
            self.deadlineSeconds = deadlineSeconds
        }
    }

    /// How Cloud Run runs the function.
    public struct Deployment: Sendable, Hashable {
        public var maximumInstances: Int
        /// Requests one instance takes at once.
        public var concurrency: Int
        /// How long one request may take.
        public var timeoutSeconds: Int

        public init(maximumInstances: Int, concurrency: Int, timeoutSeconds: Int) {
            self.maximumInstances = maximumInstances
            self.concurrency = concurrency
            self.timeoutSeconds = timeoutSeconds
        }

        /// A function that takes events: up to 3 instances of 80 requests, each answered within a minute.
        /// Instances share nothing but Firestore, and those writing the same busy documents take turns
        /// at them: measured with one to three they keep every document at or under Firestore's rate and
        /// lose nothing; five lose nothing and keep the rate too, but double the tail latency and make
        /// more requests per message (BENCHMARKS.md, 2026-11-28). A function that writes no document other
        /// events write may take more.
        public static let events = Deployment(maximumInstances: 3, concurrency: 80, timeoutSeconds: 60)
    }

    public let type: any ConfigurableFunction.Type
    public let schedule: Schedule?
    public let sendsPushes: Bool
    public let deployment: Deployment

    public init(_ type: any ConfigurableFunction.Type, schedule: Schedule? = nil, sendsPushes: Bool, deployment: Deployment = .events) {
        self.type = type
        self.schedule = schedule
        self.sendsPushes = sendsPushes
        self.deployment = deployment
    }

    public var name: String { type.name }
    public var summary: String { type.summary }
    /// The environment variables the function reads besides the runtime's own.
    public var settings: [String] { type.settings }

    /// The document trigger the function needs with these settings (its schema's paths); nil for one
    /// that only runs on a schedule.
    public func trigger(settings: FunctionSettings) throws -> Trigger? {
        try type.visitKind(TriggerOfKind())?(settings)
    }
}
