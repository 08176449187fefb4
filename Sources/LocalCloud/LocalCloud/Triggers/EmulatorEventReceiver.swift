import EmbeddedFirestore
import FirestoreEvents
import FirestoreModel
import Foundation
import WireFormats

/// Where Google's Firestore emulator sends the events of the triggers registered with it, when it is
/// started with `--functions_emulator` at this local cloud (as firebase-tools starts it beside its
/// functions emulator): `POST /functions/projects/P/triggers/KEY`, each write's event as it happens.
/// Each is queued as the local store's own would be, so it reaches the functions whose triggers match
/// with the same retries, dead letters and console. The emulator's 2nd-gen events are binary-mode
/// CloudEvents whose body is the base64 text of the protobuf, with `projects/` doubled in `ce-source`
/// (firebase-tools mends both before calling a function); both are mended here.
struct EmulatorEventReceiver {
    /// The trigger `herald dev` registers to learn whether the emulator sends events here at all (it
    /// does only when started with `--functions_emulator` at this address): counted, not delivered.
    static let probeKey = "herald-probe"

    let cloud: LocalCloud

    func handle(_ request: LocalRequest, key: String) async throws(LocalAPIError) -> LocalResponse {
        guard request.method == "POST" else { throw .notFound("the functions emulator's trigger endpoint takes POST") }
        if key == Self.probeKey {
            cloud.emulatorProbes.bump()
            return LocalResponse(json: [:])
        }
        var headers = request.headers
        if let source = headers["ce-source"] { headers["ce-source"] = source.replacingOccurrences(of: "/projects/projects/", with: "/projects/") }
        var body = request.body
        if headers["content-type"]?.hasPrefix("application/protobuf") == true, let decoded = Data(base64Encoded: Data(body)) { body = Array(decoded) }
        let event: DecodedEvent
        do { event = try EventDecoder.decode(EventRequest(headers: headers, body: body)) } catch {
            throw .invalidArgument("The emulator's event cannot be read: \(error.reason)")
        }
        let change = event.change
        try await cloud.enqueueEvents(
            for: [LocalFirestore.Change(name: change.document, before: change.oldDocument, after: change.newDocument)], at: change.time)
        return LocalResponse(json: [:])
    }
}
