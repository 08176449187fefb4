import ArgumentParser
import ChatDemo
import ChatFunctions
import FirestoreModel
import Foundation
import GoogleClients
import HeraldHTTPClient

/// Writes a chat message into a running local cloud (or any Firestore emulator), as the app would.
struct Send: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Write a message, e.g. 'alice→family: Dinner at 6pm', into a running `herald dev`.")

    @Argument(help: "SENDER→CONVERSATION: TEXT") var message: String
    @Option(help: "The local cloud's URL.") var url = "http://127.0.0.1:8787"
    @Option(help: "Project id.") var project = "herald-local"
    @Option(help: "Schema preset or schema JSON file.") var schema = "default"

    func run() async throws {
        let world = DemoWorld(schema: try Schema.named(schema), project: project)
        guard let (write, _) = try world.message(sending: message, at: .now()) else {
            throw ValidationError("expected 'SENDER→CONVERSATION: TEXT', not \"\(message)\"")
        }
        let firestore = FirestoreClient(project: project, endpoint: url, credentials: EmulatorCredentials(), httpClient: .shared)
        do {
            _ = try await firestore.commit([write])
        } catch let error as TransportError {
            throw ValidationError("cannot reach \(url): is `herald dev` running? (\(error))")
        }
        print("wrote \(write.document.path)")
    }
}
