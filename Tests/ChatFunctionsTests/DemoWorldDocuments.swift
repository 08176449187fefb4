import ChatDemo
import ChatFunctions
import FirestoreModel

/// The demo world's documents as its apps write them, for the schema tools' tests.
enum DemoWorldDocuments {
    /// The demo world as its apps write it, a message in each conversation, Erin's fields changed by `extra`.
    static func make(_ schema: Schema, extra: [String: FirestoreValue] = [:]) throws -> [FirestoreDocument] {
        let world = DemoWorld(schema: schema, project: "p")
        var writes = try world.seed()
        for (index, conversation) in DemoWorld.conversations.enumerated() {
            for (n, sender) in conversation.members.enumerated() {
                writes.append(
                    try world.message(
                        from: sender, in: conversation.id, text: "message \(n) from \(sender)", id: "m\(index)-\(n)",
                        at: Timestamp(seconds: 1_790_000_000 + Int64(index * 10 + n))))
            }
        }
        return writes.compactMap { write -> FirestoreDocument? in
            guard case .update(let name, var fields, _) = write.operation else { return nil }
            if name.path == "users/erin" { fields.merge(extra) { _, new in new } }
            return FirestoreDocument(name: name, fields: fields)
        }
    }
}
