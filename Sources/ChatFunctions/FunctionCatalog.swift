import HeraldCore

/// The chat backend's functions. A new function is a type behind `EventFunction` or `ScheduledFunction`,
/// one line here, and its `Functions/NAME/main.swift` (see docs/functions.md, "Write a function").
public enum FunctionCatalog {
    public static let all: [FunctionDeclaration] = [
        FunctionDeclaration(OnMessageCreated.self, sendsPushes: true),
        FunctionDeclaration(OnReadReceipt.self, sendsPushes: true),
        FunctionDeclaration(PresenceSweeper.self, schedule: .init(job: "presence-sweep", cron: "* * * * *", path: "/"), sendsPushes: false),
        FunctionDeclaration(TokenCleanup.self, schedule: .init(job: "token-cleanup", cron: "0 3 * * *", path: "/sweep"), sendsPushes: true),
    ]

    public static var names: [String] { all.map(\.name) }

    public static func named(_ name: String) -> FunctionDeclaration? { all.first { $0.name == name } }
}
