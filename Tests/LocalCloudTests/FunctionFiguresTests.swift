import Telemetry
import Testing

@testable import HeraldCLI

/// The console's Functions view reads each function's Prometheus text and sums it into a few rows.
@Suite struct FunctionFiguresTests {
    static let exposition = """
        # TYPE herald_events_total counter
        herald_events_total{function="onMessageCreated",encoding="binaryProtobuf",outcome="applied"} 3
        herald_events_total{function="onMessageCreated",encoding="structured",outcome="applied"} 1
        herald_events_total{function="onMessageCreated",encoding="binaryProtobuf",outcome="duplicate"} 1
        # TYPE herald_event_duration_seconds histogram
        herald_event_duration_seconds_bucket{function="onMessageCreated",outcome="applied",le="0.1"} 4
        herald_event_duration_seconds_sum{function="onMessageCreated",outcome="applied"} 0.1
        herald_event_duration_seconds_count{function="onMessageCreated",outcome="applied"} 4
        herald_event_duration_seconds_sum{function="onMessageCreated",outcome="duplicate"} 0.02
        herald_event_duration_seconds_count{function="onMessageCreated",outcome="duplicate"} 1
        herald_events_in_flight{function="onMessageCreated"} 0
        herald_firestore_requests_total{function="onMessageCreated",method="commit",status="200"} 4
        herald_firestore_requests_total{function="onMessageCreated",method="commit",status="503"} 2
        herald_fcm_sends_total{function="onMessageCreated",result="sent"} 7
        herald_fcm_sends_total{function="onMessageCreated",result="dead"} 1
        herald_expo_sends_total{function="onMessageCreated",result="sent"} 2
        herald_apns_sends_total{function="onMessageCreated",result="skipped"} 3
        herald_replans_total{function="onMessageCreated"} 0
        herald_document_commits_total{function="onMessageCreated",events="one",outcome="committed"} 1
        herald_document_commits_total{function="onMessageCreated",events="several",outcome="committed"} 2
        herald_document_commits_total{function="onMessageCreated",events="several",outcome="conflict"} 1
        herald_document_commit_events_total{function="onMessageCreated"} 8
        herald_commit_wait_seconds_sum{function="onMessageCreated",outcome="committed"} 4.5
        herald_commit_wait_seconds_count{function="onMessageCreated",outcome="committed"} 6
        """

    @Test func samplesAreReadWithTheirLabels() {
        let samples = FunctionFigures.parse(Self.exposition)
        #expect(samples.count == 22)
        #expect(
            samples.first
                == .init(
                    name: "herald_events_total", labels: [("function", "onMessageCreated"), ("encoding", "binaryProtobuf"), ("outcome", "applied")],
                    value: 3))
    }

    @Test func theSummarySumsOverLabelsAndLeavesOutWhatNeverHappened() {
        let rows = Dictionary(uniqueKeysWithValues: FunctionFigures.summary(FunctionFigures.parse(Self.exposition)).map { ($0.0, $0.1) })
        #expect(rows["events"] == "5")
        #expect(rows["  applied"] == "4")
        #expect(rows["  duplicate"] == "1")
        #expect(rows["mean time per event"] == "24.0 ms")
        #expect(rows["Firestore requests"] == "commit 6")
        #expect(rows["  not 2xx"] == "2")
        // Every service's pushes, by result, then by service.
        #expect(rows["pushes"] == "dead 1, sent 9, skipped 3")
        #expect(rows["  by service"] == "fcm 8, expo 2, apns 3")
        #expect(rows["re-plans"] == nil)
        #expect(rows["document commits"] == "committed 3, conflict 1")
        #expect(rows["  events per commit"] == "2.7")
        #expect(rows["commits that waited for a turn"] == "6, mean 750 ms")
    }
}
