import FirestoreModel
import Foundation
import HeraldHTTPClient
import LocalCloud
import NIOCore
import NIOHTTP1

/// With `herald dev --firestore HOST:PORT`, the triggers go to that Firestore the way firebase-tools
/// registers them with Google's emulator: one Eventarc trigger per document pattern (`written`, so the
/// local cloud's own routing tells created, updated and deleted apart), whose events the emulator posts
/// to `/functions/projects/P/triggers/KEY` on its `--functions_emulator` host — this local cloud. Then
/// every write is one event, as in production. A Firestore that takes no triggers is polled instead.
struct EmulatorTriggers {
    let endpointHost: String
    let project: String
    let transport: HTTPTransport

    /// Registers a trigger for each pattern; throws with the Firestore's answer when it takes none.
    func register(_ triggers: [TriggerRegistration]) async throws -> Int {
        let patterns = Set(triggers.map(\.pattern)).sorted()
        for (index, pattern) in patterns.enumerated() {
            let key = "herald-\(index)-" + pattern.filter { $0.isLetter || $0.isNumber }.prefix(40)
            let body: JSONValue = [
                "eventType": "google.cloud.firestore.document.v1.written", "database": "(default)", "namespace": "(default)",
                "document": ["value": .string(pattern), "matchType": "PATH_PATTERN"],
            ]
            var headers = HTTPHeaders()
            headers.add(name: "content-type", value: "application/json")
            let request = HTTPRequest(
                method: .POST, url: "http://\(endpointHost)/emulator/v1/projects/\(project)/eventarcTrigger?eventarcTriggerId=\(key)", headers: headers,
                body: ByteBuffer(string: body.serialized()))
            let answer = try await transport.execute(request, timeout: .seconds(10))
            guard (200..<300).contains(Int(answer.status.code)) else {
                throw NoTriggers(reason: "it answered \(answer.status.code) to a trigger registration: \(String(buffer: answer.body).prefix(200))")
            }
        }
        return patterns.count
    }

    struct NoTriggers: Error, CustomStringConvertible {
        let reason: String
        var description: String { reason }
    }
}
