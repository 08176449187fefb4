/// One function as it is deployed, declared once: the type (its name, summary, trigger and settings
/// come from it), whether Cloud Scheduler runs it, and whether it sends pushes (FCM's IAM role).
/// `herald function`, `herald dev` and the checks on `Infra/` all read the catalog of these.
public struct FunctionDeclaration: Sendable {
    /// Cloud Scheduler's job for a function that runs on a schedule.
    public struct Schedule: Sendable, Hashable {
        /// The job's name (`herald-` is prefixed in Google Cloud).
        public var job: String
        /// Unix cron, in UTC.
        public var cron: String
        /// Where the job posts: `/` or `/sweep`.
        public var path: String

        public init(job: String, cron: String, path: String) {
            self.job = job
            self.cron = cron
            self.path = path
        }
    }

    public let type: any ConfigurableFunction.Type
    public let schedule: Schedule?
    public let sendsPushes: Bool

    public init(_ type: any ConfigurableFunction.Type, schedule: Schedule? = nil, sendsPushes: Bool) {
        self.type = type
        self.schedule = schedule
        self.sendsPushes = sendsPushes
    }

    public var name: String { type.name }
    public var summary: String { type.summary }
    /// The environment variables the function reads besides the runtime's own.
    public var settings: [String] { type.settings }

    /// The document trigger the function needs with these settings (its schema's paths); nil for one
    /// that only runs on a schedule.
    public func trigger(settings: FunctionSettings) throws -> Trigger? {
        (try type.init(settings: settings) as? any EventFunction)?.trigger
    }
}
