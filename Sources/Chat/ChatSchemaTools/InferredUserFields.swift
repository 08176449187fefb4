import ChatFunctions
import FirestoreModel
import PushTokens
import WireFormats

/// The fields of users: their name, badge, push tokens and presence.
extension Inferring {
    mutating func userFields() {
        let documents = data.documents(in: [users])
        let profiles = FieldProfile.profiles(of: documents)
        let total = documents.count
        let names = candidates(profiles, kind: "string", total: total) { Looks.named($0, "name") }.filter { Looks.named($0.name, "name") }
        let fullName = { (name: String) in ["displayname", "name", "fullname"].contains(name.lowercased().filter { $0 != "_" }) }
        if !names.contains(where: { fullName($0.name) }), let given = names.first(where: { Looks.givenName($0.name) }),
            let family = names.first(where: { Looks.familyName($0.name) })
        {
            decideTwoPartName(given: given.name, family: family.name, documents: documents, total: total)
        } else {
            _ = choose(
                "displayNameField", from: names, kind: "string", total: total, noun: users, hint: { fullName($0) },
                missing: "no name field in most \(users): alerts say \"Someone\" unless messages carry the sender's name")
        }
        let counters = candidates(profiles, kind: "integer", total: total) { Looks.named($0, "badge", "unread") }.filter {
            Looks.named($0.name, "badge", "unread", "count")
        }
        _ = choose(
            "badgeField", from: counters, kind: "integer", total: total, noun: users, hint: { Looks.named($0, "badge", "unread") }, missing: nil,
            herald: "unreadTotal")
        tokens(profiles, documents: documents)
        presence(profiles, total: total)
    }

    /// A name kept in two fields and no full one (flyer_chat's `firstName`, `lastName`): alerts join them.
    mutating func decideTwoPartName(given: String, family: String, documents: [FirestoreDocument], total: Int) {
        let both = documents.filter { $0[given]?.stringValue != nil && $0[family]?.stringValue != nil }
        let example = both.lazy.compactMap { Looks.name(of: $0, given: given, family: family) }.first
        let shown = example.map { ", shown as \"\($0)\"" } ?? ""
        decide("displayNameField", .string(given), "\(given) and \(family): a name in two string fields in \(both.count) of \(total) \(users)\(shown)")
        decide("familyNameField", .string(family), "joined after \(given) with a space")
    }

