import ChatFunctions
import FirestoreModel
import WireFormats

/// The fields of messages and conversations, once the collections are known (users' are in
/// InferredUserFields.swift).
extension Inferring {
    /// Fields of `kind` in most documents (80 %), best first: more documents, then a name hint.
    func candidates(_ profiles: [String: FieldProfile], kind: String, total: Int, excluding: Set<String> = [], hint: (String) -> Bool = { _ in false })
        -> [FieldProfile]
    {
        profiles.values.filter { !excluding.contains($0.name) && Self.mostly($0.count(kind), of: $0.present) && $0.count(kind) * 2 >= total }
            .sorted { a, b in
                if hint(a.name) != hint(b.name) { return hint(a.name) }
                if a.count(kind) != b.count(kind) { return a.count(kind) > b.count(kind) }
                return a.name < b.name
            }
    }

    /// Picks the first candidate when it is the only one or the only one a name hint supports; else leaves the key open.
    mutating func choose(
        _ key: String, from found: [FieldProfile], kind: String, total: Int, noun: String, hint: (String) -> Bool, missing: String?,
        herald default: String? = nil
    ) -> String? {
        let hinted = found.filter { hint($0.name) }
        if let only = found.count == 1 ? found.first : (hinted.count == 1 ? hinted.first : nil) {
            decide(key, .string(only.name), "\(only.name): \(kind) in \(only.count(kind)) of \(total) \(noun)")
            return only.name
        }
        if found.count > 1 {
            leaveOpen(
                key, "\(found.prefix(4).map { "\($0.name) (\(kind) in \($0.count(kind)) of \(total))" }.joined(separator: ", ")) could each be it: set one")
        } else if let heraldsOwn = `default` {
            decide(key, .string(heraldsOwn), "not in your data: Herald writes it, as \(heraldsOwn)")
        } else if let missing {
            leaveOpen(key, missing)
        }
        return nil
    }

