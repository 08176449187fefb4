import ArgumentParser
import Foundation
import HeraldTesting

/// The chaos suite's long form: the same run as the CI test, as large and as long as you like.
struct ChaosSoak: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chaos",
        abstract: "Soak `herald dev` with app writers while Google's APIs fail and function processes are killed; check the result against the truth.",
        discussion: "Exits non-zero on any mismatch, duplicate push, dead letter or crash. Build first: swift build --product herald.")

    @Option(help: "Users (each with a phone; every third with a tablet too).") var users = 300
    @Option(help: "Conversations (half 1:1, half groups of 3–6).") var conversations = 200
    @Option(help: "Messages to write.") var messages = 5000
    @Option(help: "App writers at once.") var writers = 16
    @Option(help: "Roaming devices signed into one user after another.") var roamingDevices = 12
    @Option(help: "Device moves.") var tokenMoves = 200
    @Option(help: "Share of Herald's requests to Firestore, FCM and the token endpoint that fail.") var faultRate = 0.1
    @Option(help: "Seconds between SIGKILLs of a function process (0: none).") var killEvery = 4.0
    @Option(help: "Schema preset.") var schema = "default"
    @Option(help: "Seed of the generated world.") var seed: UInt64 = 1

    func run() async throws {
        var settings = ChaosSettings()
        (settings.users, settings.conversations, settings.messages, settings.writers) = (users, conversations, messages, writers)
        (settings.roamingDevices, settings.tokenMoves, settings.faultRate, settings.schema, settings.seed) = (
            roamingDevices, tokenMoves, faultRate, schema, seed
        )
        settings.killInterval = killEvery > 0 ? .milliseconds(Int64(killEvery * 1000)) : nil
        settings.settleTimeout = .seconds(900)
        let dev = try await RunningDev.start(ChaosSettings.devArguments + ["--schema", schema], environment: ChaosSettings.devEnvironment)
        defer { dev.kill() }
        try await dev.pauseJobs()
        let report = try await ChaosRun(settings: settings, dev: dev).run()
        print(report)
        let exit = try await dev.stop()
        if !report.passed || exit != 0 {
            ChaosRun.printEvidence(of: report, dev: dev)
            print("herald dev exited with \(exit)")
            throw ExitCode.failure
        }
    }
}
