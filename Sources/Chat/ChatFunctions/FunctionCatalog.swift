import HeraldCore

/// The chat backend's functions. A new function is a type behind `EventFunction` or `ScheduledFunction`
/// and one line here; `swift run herald infra` then writes its executable and its deployment (see
/// docs/functions.md, "Write a function").
public enum FunctionCatalog {
    public static let all: [FunctionDeclaration] = [
        FunctionDeclaration(OnMessageCreated.self, sendsPushes: true),
        // A read's work is one read, one small commit and a silent push, and a busy group's reads wait
        // for the turns of the same conversation and reader: the more an instance takes at once, the
        // more each turn's shared commit carries (2 writes each, so 200 fit Firestore's 500 a commit).
        FunctionDeclaration(
            OnReadReceipt.self, sendsPushes: true,
            deployment: .init(maximumInstances: FunctionDeclaration.Deployment.events.maximumInstances, concurrency: 200, timeoutSeconds: 60)),
        FunctionDeclaration(
            PresenceSweeper.self, schedule: .init(job: "presence-sweep", cron: "* * * * *", path: "/", deadlineSeconds: 60), sendsPushes: false,
            deployment: .init(maximumInstances: 1, concurrency: 1, timeoutSeconds: 300)),
        FunctionDeclaration(
            TokenCleanup.self, schedule: .init(job: "token-cleanup", cron: "0 3 * * *", path: "/sweep", deadlineSeconds: 600), sendsPushes: true,
            deployment: .init(maximumInstances: 10, concurrency: 80, timeoutSeconds: 600)),
    ]

    public static var names: [String] { all.map(\.name) }

    public static func named(_ name: String) -> FunctionDeclaration? { all.first { $0.name == name } }
}