    mutating func messageFields() {
        let documents = data.documents(in: messages)
        let profiles = FieldProfile.profiles(of: documents)
        let total = documents.count
        let noun = messages.last!
        var used: Set<String> = [senderField, Schema.path(of: senderField)[0]]
        if let link = conversationIDField { used.insert(link) }
        // The text: of the string fields in most messages that are neither user ids, a small set of words
        // (a type, a status), nor mostly generated ids or times written as text ({...message, id}, an ISO
        // createdAt: long too), one with spaces in it before any without, then the longest values.
        func idsOrTimes(_ profile: FieldProfile) -> Bool {
            let matching = documents.filter { message in
                guard let value = message[profile.name]?.stringValue else { return false }
                return value == message.name.documentID || Looks.likeID(value) || Looks.likeTime(value)
            }
            return Self.mostly(matching.count, of: profile.count("string"))
        }
        let texts = candidates(profiles, kind: "string", total: total, excluding: used).filter { profile in
            profile.distinct.count >= 3 && !profile.distinct.allSatisfy(userIDs.contains) && !profile.distinct.isSubset(of: Looks.messageTypes)
                && !profile.distinct.isSubset(of: Looks.statuses) && !idsOrTimes(profile)
        }.map { profile in
            (profile, spaced: documents.contains { $0[profile.name]?.stringValue?.contains(where: \.isWhitespace) == true })
        }.sorted { a, b in
            if a.spaced != b.spaced { return a.spaced }
            let (left, right) = (a.0.stringLength * max(b.0.present, 1), b.0.stringLength * max(a.0.present, 1))
            return left != right ? left > right : a.0.name < b.0.name
        }.map(\.0)
        if let text = texts.first {
            textField = text.name
            used.insert(text.name)
            decide(
                "textField", .string(text.name),
                "\(text.name): varied text in \(text.count("string")) of \(total) \(noun), \(text.stringLength / max(text.count("string"), 1)) characters on average"
            )
        } else {
            leaveOpen("textField", "no string field in most \(noun) holds varied text")
        }
        let stamps = candidates(profiles, kind: timeKind, total: total, excluding: used) { Looks.named($0, "creat", "sent", "time", "date") }
        timestampField = choose(
            "timestampField", from: stamps, kind: timeKind, total: total, noun: noun, hint: { Looks.named($0, "creat", "sent", "time", "date") },
            missing: "no timestamp field in most \(noun): Herald uses each document's create time"
                + numbers(profiles) { Looks.named($0, "creat", "sent", "time", "date") })
        if let stamp = timestampField { used.insert(stamp) }
        for profile in profiles.values.sorted(by: { $0.name < $1.name }) where !used.contains(profile.name) && profile.count("string") == profile.present {
            if proposal["typeField"] == nil, profile.distinct.count <= 12, !profile.distinct.isDisjoint(with: Looks.messageTypes) {
                decide(
                    "typeField", .string(profile.name),
                    "\(profile.name): one of \(profile.distinct.sorted().joined(separator: ", ")) in \(profile.present) \(noun)")
            } else if proposal["statusField"] == nil, !profile.distinct.isEmpty, profile.distinct.isSubset(of: Looks.statuses) {
                decide(
                    "statusField", .string(profile.name), "\(profile.name): \(profile.distinct.sorted().joined(separator: ", ")) in \(profile.present) \(noun)")
            }
        }
        if proposal["statusField"] == nil {
            decideHeraldsOwn("statusField", "status", profiles, noun: noun, "Herald writes sent, delivered and read to it")
        }
        if proposal["typeField"] == nil { mediaFields(profiles, excluding: used, noun: noun) }
        // Arrays of member ids on a message: who read it, who received it, whom it mentions; or maps keyed
        // by them (`seenBy: {uid: timestamp}`) for the first two.
        for profile in profiles.values.sorted(by: { $0.name < $1.name }) {
            let maps = profile.count("map") == profile.present
            guard maps || profile.count("array") == profile.present else { continue }
            let ofMembers = documents.filter { message in
                guard let items = Schema.userIDs(in: message[profile.name]) else { return false }
                return items.allSatisfy(userIDs.contains)
            }.count
            guard Self.mostly(ofMembers, of: profile.present) else { continue }
            let evidence = "\(profile.name): \(maps ? "maps keyed by" : "arrays of") user ids in \(ofMembers) of \(total) \(noun)"
            if Looks.named(profile.name, "read", "seen"), !Looks.named(profile.name, "unread"), proposal["readByField"] == nil {
                decide("readByField", .string(profile.name), evidence)
            } else if Looks.named(profile.name, "deliver", "receiv"), proposal["deliveredToField"] == nil {
                decide("deliveredToField", .string(profile.name), evidence)
            } else if !maps, Looks.named(profile.name, "mention"), proposal["mentionsField"] == nil {
                decide("mentionsField", .string(profile.name), evidence)
            }
        }
        if proposal["readByField"] == nil {
            leaveOpen(
                "readByField",
                "no array (or map) of user ids named like read or seen in \(noun): the default readBy applies (the app writes who read a message there)")
        }
        // The sender's name, when messages carry it: equal to a name in the sender's user document (not
        // an attachment's file name).
        func namesTheSender(_ field: String) -> Bool {
            let carrying = documents.filter { Schema.value(of: field, in: $0)?.stringValue != nil }
            let matching = carrying.filter { message in
                guard let sender = Schema.value(of: senderField, in: message)?.stringValue, !sender.isEmpty, !sender.contains("/"),
                    let name = try? message.name.sibling(path: "\(users)/\(sender)"), let user = data.document(name)
                else { return false }
                let carried = Schema.value(of: field, in: message)?.stringValue
                return user.fields.values.contains { $0.stringValue == carried } || Looks.twoPartName(of: user) == carried
            }
            return Self.mostly(matching.count, of: carrying.count)
        }
        let senderPath = Schema.path(of: senderField)
        // Beside a sender inside a map (`user._id`), its name is looked for in the same map (`user.name`).
        let nested = senderPath.count == 2 ? Self.nestedStrings(in: documents, profiles: profiles, map: senderPath[0]) : []
        let names =
            profiles.values.filter { profile in
                !used.contains(profile.name) && profile.count("string") > 0 && Looks.named(profile.name, "name") && namesTheSender(profile.name)
            }.map(\.name).sorted()
            + nested.filter { Looks.named($0.last!, "name") }.map { FieldPath($0).description }.filter(namesTheSender).sorted()
        if let name = names.first {
            let carrying = documents.filter { Schema.value(of: name, in: $0)?.stringValue != nil }.count
            decide("senderNameField", .string(name), "\(name): a name on \(carrying) of \(total) \(noun)", path: Schema.path(of: name) != [name])
        }
        decide("unreadMarkField", "heraldUnread", "Herald's own mark on each message (who still counts it unread)")
    }

