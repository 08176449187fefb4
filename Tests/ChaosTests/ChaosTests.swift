import HeraldTesting
import Testing

/// The chaos suite's CI size (`herald-bench chaos` is the soak): concurrent app writers drive
/// `herald dev` while 10% of Herald's requests to Firestore, FCM and the token endpoint fail, events
/// are duplicated, delayed and their answers dropped, and function processes are SIGKILLed. At the
/// end, the documents and raw push records must match the truth computed from the messages.
@Suite struct ChaosTests {
    @Test func nothingIsLostNothingIsSentTwiceNothingCrashes() async throws {
        var settings = ChaosSettings()
        (settings.users, settings.conversations, settings.messages, settings.writers) = (80, 60, 500, 6)
        (settings.roamingDevices, settings.tokenMoves) = (8, 40)
        settings.killInterval = .seconds(3)
        settings.settleTimeout = .seconds(600)
        let dev = try await RunningDev.start(ChaosSettings.devArguments, environment: ChaosSettings.devEnvironment)
        defer { dev.kill() }
        try await dev.pauseJobs()
        let report = try await ChaosRun(settings: settings, dev: dev).run()
        print(report)
        if !report.passed { ChaosRun.printEvidence(of: report, dev: dev) }
        #expect(report.mismatches.isEmpty, "\(report.mismatches.prefix(20))")
        #expect(report.badgesChecked > settings.users / 2, "the last badge of most devices was checked against the store")
        #expect(report.duplicatesEmitted == 0)
        #expect(report.deadLetters.isEmpty, "\(report.deadLetters.prefix(20))")
        #expect(report.crashes == 0)
        // The run was chaotic: every kind of failure happened.
        #expect(report.kills > 0 && report.restarts >= report.kills)
        for api in ["firestore", "fcm", "token"] { #expect(report.faults.keys.contains { $0.hasPrefix(api + ".") }, "no fault injected on \(api)") }
        #expect(report.injectedDuplicates > 0 && report.duplicatesSeen > 0)
        #expect(report.dataOmitted > 0 && report.unsent > 0, "events without data and unsent messages were in the mix")
        #expect(report.faults["fcm.slow", default: 0] > 0 && report.unanswered > 0, "FCM answered too late, and the functions recorded it so")
        #expect(report.unansweredUndelivered == 0, "every alert FCM did not answer was sent once more and delivered")
        #expect(report.events > settings.messages, "messages, reads, heartbeats and device moves each make events")
        let output = dev.output
        let status = try await dev.stop()
        #expect(status == 0, "herald dev stopped with \(status): \(dev.output.dropFirst(output.count).suffix(3000))")
    }
}
