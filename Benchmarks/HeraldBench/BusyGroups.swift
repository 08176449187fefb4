import ArgumentParser
import Foundation
import HeraldTesting

/// Busy groups and busy people at full size (`Tests/ChaosTests/BusyGroupsTests.swift` is the CI-sized run).
struct BusyGroups: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "busy-groups",
        abstract: "A big group and its members' other groups writing at once on `herald dev --write-rate-limit`, then everyone reading everything.",
        discussion: """
            Checks every push, count, badge and last message against the truth and prints herald dev's own figure: the most \
            writes any document took from the functions in a 10 s window. Exits non-zero on a mismatch, a dead letter or a \
            document above one write a second. Build first: swift build --product herald.
            """)

    @Option(help: "Members of every group.") var members = 50
    @Option(help: "Messages a second in the big group.") var bigGroupRate = 20.0
    @Option(help: "Other groups of the same members.") var otherGroups = 4
    @Option(help: "Messages a second in each other group.") var otherGroupRate = 2.0
    @Option(help: "Seconds of writing.") var seconds = 60
    @Option(help: "Processes per function, as Eventarc spreads events over instances.") var instances = 2

    func run() async throws {
        var settings = BusyGroupsLoad.Settings()
        (settings.members, settings.bigGroupRate, settings.otherGroups, settings.otherGroupRate) = (members, bigGroupRate, otherGroups, otherGroupRate)
        settings.duration = .seconds(seconds)
        let dev = try await RunningDev.start(["--write-rate-limit", "--instances", String(instances)])
        defer { dev.kill() }
        try await dev.pauseJobs()
        let report = try await BusyGroupsLoad(settings: settings, dev: dev).run()
        print(report)
        let exit = try await dev.stop()
        guard report.mismatches.isEmpty, report.deadLetters == 0, report.alertsRecorded == report.alertsExpected,
            (report.peakByFunctions?.perSecond ?? 0) <= 1.0, exit == 0
        else { throw ExitCode.failure }
    }
}