    mutating func conversationFields() {
        let documents = data.documents(in: conversations)
        let profiles = FieldProfile.profiles(of: documents)
        let total = documents.count
        let noun = conversations.last!
        let groups = documents.filter { members(of: $0).count > 2 }
        let pairs = documents.filter { members(of: $0).count == 2 }
        // A group flag or type: true (or one value) exactly for conversations of more than two members.
        if groups.isEmpty || pairs.isEmpty {
            leaveOpen(
                "groupFlagField",
                "every conversation read has \(groups.isEmpty ? "two" : "more than two") members: the data cannot show what marks a group (with no flag, more than two members make one)"
            )
        } else {
            for profile in profiles.values.sorted(by: { $0.name < $1.name }) where !memberFields.contains(profile.name) {
                if proposal["groupFlagField"] == nil, profile.count("boolean") == profile.present,
                    Self.mostly(
                        groups.filter { $0[profile.name] == .boolean(true) }.count + pairs.filter { $0[profile.name] != .boolean(true) }.count, of: total)
                {
                    let flagged = (groups.filter { $0[profile.name] == .boolean(true) }.count, pairs.filter { $0[profile.name] == .boolean(true) }.count)
                    decide(
                        "groupFlagField", .string(profile.name),
                        "\(profile.name): true in \(flagged.0) of \(groups.count) conversations of more than two members and \(flagged.1) of \(pairs.count) of two"
                    )
                } else if proposal["groupTypeField"] == nil, profile.count("string") == profile.present, (2...5).contains(profile.distinct.count),
                    let value = groups.first?[profile.name]?.stringValue,
                    Self.mostly(
                        groups.filter { $0[profile.name] == .string(value) }.count + pairs.filter { $0[profile.name] != .string(value) }.count, of: total)
                {
                    let typed = (groups.filter { $0[profile.name] == .string(value) }.count, pairs.filter { $0[profile.name] == .string(value) }.count)
                    decide(
                        "groupTypeField", .string(profile.name),
                        "\(profile.name): \"\(value)\" in \(typed.0) of \(groups.count) conversations of more than two members and \(typed.1) of \(pairs.count) of two"
                    )
                    decide("groupTypeValue", .string(value), "the \(profile.name) of a group")
                }
            }
            if proposal["groupFlagField"] == nil && proposal["groupTypeField"] != nil { decide("groupFlagField", .null, "groups are marked by their type") }
            let named = profiles.values.filter { profile in
                profile.count("string") > 0 && Self.mostly(groups.filter { $0[profile.name]?.stringValue != nil }.count, of: groups.count)
                    && pairs.filter { $0[profile.name]?.stringValue != nil }.count * 5 <= pairs.count && profile.name != proposal["groupTypeField"]?.stringValue
            }.map(\.name).sorted()
            if named.count == 1 || named.filter({ Looks.named($0, "name", "title") }).count == 1 {
                let name = named.count == 1 ? named[0] : named.first { Looks.named($0, "name", "title") }!
                let holding = (groups.filter { $0[name]?.stringValue != nil }.count, pairs.filter { $0[name]?.stringValue != nil }.count)
                decide(
                    "groupNameField", .string(name),
                    "\(name): a string in \(holding.0) of \(groups.count) conversations of more than two members and \(holding.1) of \(pairs.count) of two")
            } else if !named.isEmpty {
                leaveOpen("groupNameField", "\(named.joined(separator: ", ")) are each set only on groups: set the one alerts show")
            }
        }
        // Unread counts: a map of member id → integer.
        let counts = profiles.values.filter { profile in
            profile.count("map") > 0
                && Self.mostly(
                    documents.filter { conversation in
                        guard let map = conversation[profile.name]?.mapValue else { return false }
                        let members = Set(members(of: conversation))
                        return map.allSatisfy { members.contains($0.key) && $0.value.integerValue != nil }
                    }.count, of: profile.present)
        }.map(\.name).sorted()
        if counts.count == 1 {
            decide("unreadCountField", .string(counts[0]), "\(counts[0]): a map of member id to count in \(profiles[counts[0]]!.present) of \(total) \(noun)")
        } else if counts.count > 1 {
            leaveOpen("unreadCountField", "\(counts.joined(separator: ", ")) each map members to numbers: set the unread one")
        } else {
            decideHeraldsOwn("unreadCountField", "unreadCount", profiles, noun: noun, "Herald writes each member's unread count there")
        }
        lastMessage(profiles, documents: documents, noun: noun)
        updatedAt(profiles, total: total, noun: noun)
    }

