import ChatFunctions
import FirestoreModel
import WireFormats

extension Schema.TimeFormat {
    /// The kind a field profile gives a value kept so (`FieldProfile.kind`).
    var kind: String {
        switch self {
        case .timestamp: "timestamp"
        case .epochMilliseconds: "epoch milliseconds"
        case .epochSeconds: "epoch seconds"
        }
    }

    /// As a sentence names it: "a timestamp", "epoch milliseconds".
    var described: String { self == .timestamp ? "a timestamp" : kind }
}

extension Inferring {
    /// How the app keeps times: what most fields named like times on its messages, conversations and
    /// users hold (`createdAt: Date.now()` is epoch milliseconds; FieldProfile.kind tells the units apart
    /// by size), each field by what nearly all its values are; timestamps on a tie. Proposed only when not
    /// Firestore's timestamps, the default.
    mutating func findTimeFormat() {
        var fields: [Schema.TimeFormat: [String]] = [:]
        for (group, noun) in [(messages, "messages"), (conversations, "conversations"), ([users], "users")] {
            let documents = data.documents(in: group)
            for profile in FieldProfile.profiles(of: documents).values.sorted(by: { $0.name < $1.name }) where Self.namedLikeATime(profile.name) {
                guard let format = Schema.TimeFormat.allCases.first(where: { $0.kind == profile.dominantKind }) else { continue }
                fields[format, default: []].append("\(profile.name): \(format.kind) in \(profile.count(format.kind)) of \(documents.count) \(noun)")
            }
        }
        let timestamps = fields[.timestamp]?.count ?? 0
        // In a fixed order, so a tie between the units is decided the same way on every run.
        guard
            let (format, evidence) = [Schema.TimeFormat.epochMilliseconds, .epochSeconds].map({ ($0, fields[$0] ?? []) }).max(by: { $0.1.count < $1.1.count }),
            evidence.count > timestamps
        else { return }
        timeKind = format.kind
        decide(
            "timeFormat", .string(format.rawValue),
            (evidence.prefix(3) + (timestamps > 0 ? ["\(timestamps) field(s) of timestamps"] : [])).joined(separator: ", "))
    }

    /// A field named like a time, not one Herald stamps itself (`tokensUpdatedAt`, `heraldUpdatedAt`).
    static func namedLikeATime(_ name: String) -> Bool {
        guard name != Schema.presets["default"]!.tokensUpdatedAtField, !name.hasPrefix("herald") else { return false }
        return Looks.named(name, "creat", "sent", "time", "date", "updat", "modif", "activ", "heartbeat", "seen", "ping", "until")
            || name.hasSuffix("At") || name.hasSuffix("_at")
    }
}