    /// Push tokens: a token-like string, an array of them, a map keyed by them, a subcollection of them,
    /// or a top-level collection of token documents (one per user, or one per device naming its user).
    mutating func tokens(_ profiles: [String: FieldProfile], documents: [FirestoreDocument]) {
        var shapes: [(value: JSONValue, users: Int, text: String)] = []
        func hinted(_ name: String) -> Bool { Looks.named(name, "token", "fcm", "device", "push", "registration") }
        for profile in profiles.values.sorted(by: { $0.name < $1.name }) {
            var single: [String] = []
            var array: [[String]] = []
            var mapKeys: [[String]] = []
            for user in documents {
                switch user[profile.name] {
                // A user's own id (a `uid` field) is never its token, however long.
                case .string(let text)?
                where (PushToken.looksLikeToken(text) || (hinted(profile.name) && !text.isEmpty)) && !userIDs.contains(text) && text != user.name.documentID:
                    single.append(text)
                case .array(let items)?
                where !items.isEmpty && items.allSatisfy({ $0.stringValue.map { PushToken.looksLikeToken($0) || hinted(profile.name) } ?? false }):
                    array.append(items.compactMap(\.stringValue))
                case .map(let map)? where !map.isEmpty && map.keys.allSatisfy({ PushToken.looksLikeToken($0) || hinted(profile.name) }):
                    mapKeys.append(Array(map.keys))
                default: break
                }
            }
            if !single.isEmpty {
                shapes.append(
                    (
                        ["single": .string(profile.name)], single.count,
                        "\(profile.name): one token string in \(single.count) of \(documents.count) \(users)\(Looks.kinds(single))"
                    ))
            }
            if !array.isEmpty {
                shapes.append(
                    (
                        ["array": .string(profile.name)], array.count,
                        "\(profile.name): an array of tokens in \(array.count) of \(documents.count) \(users)\(Looks.kinds(array.flatMap { $0 }))"
                    ))
            }
            if !mapKeys.isEmpty {
                shapes.append(
                    (
                        ["mapKeys": .string(profile.name)], mapKeys.count,
                        "\(profile.name): a map keyed by tokens in \(mapKeys.count) of \(documents.count) \(users)\(Looks.kinds(mapKeys.flatMap { $0 }))"
                    ))
            }
        }
        var misplaced: [String] = []
        for path in data.groups.keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) where path.count == 2 && path[0] == users {
            let tokens = data.documents(in: path)
            // Token documents keyed by an auto-id, the token in a field of another name: Herald could not read it.
            if tokens.allSatisfy({ $0["token"] == nil && !PushToken.looksLikeToken($0.name.documentID) }),
                let field = FieldProfile.profiles(of: tokens).keys.sorted().first(where: { field in
                    Self.mostly(tokens.filter { PushToken.looksLikeToken($0[field]?.stringValue ?? "") }.count, of: tokens.count)
                })
            {
                misplaced.append(
                    "\(path[1]): token documents hold the token in \(field), but Herald reads a token document's `token` field or its id: name the field token, or key each document by its token"
                )
                continue
            }
            let tokenLike = tokens.filter { document in
                PushToken.looksLikeToken(TokenDocuments.token(of: document)) || (hinted(path[1]) && document["token"]?.stringValue != nil)
            }
            guard Self.mostly(tokenLike.count, of: tokens.count) else { continue }
            let holders = Set(tokenLike.compactMap { $0.name.parent?.documentID }).count
            shapes.append(
                (
                    ["subcollection": .string(path[1])], holders,
                    "\(path[1]): token documents under \(holders) of \(documents.count) \(users)\(Looks.kinds(tokenLike.map(TokenDocuments.token(of:))))"
                ))
        }
        // Firebase's guide to managing tokens: `fcmTokens/{uid}` holding `{token, timestamp}`.
        for path in data.groups.keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) where path.count == 1 && path[0] != users {
            let all = data.documents(in: path)
            let held = all.filter { userIDs.contains($0.name.documentID) && PushToken.looksLikeToken($0["token"]?.stringValue ?? "") }
            guard !held.isEmpty, Self.mostly(held.count, of: all.count) else { continue }
            shapes.append(
                (
                    ["documentPerUser": .string(path[0])], held.count,
                    "\(path[0]): a token document for each of \(held.count) of \(documents.count) \(users), keyed by user id\(Looks.kinds(held.compactMap { $0["token"]?.stringValue }))"
                ))
        }
        // Firebase's Friendly Chat codelab: `fcmTokens/{token}` holding `{uid}`, a document per device. Only
        // a collection named for tokens: a dead token deletes its document (a log of notifications sent
        // holds tokens and user ids too).
        for path in data.groups.keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) where path.count == 1 && path[0] != users && hinted(path[0]) {
            let all = data.documents(in: path)
            let devices = all.filter { PushToken.looksLikeToken(TokenDocuments.token(of: $0)) && !userIDs.contains($0.name.documentID) }
            guard !devices.isEmpty, Self.mostly(devices.count, of: all.count) else { continue }
            let owners = FieldProfile.profiles(of: devices).keys.sorted().compactMap { field -> (field: String, users: Set<String>)? in
                let named = devices.compactMap { $0[field]?.stringValue }.filter(userIDs.contains)
                return Self.mostly(named.count, of: devices.count) ? (field, Set(named)) : nil
            }
            guard let owner = owners.max(by: { $0.users.count < $1.users.count }) else { continue }
            shapes.append(
                (
                    ["documentPerToken": ["collection": .string(path[0]), "userField": .string(owner.field)]], owner.users.count,
                    "\(path[0]): \(devices.count) token documents, each naming one of \(owner.users.count) of \(documents.count) \(users) in \(owner.field)\(Looks.kinds(devices.map(TokenDocuments.token(of:))))"
                ))
        }
        shapes.sort { $0.users > $1.users }
        guard let first = shapes.first else {
            if !misplaced.isEmpty { return leaveOpen("tokens", misplaced.joined(separator: "; ")) }
            leaveOpen(
                "tokens",
                "no user holds anything that looks like an FCM token (a long string, an array or a map of them, a subcollection of token documents, a token document per user, or a token document per device naming its user): set where your app keeps them"
            )
            return
        }
        if shapes.count > 1 && shapes[1].users * 2 > first.users {
            leaveOpen("tokens", shapes.prefix(3).map(\.text).joined(separator: "; ") + ": set the one your app writes")
        } else {
            decide("tokens", first.value, first.text)
            let object = first.value.objectValue
            if let collection = object?["documentPerUser"]?.stringValue ?? object?["documentPerToken"]?["collection"]?.stringValue {
                tokenTime(in: collection)
            }
        }
    }

    /// The time the app writes beside each token (the guide's `timestamp`): the daily pass removes tokens
    /// older than 60 days by it.
    mutating func tokenTime(in collection: String) {
        let documents = data.documents(in: [collection])
        // A timestamp (`serverTimestamp()`, as the guide writes) or a number in the app's unit.
        let kinds = Set([Schema.TimeFormat.timestamp.kind, timeKind])
        let times = FieldProfile.profiles(of: documents).values.filter { profile in Self.mostly(kinds.map(profile.count).reduce(0, +), of: documents.count) }
            .map(\.name).sorted()
        guard let field = times.first(where: { Looks.named($0, "time", "updat", "date") || $0.hasSuffix("At") }) ?? (times.count == 1 ? times.first : nil)
        else {
            return
        }
        decide("tokensUpdatedAtField", .string(field), "\(field): a time in \(documents.count) token documents: tokens older than 60 days go")
    }

    /// Presence: a boolean (or online/offline string) and the timestamp the app refreshes.
    mutating func presence(_ profiles: [String: FieldProfile], total: Int) {
        let statusWords: Set<String> = ["online", "offline", "away", "idle"]
        if let status = profiles.values.sorted(by: { $0.name < $1.name }).first(where: {
            $0.count("string") == $0.present && !$0.distinct.isEmpty && $0.distinct.isSubset(of: statusWords) && $0.distinct.contains("online")
        }) {
            decide(
                "onlineField", .string(status.name),
                "\(status.name): \(status.distinct.sorted().joined(separator: "/")) in \(status.present) of \(total) \(users)")
            decide("onlineStatusValue", "online", "the \(status.name) of an online user")
            decide("offlineStatusValue", "offline", "what Herald writes when the heartbeat is stale")
        } else {
            let flags = candidates(profiles, kind: "boolean", total: total) { Looks.named($0, "online", "active") }
            _ = choose(
                "onlineField", from: flags, kind: "boolean", total: total, noun: users, hint: { Looks.named($0, "online", "active") },
                missing: "no boolean or online/offline field in most \(users): set the field Herald marks offline")
        }
        let stamps = candidates(profiles, kind: timeKind, total: total) { Looks.named($0, "heartbeat", "seen", "active", "ping") }
            .filter { Looks.named($0.name, "heartbeat", "seen", "active", "ping", "online") }
        let heartbeat = stamps.first { Looks.named($0.name, "heartbeat", "ping") }
        let seen = stamps.first { Looks.named($0.name, "seen", "active") }
        if let heartbeat {
            decide("heartbeatField", .string(heartbeat.name), "\(heartbeat.name): \(timeKind) in \(heartbeat.count(timeKind)) of \(total) \(users)")
            decide(
                "lastSeenField", seen.map { .string($0.name) } ?? .null,
                seen.map { "\($0.name): Herald sets it to the last heartbeat" } ?? "no last-seen field: the heartbeat is the last-seen time")
        } else if let seen {
            decide("heartbeatField", .string(seen.name), "\(seen.name): \(timeKind) in \(seen.count(timeKind)) of \(total) \(users), refreshed while online")
            decide("lastSeenField", .null, "\(seen.name) is both the heartbeat and the last-seen time")
        } else {
            leaveOpen(
                "heartbeatField",
                "no timestamp named like heartbeat, lastSeen or lastActive in most \(users): set the one your app refreshes while online"
                    + numbers(profiles) { Looks.named($0, "heartbeat", "seen", "active", "ping", "online") })
        }
        for (key, atKey, word) in [("typingField", "typingAtField", "typing"), ("viewingField", "viewingAtField", "viewing")] {
            let field = profiles.values.filter { $0.count("string") > 0 && Looks.named($0.name, word) }.map(\.name).sorted().first
            let at = profiles.values.filter { $0.count(timeKind) > 0 && Looks.named($0.name, word) }.map(\.name).sorted().first
            if let field, let at {
                decide(key, .string(field), "\(field): the conversation the user is \(word) in")
                decide(atKey, .string(at), "\(at): since when")
            }
        }
    }
}