    /// The time of a conversation's last activity, which Herald sets to the newest message's: a timestamp
    /// named so (updatedAt, lastActivityAt …), never any other (Herald would write over it).
    mutating func updatedAt(_ profiles: [String: FieldProfile], total: Int, noun: String) {
        func hinted(_ name: String) -> Bool { Looks.named(name, "updat", "modif", "activ") }
        let lastMessageTime = proposal["lastMessage"]?.objectValue?["flat"]?.objectValue?["timestamp"]?.stringValue
        let stamps = candidates(profiles, kind: timeKind, total: total, excluding: Set([lastMessageTime].compactMap { $0 }), hint: hinted)
            .filter { hinted($0.name) }
        if stamps.isEmpty {
            decideHeraldsOwn("updatedAtField", "updatedAt", profiles, noun: noun, "Herald sets it to the newest message's time")
        } else {
            _ = choose("updatedAtField", from: stamps, kind: timeKind, total: total, noun: noun, hint: hinted, missing: nil)
        }
    }

    /// The last message: a map holding a message's text, or fields equal to the newest message's.
    mutating func lastMessage(_ profiles: [String: FieldProfile], documents: [FirestoreDocument], noun: String) {
        let maps = profiles.values.filter { profile in
            profile.count("map") > 0 && Looks.named(profile.name, "last", "latest", "recent")
        }.map(\.name).sorted()
        if let map = maps.first {
            // The app's own map ({content, from, ts}) would lose its fields to Herald's.
            let heraldKeys: Set<String> = ["text", "senderId", "senderName", "timestamp", "messageId", "type", "status"]
            let keys = Set(documents.compactMap { $0[map]?.mapValue?.keys }.joined())
            guard keys.isSubset(of: heraldKeys) else {
                let own = keys.subtracting(heraldKeys).sorted().prefix(4).joined(separator: ", ")
                return decideHeraldsOwn(
                    "lastMessage", map, profiles, noun: noun, "Herald writes {text, senderId, …} into a map, and \(map) holds \(own) of your app's"
                ) {
                    ["map": .string($0)]
                }
            }
            decide(
                "lastMessage", ["map": .string(map)],
                "\(map): a map in \(profiles[map]!.count("map")) \(noun); Herald writes {text, senderId, senderName, timestamp, messageId, type} into it")
            return
        }
        var flat: [String: JSONValue] = [:]
        var evidence: [String] = []
        for (member, kind, words) in [
            ("text", "string", ["text", "body", "preview", "content"]), ("senderID", "string", ["sender", "author", "from"]),
            ("timestamp", timeKind, ["time", "at", "date"]),
        ] {
            let found = profiles.values.filter { profile in
                profile.count(kind) > 0 && Looks.named(profile.name, "last") && words.contains { Looks.named(profile.name, $0) }
            }.map(\.name).sorted()
            if let field = found.first {
                flat[member] = .string(field)
                evidence.append("\(field) (\(kind))")
            }
        }
        // A time alone is the conversation's last activity (updatedAtField), not a last message.
        if flat["text"] == nil && flat["senderID"] == nil {
            decideHeraldsOwn("lastMessage", "lastMessage", profiles, noun: noun, "Herald writes the newest message into that map") { ["map": .string($0)] }
        } else {
            decide("lastMessage", ["flat": .object(flat)], "\(evidence.joined(separator: ", ")): last-message fields on \(noun)")
        }
    }

