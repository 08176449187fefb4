import ArgumentParser
import AsyncHTTPClient
import FirestoreModel
import Foundation
import GoogleClients
import HeraldCore
import HeraldHTTPClient
import HeraldTesting

/// Figures, not tests: `swift run -c release herald-bench fcm`.
@main
struct HeraldBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald-bench", abstract: "Herald's benchmarks; each prints its figures.",
        subcommands: [FCMFanOut.self, MessageEvents.self, ChaosSoak.self, BusyGroups.self])
}

struct FCMFanOut: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fcm",
        abstract: "FCM fan-out to a local sink: sends/s and p50/p99 latency.",
        discussion: "The sink is in-process plain HTTP/1.1 on loopback (HTTP/2 needs TLS), so these figures measure Herald's client, not Google.")

    @Option(help: "Messages per round (one per device token).") var tokens = 1000
    @Option(help: "Sends in flight at once.") var inFlight = 256
    @Option(help: "Rounds; the first warms connections up and is not counted.") var rounds = 4
    @Option(help: ArgumentHelp("An FCM endpoint to send to instead of the in-process sink, e.g. herald dev's.", valueName: "url")) var endpoint: String?

    func run() async throws {
        if let endpoint { return try await measure(endpoint: endpoint) }
        let sink = FakeFCM()
        try await withTestHTTPServer(sink.router) { port in try await measure(endpoint: "http://127.0.0.1:\(port)") }
    }

    func measure(endpoint: String) async throws {
        let transport = HTTPTransport()
        let fcm = FCMClient(
            project: "bench", endpoint: endpoint, credentials: EmulatorCredentials(),
            httpClient: transport, maximumInFlight: inFlight)
        var counted = TimedRun.empty
        for round in 0..<rounds {
            let messages = (0..<tokens).map {
                FCMMessage(
                    token: "tok-\(round)-\($0)", notification: .init(title: "Family • Alice", body: "Dinner at 6pm"),
                    data: ["conversationId": "c1", "messageId": "m\(round)"])
            }
            let run = try await TimedRun.measure(count: messages.count, inFlight: inFlight) { i in
                guard await fcm.send(messages[i].json).isSent else { throw ValidationError("send \(i) failed") }
            }
            // The first round warms connections up and is not counted.
            if round > 0 { counted.add(run) }
        }
        await transport.shutdown()
        print(
            "FCM fan-out to \(self.endpoint ?? "a local sink"): \(tokens) tokens x \(rounds - 1) rounds, \(inFlight) in flight (HTTP/2: at most \(transport.streamsPerConnection) per connection; HTTP/1.1: at most \(transport.http1ConnectionsPerOrigin) connections)"
        )
        print(String(format: "  sends/s  %.0f", counted.perSecond(tokens * (rounds - 1))))
        print("  p50      \(counted.percentile(50))")
        print("  p99      \(counted.percentile(99))")
        print("  max      \(counted.maximum)")
    }
}
