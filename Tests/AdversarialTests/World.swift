import AsyncHTTPClient
import ChatDemo
import ChatFunctions
import FirestoreEvents
import FirestoreModel
import Foundation
import GoogleClients
import HeraldTesting
import Testing
import WireFormats

/// The demo world on `herald dev`, and the documents and events the adversarial tests need from it.
struct DevWorld {
    let dev: RunningDev
    let demo = DemoWorld(schema: Schema.presets["default"]!, project: "e2e")
    var app: FirestoreClient { dev.app }

    func name(_ path: String) throws -> DocumentName { try DocumentName(project: "e2e", path: path) }

    func document(_ path: String) async throws -> FirestoreDocument? { try await app.get(try name(path)) }

    /// The user's badge as stored (in `badges/{user}`, every preset's place for it).
    func badge(_ user: String) async throws -> FirestoreValue? { try await app.storedBadge(of: user, schema: demo.schema) }

    func set(_ path: String, _ fields: [String: FirestoreValue]) async throws {
        _ = try await app.commit([Write(.update(try name(path), fields: fields, mask: fields.keys.map { FieldPath($0) }))])
    }

    /// Alice writes a message to the family group (and the test reads it back with its versions).
    func message(_ id: String, text: String = "Dinner at 6pm") async throws -> FirestoreDocument {
        _ = try await app.commit([try demo.message(from: "alice", in: "family", text: text, id: id, at: Timestamp.now())])
        return try #require(try await document("conversations/family/messages/\(id)"))
    }

    /// The message's `created` event as Eventarc would deliver it.
    func created(_ message: FirestoreDocument, id: String, withData: Bool = true) throws -> EventRequest {
        try EventarcRequest.make(id: id, kind: .created, document: message, name: message.name, withData: withData)
    }

    func tokens(of user: String) async throws -> [String] {
        try await document("users/\(user)")?["fcmTokens"]?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    func pushedTokens() async throws -> [String] {
        try await dev.pushes().compactMap { $0["message"]?["token"]?.stringValue }.sorted()
    }

    /// `herald dev --seed demo` with no functions of its own: the test runs the one under test and posts its events.
    /// - fcmOnly: Bob's iPad and Carol's phone hold FCM tokens (`tok-bob-ipad`, `tok-carol-phone`)
    ///   instead of an APNs and an Expo token, for tests of what FCM's answers do.
    static func start(_ arguments: [String] = [], fcmOnly: Bool = false) async throws -> DevWorld {
        let world = try await launch(arguments)
        if fcmOnly {
            try await world.set("users/bob", ["fcmTokens": .array([.string("tok-bob-phone"), .string("tok-bob-ipad")])])
            try await world.set("users/carol", ["fcmTokens": .array([.string("tok-carol-phone")])])
        }
        return world
    }

    static func launch(_ arguments: [String]) async throws -> DevWorld {
        let dev = try await RunningDev.start(["--seed", "demo", "--no-functions"] + arguments)
        for _ in 0..<100 where try await dev.app.get(try DocumentName(project: "e2e", path: "users/carol")) == nil {
            try await Task.sleep(for: .milliseconds(100))
        }
        return DevWorld(dev: dev)
    }
}

/// Lines of `herald dev`'s log saying a function process died.
func deaths(in output: String) -> [Substring] {
    output.split(separator: "\n").filter { $0.contains("was killed by signal") || $0.contains("exited with status") || $0.contains("crashed") }
}
