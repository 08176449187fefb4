import HeraldTesting
import Testing

/// Busy groups and busy people, CI-sized (`herald-bench busy-groups` is the full load): on `herald dev
/// --write-rate-limit` with two processes per function, a big group and its members' other groups
/// write at once, then everyone reads everything. Every alert delivered once, every count and badge
/// exact, the last message the newest, no dead letter, and no document written by the functions more
/// than once a second over any 10 s window.
@Suite(.serialized) struct BusyGroupsTests {
    @Test func busyGroupsStayUnderOneWriteASecondPerDocumentAndLoseNothing() async throws {
        var settings = BusyGroupsLoad.Settings()
        (settings.members, settings.bigGroupRate, settings.otherGroups, settings.otherGroupRate) = (12, 6, 2, 1)
        settings.duration = .seconds(15)
        let dev = try await RunningDev.start(["--write-rate-limit", "--instances", "2"])
        defer { dev.kill() }
        try await dev.pauseJobs()
        let report = try await BusyGroupsLoad(settings: settings, dev: dev).run()
        print(report)
        #expect(report.mismatches.isEmpty, "\(report.mismatches.prefix(20))")
        #expect(report.alertsRecorded == report.alertsExpected && report.alertsExpected > 1000)
        #expect(report.deadLetters == 0)
        let peak = try #require(report.peakByFunctions)
        #expect(peak.perSecond <= 1.0, "\(peak.document) was written \(peak.perSecond)/s by the functions")
        // Each instance's own figures, as the console shows them: every process answers its /metrics
        // (the second instance too, which checks its service's audience, not its own port's).
        #expect(report.processFigures.allSatisfy { $0.error == nil }, "\(report.processFigures)")
        let messageInstances = report.processFigures.filter { $0.name == "onMessageCreated" }
        #expect(messageInstances.count == 2 && messageInstances.allSatisfy { $0.commits["document commits"] != nil }, "\(report.processFigures)")
    }

    /// A read receipt storm: a group's members all read its message as fast as the message's document
    /// takes their writes (the app writes it once per reader, so it is the storm's hot document and the
    /// app's own writes fill its rate). Every reader's count and badge back to zero, no event lost, and
    /// the conversation and user documents still written by the functions at most once a second. A read
    /// writes nothing to the message, so the storm settles as fast as the app's own writes go (about 37 s
    /// for 40 readers; 112–118 s when each read cleared a mark on the message, conditional on its version).
    /// 10 attempts as production has, in case an event does wait out the storm through the trigger's retries.
    @Test func aReadReceiptStormStaysUnderOneWriteASecondPerDocument() async throws {
        var settings = BusyGroupsLoad.Settings()
        (settings.members, settings.bigGroupRate, settings.otherGroups) = (40, 1, 0)
        settings.duration = .seconds(1)
        settings.readerSpacing = .zero
        let dev = try await RunningDev.start(["--write-rate-limit", "--instances", "2", "--max-attempts", "10", "--max-backoff", "15"])
        defer { dev.kill() }
        try await dev.pauseJobs()
        let report = try await BusyGroupsLoad(settings: settings, dev: dev).run()
        print(report)
        #expect(report.mismatches.isEmpty, "\(report.mismatches.prefix(20))")
        #expect(report.alertsRecorded == report.alertsExpected && report.alertsExpected == 39)
        #expect(report.deadLetters == 0)
        let peak = try #require(report.peakByFunctions)
        #expect(peak.perSecond <= 1.0, "\(peak.document) was written \(peak.perSecond)/s by the functions")
    }
}
