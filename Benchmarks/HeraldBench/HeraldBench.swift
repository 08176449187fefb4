import ArgumentParser
import AsyncHTTPClient
import Foundation
import FirestoreModel
import GoogleClients
import HeraldTesting

/// Figures, not tests: `swift run -c release herald-bench fcm`.
@main
struct HeraldBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald-bench", abstract: "Herald's benchmarks; each prints its figures.", subcommands: [FCMFanOut.self, MessageEvents.self])
}

struct FCMFanOut: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fcm",
        abstract: "FCM fan-out to a local sink: sends/s and p50/p99 latency.",
        discussion: "The sink is in-process plain HTTP/1.1 on loopback (HTTP/2 needs TLS), so these figures measure Herald's client, not Google.")

    @Option(help: "Messages per round (one per device token).") var tokens = 1000
    @Option(help: "Sends in flight at once.") var inFlight = 256
    @Option(help: "Rounds; the first warms connections up and is not counted.") var rounds = 4

    func run() async throws {
        let sink = FakeFCM()
        try await withTestHTTPServer(sink.router) { port in
            let lanes = FCMClient.makeHTTPClients(maximumInFlight: inFlight)
            let fcm = FCMClient(project: "bench", endpoint: "http://127.0.0.1:\(port)", credentials: EmulatorCredentials(),
                                httpClients: lanes, maximumInFlight: inFlight)
            var latencies: [Duration] = []
            var elapsed = Duration.zero
            for round in 0..<rounds {
                let messages = (0..<tokens).map { FCMMessage(token: "tok-\(round)-\($0)", notification: .init(title: "Family • Alice", body: "Dinner at 6pm"),
                                                             data: ["conversationId": "c1", "messageId": "m\(round)"]) }
                let clock = ContinuousClock()
                let start = clock.now
                let timed = await withTaskGroup(of: (Duration, Bool).self) { group in
                    var next = 0
                    var results: [(Duration, Bool)] = []
                    func start(_ i: Int) {
                        group.addTask {
                            let t0 = clock.now
                            let result = await fcm.send(messages[i].json, lane: i)
                            return (clock.now - t0, result.isSent)
                        }
                    }
                    while next < min(inFlight, messages.count) { start(next); next += 1 }
                    for await result in group {
                        results.append(result)
                        if next < messages.count { start(next); next += 1 }
                    }
                    return results
                }
                let took = clock.now - start
                guard timed.allSatisfy(\.1) else { throw ValidationError("some sends failed") }
                if round > 0 {
                    latencies += timed.map(\.0)
                    elapsed += took
                }
            }
            for lane in lanes { try await lane.shutdown() }
            latencies.sort()
            func ms(_ d: Duration) -> String { String(format: "%.2f ms", Double(d.components.attoseconds) / 1e15 + Double(d.components.seconds) * 1000) }
            let counted = tokens * (rounds - 1)
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            print("FCM fan-out to a local sink: \(tokens) tokens x \(rounds - 1) rounds, \(inFlight) in flight, \(lanes.count) connection lane(s)")
            print(String(format: "  sends/s  %.0f", Double(counted) / seconds))
            print("  p50      \(ms(latencies[latencies.count / 2]))")
            print("  p99      \(ms(latencies[latencies.count * 99 / 100]))")
            print("  max      \(ms(latencies.last!))")
        }
    }
}
