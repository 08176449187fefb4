import AsyncHTTPClient
import ChatDemo
import ChatFunctions
import FirestoreModel
import Foundation
import GoogleClients
import WireFormats

/// Busy groups and busy people, as a load on `herald dev` (run it with `--write-rate-limit` and
/// `--instances 2`): one big group with `members` people writing `bigGroupRate` messages a second, and
/// `otherGroups` more groups of the same people at `otherGroupRate` each, for `duration`; then every
/// member reads everything. At the end the truth is checked: every alert delivered once per message per
/// recipient device, unread counts and badges exact before the reads and zero after, each device's last
/// push showing its user's stored total, each conversation's last message its newest, no dead letter;
/// and herald dev's own figure: the most any document was written by the functions in a 10 s window.
public struct BusyGroupsLoad: Sendable {
    public struct Settings: Sendable {
        public var members = 50
        public var bigGroupRate = 20.0
        public var otherGroups = 4
        public var otherGroupRate = 2.0
        public var duration: Duration = .seconds(60)
        public var readEverything = true
        /// Between one person's read marks and the next person's: each message document then takes at
        /// most one read mark per spacing, so the app's own writes stay under one a second too (1.25 s:
        /// at most 9 in any 10 s). Zero: everyone reads at once, as fast as the documents take it.
        public var readerSpacing: Duration = .milliseconds(1250)
        public init() {}
    }

    public struct Report: Sendable, CustomStringConvertible {
        public var messages = 0
        public var alertsExpected = 0
        public var alertsRecorded = 0
        public var pushesRecorded = 0
        public var mismatches: [String] = []
        public var deadLetters = 0
        /// The most writes the functions made to one document in 10 s, per second, and which document.
        public var peakByFunctions: (document: String, perSecond: Double)?
        /// The same counting the app's own writes (messages, read marks).
        public var peakAll: (document: String, perSecond: Double)?
        /// Firestore requests the functions made per message event (herald dev's count).
        public var requestsPerMessage = 0.0
        /// Write → last alert of a message, in ms.
        public var p50 = 0.0
        public var p99 = 0.0
        public var contentionRefusals = 0
        public var settled: Duration = .zero
        /// From the first read mark written to the last read's event handled.
        public var readsSettled: Duration?
        public var readEvents = 0
        /// Each function process's commits of plans' writes as its `/metrics` count them (herald dev's
        /// console figures: committed and conflicting commits, events per commit, commits that waited),
        /// or why they could not be read.
        public var processFigures: [ProcessFigures] = []

        public var description: String {
            """
            busy groups: \(messages) messages, \(alertsRecorded) of \(alertsExpected) alerts recorded (\(pushesRecorded) pushes in all), settled in \(settled)\(readsSettled.map { ", reads: \(readEvents) marks settled in \($0)" } ?? "")
              write → last alert p50 \(Int(p50)) ms, p99 \(Int(p99)) ms; Firestore requests per message event \(String(format: "%.2f", requestsPerMessage))
              most writes to one document in 10 s: by the functions \(peakByFunctions.map { String(format: "%.2f/s (%@)", $0.perSecond, $0.document) } ?? "none"), with the app's \(peakAll.map { String(format: "%.2f/s (%@)", $0.perSecond, $0.document) } ?? "none")
              commits refused for contention \(contentionRefusals), dead letters \(deadLetters), mismatches \(mismatches.count)
            """ + processFigures.filter { $0.error != nil || !$0.commits.isEmpty }.map { "\n  \($0)" }.joined()
                + mismatches.prefix(20).map { "\n    ✗ \($0)" }.joined()
        }
    }

    public let settings: Settings
    public let dev: RunningDev
    let schema = Schema.presets["default"]!

    public init(settings: Settings, dev: RunningDev) {
        self.settings = settings
        self.dev = dev
    }

    var people: [DemoWorld.Person] { (0..<settings.members).map { DemoWorld.Person(id: "u\($0)", name: "User \($0)", tokens: ["tok-u\($0)"]) } }
    var groups: [DemoWorld.Conversation] {
        let members = people.map(\.id)
        return [DemoWorld.Conversation(id: "big", members: members, group: "Big group")]
            + (0..<settings.otherGroups).map { DemoWorld.Conversation(id: "g\($0)", members: members, group: "Group \($0)") }
    }

    func rate(of group: String) -> Double { group == "big" ? settings.bigGroupRate : settings.otherGroupRate }

