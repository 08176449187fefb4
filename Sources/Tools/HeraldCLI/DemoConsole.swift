import ChatDemo
import ChatFunctions
import FirestoreModel
import Foundation
import LocalCloud
import Synchronization
import WireFormats

/// The chat app's part of the console: a composer that writes what the app would (a message, or a
/// conversation opened and read) and the names of the demo world's phones.
struct DemoConsole: ConsoleDomain {
    let world: DemoWorld
    let supervisor: DevSupervisor

    struct Refusal: Error, CustomStringConvertible {
        let description: String
    }

    /// People, chats and phones as the documents say (the demo world's, or a seed's or an import's),
    /// read through the schema: at most 200 of each, in id order.
    func describe() async throws -> JSONValue {
        let schema = world.schema
        let users = try await supervisor.documents(in: schema.userCollection, limit: 200)
        var names: [String: String] = [:]
        var devices: [String: JSONValue] = [:]
        for user in users {
            let id = user.name.documentID
            let name = schema.displayName(of: user) ?? id
            names[id] = name
            let tokens = schema.tokens(of: user)
            for (index, token) in tokens.enumerated() {
                devices[token] = .string(Self.deviceName(token: token, owner: name, index: index, of: tokens.count))
            }
        }
        let people: JSONValue = .array(users.map { ["value": .string($0.name.documentID), "label": .string(names[$0.name.documentID] ?? "")] })
        let conversations: JSONValue = .array(
            try await supervisor.documents(in: schema.conversationCollection, limit: 200).map { conversation in
                let members = schema.members(of: conversation)
                let label =
                    conversation[schema.groupNameField]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
                    ?? members.map { names[$0] ?? $0 }.joined(separator: " & ")
                return ["value": .string(conversation.name.documentID), "label": .string(label.isEmpty ? conversation.name.documentID : label)]
            })
        return [
            "actions": [
                [
                    "name": "send", "label": "Send",
                    "parameters": [
                        ["name": "from", "label": "As", "choices": people],
                        ["name": "conversation", "label": "To", "choices": conversations],
                        ["name": "text", "label": "Message"],
                    ],
                ],
                [
                    "name": "open", "label": "Open",
                    "parameters": [
                        ["name": "reader", "label": "Who", "choices": people],
                        ["name": "conversation", "label": "Opens", "choices": conversations],
                    ],
                ],
            ],
            "devices": .object(devices),
        ]
    }

    func logs(limit: Int) async -> JSONValue { supervisor.console.functionLog.json(limit: limit) }

    func services() async -> JSONValue {
        let processes = supervisor.running.withLock { $0 }.map { process in
            (process.name, process.port, process.environment["HERALD_REQUIRE_OIDC_AUDIENCE"] ?? "http://127.0.0.1:\(process.port)/", process.restarts)
        }
        return await FunctionFigures.collect(from: processes, identity: supervisor.cloud.identity)
    }

    /// "Bob's iPad" for the demo's iPad, or for a token ending in `-ipad`; "Bob's device 2" for a token that says nothing.
    static func deviceName(token: String, owner: String, index: Int, of count: Int) -> String {
        if let known = DemoWorld.deviceNames[token] { return known }
        let kind = token.split(separator: "-").last.map(String.init) ?? ""
        let known = ["phone": "Phone", "ipad": "iPad", "tablet": "Tablet", "web": "Browser", "laptop": "Laptop"][kind.lowercased()]
        return "\(owner)'s \(known ?? (count > 1 ? "device \(index + 1)" : "device"))"
    }

    func perform(_ action: String, arguments: [String: String]) async throws -> String {
        func argument(_ name: String) throws -> String {
            guard let value = arguments[name]?.trimmingCharacters(in: .whitespacesAndNewlines), !value.isEmpty else {
                throw Refusal(description: "\(name) is required")
            }
            return value
        }
        switch action {
        case "send":
            let (sender, conversation, text) = (try argument("from"), try argument("conversation"), try argument("text"))
            guard text.utf8.count <= 10_000 else { throw Refusal(description: "a message is at most 10,000 bytes here") }
            let now = Timestamp.now()
            let write = try world.message(
                from: sender, in: conversation, text: text, id: DemoWorld.messageID(at: now), at: now)
            _ = try await supervisor.commit(write)
            return "wrote \(write.document.path)"
        case "open":
            let (reader, conversation) = (try argument("reader"), try argument("conversation"))
            let count = try await supervisor.open(conversation, by: reader)
            return "\(reader) opened \(conversation): \(count) message(s) marked read"
        default:
            throw Refusal(description: "no action \(action.prefix(40))")
        }
    }
}
