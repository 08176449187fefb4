import ChatDemo
import ChatFunctions
import FirestoreModel
import Foundation
import LocalCloud

/// The chat app's part of the console: a composer that writes what the app would (a message, or a
/// conversation opened and read) and the names of the demo world's phones.
struct DemoConsole: ConsoleDomain {
    let world: DemoWorld
    let supervisor: DevSupervisor

    struct Refusal: Error, CustomStringConvertible {
        let description: String
    }

    func describe() async throws -> JSONValue {
        let people: JSONValue = .array(DemoWorld.people.map { ["value": .string($0.id), "label": .string($0.name)] })
        let conversations: JSONValue = .array(
            DemoWorld.conversations.map { conversation in
                let label = conversation.group ?? DemoWorld.members(of: conversation.id).map(\.name).joined(separator: " & ")
                return ["value": .string(conversation.id), "label": .string(label)]
            })
        var devices: [String: JSONValue] = [:]
        for person in DemoWorld.people {
            for token in person.tokens {
                let device = token.split(separator: "-").last.map { $0 == "ipad" ? "iPad" : $0.capitalized } ?? "device"
                devices[token] = .string("\(person.name)'s \(device)")
            }
        }
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

    func services() async -> JSONValue {
        await FunctionFigures.collect(from: supervisor.running.withLock { $0 }.map { ($0.name, $0.port, $0.restarts) }, identity: supervisor.cloud.identity)
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
            let now = Date()
            let id = "m-\(UInt64(now.timeIntervalSince1970 * 1000))-\(UInt32.random(in: 0...UInt32.max) % 10_000)"
            let write = try world.message(from: sender, in: conversation, text: text, id: id, at: Timestamp(microsecondsOf: now))
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