    public func run() async throws -> Report {
        let app = dev.app
        let world = DemoWorld(schema: schema, project: "e2e")
        for chunk in stride(from: 0, to: people.count, by: 200) {
            _ = try await app.commit(try world.seed(people: Array(people[chunk..<min(chunk + 200, people.count)]), conversations: []))
        }
        _ = try await app.commit(try world.seed(people: [], conversations: groups))
        // Generous: with many instances the functions may still be starting on a busy machine.
        try await dev.waitUntilIdle(timeout: .seconds(180))
        let requestsBefore = try await Self.requests(dev)
        let pushesBefore = try await dev.pushes().count

        // Each group's messages at its own pace, from random members, their times in send order.
        let started = ContinuousClock.now
        let sent = try await withThrowingTaskGroup(of: [(id: String, group: String, sender: String, at: Double)].self) { tasks in
            for group in groups {
                tasks.addTask {
                    var written: [(id: String, group: String, sender: String, at: Double)] = []
                    let count = Int(rate(of: group.id) * Double(settings.duration / .milliseconds(1)) / 1000)
                    for n in 0..<count {
                        let due = started + .milliseconds(Int64(Double(n) / rate(of: group.id) * 1000))
                        try await Task.sleep(until: due, clock: .continuous)
                        let sender = group.members[Int.random(in: 0..<group.members.count)]
                        let id = "\(group.id)-m\(n)"
                        let now = Date().timeIntervalSince1970
                        _ = try await app.commit([
                            try world.message(
                                from: sender, in: group.id, text: "message \(n)", id: id, at: Timestamp(microsecondsSince1970: Int64(now * 1_000_000)))
                        ])
                        written.append((id, group.id, sender, now))
                    }
                    return written
                }
            }
            return try await tasks.reduce(into: []) { $0 += $1 }
        }
        try await dev.waitUntilIdle(timeout: .seconds(600))
        var report = Report()
        report.settled = ContinuousClock.now - started
        report.messages = sent.count
        report.requestsPerMessage = Double(try await Self.requests(dev) - requestsBefore) / Double(max(sent.count, 1))
        let pushes = Array(try await dev.pushes().dropFirst(pushesBefore))
        try await check(sent: sent, pushes: pushes, readsDone: false, into: &report)

        if settings.readEverything {
            let readsStarted = ContinuousClock.now
            for person in people {
                let personStarted = ContinuousClock.now
                var writes: [Write] = []
                for group in groups {
                    let (parent, query) = try world.messagesQuery(in: group.id)
                    writes += world.reads(by: person.id, of: try await app.runQuery(query, parent: parent))
                }
                report.readEvents += writes.count
                for chunk in stride(from: 0, to: writes.count, by: 400) { _ = try await app.commit(Array(writes[chunk..<min(chunk + 400, writes.count)])) }
                try await Task.sleep(until: personStarted + settings.readerSpacing, clock: .continuous)
            }
            try await dev.waitUntilIdle(timeout: .seconds(600))
            report.readsSettled = ContinuousClock.now - readsStarted
            try await check(sent: sent, pushes: Array(try await dev.pushes().dropFirst(pushesBefore)), readsDone: true, into: &report)
        }
        report.pushesRecorded = try await dev.pushes().count - pushesBefore
        report.deadLetters = try await dev.deadLetters().count
        let writes = try JSONValue(parsing: Array(try await HTTPClient.shared.get("\(dev.base)/herald/writes").body.utf8))
        func peak(_ key: String) -> (String, Double)? {
            guard let document = writes[key]?["document"]?.stringValue, let rate = writes[key]?["perSecond"].flatMap({ Double($0.serialized()) }) else {
                return nil
            }
            return (document, rate)
        }
        report.peakByFunctions = peak("peakByFunctions")
        report.peakAll = peak("peak")
        // herald dev's own count: every commit its write-rate model refused, logged by a function or not.
        report.contentionRefusals = Int(writes["refusedForContention"]?.int64Value ?? 0)
        report.processFigures = try await Self.processFigures(dev)
        return report
    }

    /// One function process's figures of its commits, as herald dev's console reads them from its `/metrics`.
    public struct ProcessFigures: Sendable, CustomStringConvertible {
        public var name: String
        public var url: String
        /// `document commits`, `events per commit`, `commits that waited for a turn`: those it has.
        public var commits: [String: String]
        public var error: String?

        /// The console's rows of a function's commits, by label.
        static let labels = ["document commits", "events per commit", "commits that waited for a turn"]

