import ChatFunctions
import Foundation

/// docs/schema.md, written from `Schema.keys` and the presets by `swift run herald infra` (InfraTests
/// fails when the page and the code differ): every key of a schema file, what each preset calls it,
/// who writes it and what Herald does with it.
enum SchemaDocument {
    static let presetOrder = ["default", "prd000", "prd001", "prd004"]

    static func text() -> String {
        var lines = [
            "# Your data model",
            "",
            "<!-- Written by `swift run herald infra` from Sources/ChatFunctions/SchemaKeys.swift; edit that, not this page. -->",
            "",
            "Herald reads and writes your app's Firestore documents through a *schema*: where messages,",
            "conversations and users live, and what their fields are called. Pick a preset, or write a schema file",
            "(JSON: `{\"extends\": PRESET, KEY: VALUE, …}`; keys starting with `//` are comments) for your own layout.",
            "",
            "## Presets",
            "",
            "| preset | in one line |",
            "| --- | --- |",
        ]
        lines += Schema.presetSummaries.map { "| `\($0.name)` | \($0.summary) |" }
        lines += [
            "",
            "## Your own layout, from your data to production",
            "",
            "```sh",
            "# A preset as a complete schema file, every key with a comment: a starting point to edit.",
            "swift run herald schema show prd004",
            "# A schema file proposed from your app's data (a herald export, Google's emulator's export, or a running",
            "# emulator at HOST:PORT), each key with the evidence it rests on; what the data cannot decide is left out",
            "# with a comment naming the choices.",
            "swift run herald schema infer --from Tests/Fixtures/custom-layout/export > my-schema.json",
            "# Every document that does not fit, by path, and what onMessageCreated would do with the newest messages.",
            "swift run herald schema check my-schema.json --from Tests/Fixtures/custom-layout/export",
            "```",
            "",
            "Then `herald dev --schema my-schema.json` runs the backend on it, and",
            "`herald deploy PROJECT REGION --schema my-schema.json` deploys it ([deploying.md](deploying.md)). The file",
            "reaches every function as the `HERALD_SCHEMA` environment value: the images are the same for every",
            "schema, so a change is a new revision, not a new build. The Eventarc triggers come from its paths",
            "(`herald schema deployment FILE --output DIR` shows them), the Firestore indexes from its fields. A",
            "schema file with an error is refused by name before anything is built.",
            "",
            "## Shapes Herald reads",
            "",
            "Beyond field names, the values themselves may take the shapes other chat libraries give them:",
            "",
            "| what | shapes |",
            "| --- | --- |",
            "| members, readers, receivers | an array of user ids, or a map keyed by them (`{uid: true}`, `{uid: {role: …}}`, `{uid: timestamp}`; a key set to `false` or `null` is not one) |",
            "| the sender, its name, the text, type and time of a message | a top-level field, or a path into a map (`user._id`, `user.name`: react-native-gifted-chat) |",
            "| a user's name | one field, or two joined with a space (`displayNameField` `firstName` and `familyNameField` `lastName`: flyer_chat) |",
            "| push tokens | one string, an array, the keys of a map (`{token: serverTimestamp()}` orders them and ages each on its own), documents under the user, a document per user in a collection of their own (`fcmTokens/{userId}` `{token, timestamp}`: Firebase's guide), or a document per device naming its user (`fcmTokens/{token}` `{uid}`: Firebase's Friendly Chat codelab) |",
            "| times | Firestore timestamps, or numbers: epoch milliseconds (`Date.now()`) or seconds, with `timeFormat` |",
            "",
            "An app keeps its times one way, and `timeFormat` says which. Herald reads a timestamp under any",
            "format, and a number only in the unit the schema names (a token map's values in either unit). It",
            "writes the times the app reads (the last message's, `updatedAtField`, `lastSeenField`) in that format:",
            "a list ordered by `updatedAt` would otherwise sort Herald's values apart from the app's, as Firestore",
            "orders a field's values by type first. presenceSweeper's query finds heartbeats of that format only, so",
            "`schema check` names a user whose heartbeat is kept otherwise; `schema infer` proposes the format most",
            "of the app's time fields hold. Herald's own records (the event ledger, read receipts, the",
            "`tokensUpdatedAtField` it stamps on a user document) stay timestamps, which a TTL policy needs; the",
            "time an app writes on a token document of its own is read either way (the daily pass asks for both).",
            "",
            "## Every key",
            "",
            "*Document* is where the field lives; *written by* says whether Herald only reads it (the app writes it)",
            "or writes it itself. A key a schema file leaves out keeps its preset's value.",
            "",
            "| concept | key | document | " + presetOrder.map { "`\($0)`" }.joined(separator: " | ") + " | written by | what Herald does with it |",
            "| --- | --- | --- | " + presetOrder.map { _ in "---" }.joined(separator: " | ") + " | --- | --- |",
        ]
        var previous = ""
        for key in Schema.keys {
            let concept = key.concept == previous ? "" : key.concept
            previous = key.concept
            let values = presetOrder.map { key.summary(in: Schema.presets[$0]!).replacingOccurrences(of: "|", with: "\\|") }
            lines.append(
                "| \(concept) | `\(key.name)` | \(key.place.rawValue) | \(values.joined(separator: " | ")) | \(key.writer.rawValue) | \(key.use.replacingOccurrences(of: "|", with: "\\|")) |"
            )
        }
        lines += [
            "",
            "## What a schema file may say",
            "",
            "A schema file is input like any other, checked before anything runs or deploys; each problem is named",
            "with its key. Field names are top-level Firestore field names: not empty, not `__reserved__`, at most",
            "1,500 bytes, without dots or backticks (Herald's fields are top-level) or invisible characters; the",
            "message fields Herald only reads (`senderIDField`, `senderNameField`, `textField`, `typeField`,",
            "`timestampField`) may be a path into maps instead, in Firestore's syntax (`user._id`, a name holding a dot",
            "in backticks), as react-native-gifted-chat keeps its sender. Collection",
            "ids are Firestore ids (no `/`, not `.` or `..`, not `__reserved__`). `messagePattern` is a document",
            "pattern as Eventarc takes it: named collections and `{wildcard}` document ids in turn, each wildcard once,",
            "ending with one, at most 6 KiB. Two keys may not name the same field of one document (a token field",
            "that is also the badge field), nor one inside the other's (`user` and `user._id`). Templates use only `{sender}`, `{group}` and `{preview}`, at most 500 bytes",
            "each; an alert longer than FCM takes loses the end of its text. A file is at most 64 KiB and 4 levels",
            "deep. `badgeCollection` names a collection of its own (not the users', the conversations' or the",
            "messages'); a top-level message collection is not the users' either, and `conversationIDField` is for a",
            "top-level message collection only. A key a value needs (`groupTypeValue` its `groupTypeField`,",
            "`titleKey` its title) is refused without it.",
            "",
            "## Where the badge lives",
            "",
            "Each user's badge total is a document of its own, `badges/{userId}` (the field `badgeField`), in every",
            "preset: written by Herald alone and made with the first count. The app reads it there if it shows the",
            "badge outside a push (security rules: each user may read their own). Kept in the user document instead",
            "(`\"badgeCollection\": null`), every message would write every recipient's user document, and every",
            "write to a user document starts tokenCleanup (Eventarc triggers on documents, not fields), which finds",
            "the tokens unchanged: a message to a 100-member group would cost 99 invocations, one per recipient,",
            "that do nothing.",
            "",
            "A badge found in a user document moves by itself: the user's next count starts the badge document from",
            "it and deletes the field from the user document in the same commit, on the condition that the user",
            "document is unchanged since it was read (an event that read it before is planned again, so nothing is",
            "counted twice). That one write per user starts tokenCleanup once. An app that read the field there",
            "reads `badges/{userId}` instead.",
            "",
        ]
        return lines.joined(separator: "\n")
    }
}