    /// Without a type field, fields named for a kind of media that some messages hold (an address, a map
    /// or a list): react-native-gifted-chat keeps a photo's address in `image`, a video's in `video`.
    mutating func mediaFields(_ profiles: [String: FieldProfile], excluding used: Set<String>, noun: String) {
        let kinds = [("image", ["image", "photo", "picture"]), ("video", ["video"]), ("audio", ["audio", "voice"]), ("location", ["location"])]
        var fields: [String: JSONValue] = [:]
        var evidence: [String] = []
        for profile in profiles.values.sorted(by: { $0.name < $1.name })
        where !used.contains(profile.name) && Schema.fieldNameProblem(profile.name) == nil && !profile.name.contains(".") && !profile.name.contains("`") {
            guard let type = kinds.first(where: { $0.1.contains { Looks.named(profile.name, $0) } })?.0 else { continue }
            let holding = profile.count("string") + profile.count("map") + profile.count("array")
            guard holding > 0, holding == profile.present else { continue }
            fields[profile.name] = .string(type)
            evidence.append("\(profile.name): \(type), in \(holding) \(noun)")
        }
        guard !fields.isEmpty else { return }
        decide("mediaFields", .object(fields), "no type field; " + evidence.joined(separator: ", ") + ": a message holding one shows its label (\"📷 Photo\")")
    }

    /// What a missing time's reason adds when fields named like one hold other kinds of time (epoch
    /// milliseconds where the app's times are timestamps) or numbers of no time's size.
    func numbers(_ profiles: [String: FieldProfile], named hint: (String) -> Bool) -> String {
        let kinds = Schema.TimeFormat.allCases.map(\.kind).filter { $0 != timeKind }
        let found = profiles.values.filter { hint($0.name) }.sorted { $0.name < $1.name }
        if let other = found.lazy.compactMap({ profile in kinds.first { Self.mostly(profile.count($0), of: profile.present) }.map { (profile.name, $0) } })
            .first,
            let format = Schema.TimeFormat.allCases.first(where: { $0.kind == other.1 })
        {
            return " (\(other.0) holds \(other.1): with \"timeFormat\": \"\(format.rawValue)\" Herald reads it, if the app keeps all its times so)"
        }
        let numbers = found.filter { Self.mostly($0.count("integer") + $0.count("number"), of: $0.present) }.map(\.name)
        guard !numbers.isEmpty else { return "" }
        return
            " (\(numbers.prefix(3).joined(separator: ", ")) \(numbers.count == 1 ? "holds" : "hold") numbers of no time's size: Herald reads times as timestamps or epoch milliseconds or seconds)"
    }

    /// Decides `key` as a field only Herald writes, not found in the data: `preferred`, unless the data
    /// holds that name for the app's own values (Herald would write over them), then `herald` + `Preferred`.
    mutating func decideHeraldsOwn(
        _ key: String, _ preferred: String, _ profiles: [String: FieldProfile], noun: String, _ use: String,
        value: (String) -> JSONValue = { .string($0) }
    ) {
        guard let taken = profiles[preferred] else {
            decide(key, value(preferred), "not in your data: \(use)")
            return
        }
        let field = "herald" + preferred.prefix(1).uppercased() + preferred.dropFirst()
        decide(key, value(field), "\(preferred) in \(taken.present) \(noun) holds your app's own values, not Herald's: a field of its own, \(field): \(use)")
    }
}