        public var description: String {
            let figures = Self.labels.compactMap { label in
                commits[label].map { "\(label): \($0)" }
            }
            return "\(name) (\(url)): " + (error ?? figures.joined(separator: "; "))
        }
    }

    static func processFigures(_ dev: RunningDev) async throws -> [ProcessFigures] {
        let json = try JSONValue(parsing: Array(try await HTTPClient.shared.get("\(dev.base)/herald/console/functions").body.utf8))
        return (json["functions"]?.arrayValue ?? []).map { function in
            var commits: [String: String] = [:]
            for figure in function["figures"]?.arrayValue ?? [] {
                guard let label = figure["label"]?.stringValue?.trimmingCharacters(in: .whitespaces), let value = figure["value"]?.stringValue,
                    ProcessFigures.labels.contains(label)
                else { continue }
                commits[label] = value
            }
            return ProcessFigures(
                name: function["name"]?.stringValue ?? "", url: function["url"]?.stringValue ?? "", commits: commits,
                error: function["error"]?.stringValue)
        }
    }

    static func requests(_ dev: RunningDev) async throws -> Int {
        let json = try JSONValue(parsing: Array(try await HTTPClient.shared.get("\(dev.base)/herald/requests").body.utf8))
        return Int(json["firestore"]?.int64Value ?? 0)
    }

    /// The truth from the messages themselves, against the documents and the raw push records.
    func check(sent: [(id: String, group: String, sender: String, at: Double)], pushes: [JSONValue], readsDone: Bool, into report: inout Report) async throws {
        let app = dev.app
        var alerts: [String: Int] = [:]
        var lastAlert: [String: Double] = [:]
        let lastBadge = DeviceBadges.last(in: pushes)
        for record in pushes {
            guard let message = record["message"], let token = message["token"]?.stringValue else { continue }
            guard message["notification"] != nil, let id = message["data"]?["messageId"]?.stringValue else { continue }
            alerts["\(id) → \(token)", default: 0] += 1
            let at = record["receivedAt"].flatMap { Double($0.serialized()) } ?? 0
            lastAlert[id] = max(lastAlert[id] ?? 0, at)
        }
        if !readsDone {
            report.alertsExpected = 0
            report.alertsRecorded = 0
            var latencies: [Double] = []
            for message in sent {
                for member in groups.first(where: { $0.id == message.group })?.members ?? [] where member != message.sender {
                    let count = alerts["\(message.id) → tok-\(member)"] ?? 0
                    report.alertsExpected += 1
                    report.alertsRecorded += min(count, 1)
                    if count != 1 { report.mismatches.append("\(message.id) → tok-\(member): \(count) alerts") }
                }
                if let at = lastAlert[message.id] { latencies.append((at - message.at) * 1000) }
            }
            latencies.sort()
            report.p50 = latencies.isEmpty ? 0 : latencies[latencies.count / 2]
            report.p99 = latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, latencies.count * 99 / 100)]
        }
        // Counts: each member's unread in each group, and the badge their sum; all zero once everything was read.
        var badges: [String: Int64] = [:]
        for group in groups {
            guard let conversation = try await app.get(try app.name("conversations/\(group.id)")) else {
                report.mismatches.append("conversations/\(group.id) is gone")
                continue
            }
            let messages = sent.filter { $0.group == group.id }
            for member in group.members {
                let expected = readsDone ? 0 : Int64(messages.filter { $0.sender != member }.count)
                badges[member, default: 0] += expected
                let stored = conversation.value(at: [schema.unreadCountField, member])?.integerValue
                if stored != expected {
                    report.mismatches.append("\(group.id) unread of \(member): \(stored.map(String.init) ?? "none"), expected \(expected)")
                }
            }
            if let newest = messages.max(by: { $0.at < $1.at }), conversation.value(at: ["lastMessage", "messageId"])?.stringValue != newest.id {
                report.mismatches.append(
                    "\(group.id): last message \(conversation.value(at: ["lastMessage", "messageId"])?.stringValue ?? "none"), newest \(newest.id)")
            }
        }
        for person in people {
            let stored = try await app.storedBadge(of: person.id, schema: schema)?.integerValue
            if stored != badges[person.id] {
                report.mismatches.append("badge of \(person.id): \(stored.map(String.init) ?? "none"), expected \(badges[person.id] ?? 0)")
            }
            if let shown = lastBadge["tok-\(person.id)"], shown != stored {
                report.mismatches.append("the last push to tok-\(person.id) shows badge \(shown), the stored total is \(stored.map(String.init) ?? "none")")
            }
        }
    }
}
