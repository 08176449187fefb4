import FirestoreModel
import Foundation
import GoogleClients
import HeraldHTTPClient
import LocalCloud
import NIOCore
import NIOHTTP1
import WireFormats

/// With `herald dev --firestore HOST:PORT`, the triggers go to that Firestore the way firebase-tools
/// registers them with Google's emulator: one Eventarc trigger per document pattern (`written`, so the
/// local cloud's own routing tells created, updated and deleted apart), whose events the emulator posts
/// to `/functions/projects/P/triggers/KEY` on its `--functions_emulator` host — this local cloud. Then
/// every write is one event, as in production. Whether the events come here is checked with a probe
/// document; a Firestore that takes no triggers, or sends their events elsewhere, is polled instead.
struct EmulatorTriggers {
    let firestore: FirestoreClient
    let project: String
    let transport: HTTPTransport
    var endpointHost: String { firestore.endpointHost }

    static let probeCollection = "herald-probe"

    /// Registers every pattern and the probe, then writes and deletes a probe document: true once its
    /// event has come back (`probes` counts them), false when none comes within the wait. The wait grows
    /// with how slowly the Firestore answered the registrations (a busy machine, a JVM still warming up),
    /// so a slow emulator is not taken for one that sends no events.
    func connect(_ triggers: [TriggerRegistration], probes: ActivityCounter, leastWait: Duration = .seconds(3)) async throws -> Int {
        let clock = ContinuousClock()
        let started = clock.now
        let count = try await register(triggers)
        try await register(pattern: "\(Self.probeCollection)/{probe}", key: "herald-probe")
        let wait = min(max(leastWait, (clock.now - started) * 5), .seconds(30))
        let before = probes.current
        let probe = try firestore.name("\(Self.probeCollection)/\(UUID().uuidString)")
        _ = try await firestore.commit([Write(.update(probe, fields: ["at": .string("herald dev's trigger check")], mask: nil))])
        _ = try? await firestore.commit([Write(.delete(probe))])
        let deadline = ContinuousClock.now + wait
        while probes.current == before, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        guard probes.current > before else {
            throw NoTriggers(reason: "it took the triggers but sent no event for a probe write: start it with --functions_emulator at herald dev's address")
        }
        return count
    }

    /// Registers a trigger for each pattern; throws with the Firestore's answer when it takes none.
    func register(_ triggers: [TriggerRegistration]) async throws -> Int {
        let patterns = Set(triggers.map(\.pattern)).sorted()
        for (index, pattern) in patterns.enumerated() {
            try await register(pattern: pattern, key: "herald-\(index)-" + pattern.filter { $0.isLetter || $0.isNumber }.prefix(40))
        }
        return patterns.count
    }

    func register(pattern: String, key: String) async throws {
        let body: JSONValue = [
            "eventType": "google.cloud.firestore.document.v1.written", "database": "(default)", "namespace": "(default)",
            "document": ["value": .string(pattern), "matchType": "PATH_PATTERN"],
        ]
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: "application/json")
        let request = HTTPRequest(
            method: .POST, url: "http://\(endpointHost)/emulator/v1/projects/\(project)/eventarcTrigger?eventarcTriggerId=\(key)", headers: headers,
            body: ByteBuffer(string: body.serialized()))
        // Generous: the emulator's first answers can take seconds while its JVM warms up on a busy machine.
        let answer = try await transport.execute(request, timeout: .seconds(45))
        guard (200..<300).contains(Int(answer.status.code)) else {
            throw NoTriggers(reason: "it answered \(answer.status.code) to a trigger registration: \(String(buffer: answer.body).prefix(200))")
        }
    }

    struct NoTriggers: Error, CustomStringConvertible {
        let reason: String
        var description: String { reason }
    }
}
