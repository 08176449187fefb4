import FirestoreEvents
import FirestoreModel
import Foundation
import HeraldCore
import HeraldTesting
import Logging
import Synchronization
import Testing

@testable import ChatFunctions
@testable import HeraldRuntime

/// A gateway that counts the Firestore requests a function's reads and commit would make.
struct CountingGateway: DocumentGateway {
    let inner: SnapshotGateway
    let requests = Counter()
    var isDryRun: Bool { true }
    func read(_ names: [DocumentName]) async throws -> DocumentsRead {
        requests.increment()
        return try await inner.read(names)
    }
    func list(_ collections: [CollectionPath]) async throws -> [CollectionPath: [FirestoreDocument]] {
        requests.increment()
        return try await inner.list(collections)
    }
    func lookUp(_ lookups: [ValueLookup]) async throws -> [ValueLookup: [FirestoreDocument]] {
        requests.increment()
        return try await inner.lookUp(lookups)
    }
    func execute(_ plan: Plan, for event: DocumentChange, delivery: String) async throws -> EffectsReport.Outcome {
        requests.increment()
        return .applied
    }
}

/// A plan reads top to bottom, step by step; the runtime still reads each step in one request, and a warm
/// instance reads a conversation's members together with the conversation.
@Suite struct ReadStepsTests {
    @Test(arguments: Schema.presets.keys.sorted()) func aMessageEventTakesAtMostThreeFirestoreRequests(preset: String) async throws {
        let function = try OnMessageCreated(settings: FunctionSettings(schema: preset))
        let gateway = CountingGateway(inner: try SnapshotGateway(contentsOf: TestPaths.fixture("\(preset)/documents.json").path))
        let processor = EventProcessor(function: function, gateway: gateway)
        let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        let request = try Fixture.request(from: Array(Data(contentsOf: TestPaths.fixture("\(preset)/message-created.binary-protobuf.json"))))
        let first = try #require(await processor.process(request, logger: logger).report)
        #expect(first.plan.decision == .apply && !first.plan.allWrites.isEmpty)
        #expect(gateway.requests.value == 3, "cold: the conversation and message, then the members, then one commit")
        let second = try #require(await processor.process(request, logger: logger).report)
        #expect(second.plan == first.plan)
        #expect(gateway.requests.value == 3 + 2, "warm: everything in one read, then one commit")
    }

    /// Who joins is read with the conversation from the next event on; who left stops being read once the
    /// prediction is checked again (every `ReadAhead.checkEvery` uses), never a wrong plan meanwhile.
    @Test func theMembersReadAheadFollowWhoJoinsAndWhoLeaves() async throws {
        let world = ChangingWorld(Array(try SnapshotGateway(contentsOf: TestPaths.fixture("default/documents.json").path).documents.values))
        let processor = EventProcessor(function: OnMessageCreated(schema: Schema.presets["default"]!), gateway: world)
        let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        let request = try Fixture.request(from: Array(Data(contentsOf: TestPaths.fixture("default/message-created.binary-protobuf.json"))))
        func send() async throws -> (requests: Int, users: Set<String>, pushes: Set<String>) {
            world.asked.withLock { $0 = [] }
            let report = try #require(await processor.process(request, logger: logger).report)
            let asked = world.asked.withLock { $0 }
            let users = Set(asked.joined().map(\.path).filter { $0.hasPrefix("users/") })
            return (asked.count, users, Set(report.plan.pushes.map(\.userID)))
        }
        _ = try await send()
        let warm = try await send()
        #expect(warm.requests == 1 && warm.users == ["users/alice", "users/bob", "users/carol"])

        world.setMembers(["alice", "bob", "carol", "dave"], addingUser: "dave")
        let joined = try await send()
        #expect(joined.requests == 2 && joined.pushes.contains("dave"), "dave's document is read in a step of its own, once")
        #expect(try await send().requests == 1)

        world.setMembers(["alice", "bob", "dave"])
        var stillReadingCarol = 0
        for _ in 0..<(2 * ReadAhead.checkEvery) {
            let sent = try await send()
            #expect(sent.requests == 1 && !sent.pushes.contains("carol"))
            if sent.users.contains("users/carol") { stillReadingCarol += 1 }
        }
        #expect(stillReadingCarol > 0 && stillReadingCarol <= ReadAhead.checkEvery, "read \(stillReadingCarol) times after she left")
    }

    @Test func thePlanSaysWhatEachStepReads() throws {
        let schema = Schema.presets["default"]!
        let conversation = try DocumentName(project: "p", path: "conversations/c1")
        let messageName = try DocumentName(project: "p", path: "conversations/c1/messages/m1")
        let message = FirestoreDocument(name: messageName, fields: ["senderId": .string("alice"), "text": .string("Hi")], createTime: Timestamp(seconds: 1))
        let change = DocumentChange(eventID: "e", kind: .created, time: Timestamp(seconds: 1), document: messageName, newDocument: message)
        let world = [message, FirestoreDocument(name: conversation, fields: ["members": .array([.string("alice"), .string("bob")])])]
        let (plan, steps) = OnMessageCreated(schema: schema).plan(for: change, from: world)
        #expect(steps.map { $0.documents.map(\.path) } == [["conversations/c1", "conversations/c1/messages/m1"], ["users/alice", "users/bob"]])
        #expect(plan.decision == .apply, "users without documents still get their unread counts")
        // A function that asks forever is stopped, not looped.
        struct Greedy: EventFunction {
            static let name = "greedy", summary = "asks for one more document every time"
            var trigger: Trigger { Trigger(pattern: "{any}/{id}", kinds: [.created]) }
            func plan(for change: DocumentChange, reading: Reads) throws(NotReadYet) -> Plan {
                var next = 0
                while try reading.document(try! DocumentName(project: "p", path: "c/\(next)")) == nil { next += 1 }
                return Plan(writes: [])
            }
        }
        let greedy = Greedy().plan(for: change, from: [])
        #expect(greedy.steps.count == Greedy.maximumReadSteps)
        #expect(greedy.plan.decision == .skip(reason: "the function kept asking for more documents after 4 steps"))
    }
}

/// The tests' way of planning (`plan(for:from:)`) and the runtime's (`EventProcessor`) are one loop,
/// `PlanSteps`: a function that needs exactly the most reads allowed is planned by both, one that
/// needs one more is given up by both. (Before, the tests' loop gave up a read earlier than production's.)
@Suite struct OnePlanDriverTests {
    /// Reads `c/0`, `c/1`, … one at a time until one is missing, then applies an empty plan.
    struct Chain: EventFunction {
        static let name = "chain", summary = "reads one document after another"
        var trigger: Trigger { Trigger(pattern: "{any}/{id}", kinds: [.created]) }
        func plan(for change: DocumentChange, reading: Reads) throws(NotReadYet) -> Plan {
            var next = 0
            while next < 10, let name = try? DocumentName(project: "p", path: "c/\(next)"), try reading.document(name) != nil { next += 1 }
            return Plan(writes: [Write(.delete(change.document))])
        }
    }

    static func documents(_ count: Int) throws -> [FirestoreDocument] {
        try (0..<count).map { FirestoreDocument(name: try DocumentName(project: "p", path: "c/\($0)"), fields: [:]) }
    }

    /// (the tests' decision, the runtime's HTTP status) for a world of `count` chained documents.
    static func bothWays(count: Int) async throws -> (test: Plan.Decision, runtime: Int) {
        let documents = try documents(count)
        let event = try DocumentName(project: "p", path: "e/1")
        let change = DocumentChange(
            eventID: "chain-\(count)", kind: .created, time: Timestamp(seconds: 1), document: event,
            newDocument: FirestoreDocument(name: event, fields: [:], createTime: Timestamp(seconds: 1)))
        let tested = Chain().plan(for: change, from: documents)
        let processor = EventProcessor(function: Chain(), gateway: SnapshotGateway(documents: documents))
        let request = try EventarcRequest.make(id: change.eventID, kind: .created, document: change.newDocument, name: event, time: change.time)
        let answer = await processor.process(request, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        return (tested.plan.decision, answer.status)
    }

    @Test func theTestsAndTheRuntimePlanAlikeAtTheLimit() async throws {
        // The last document read is missing: `count` documents take count + 1 reads.
        let atLimit = try await Self.bothWays(count: Chain.maximumReadSteps - 1)
        #expect(atLimit.test == .apply)
        #expect(atLimit.runtime == 200)
        let over = try await Self.bothWays(count: Chain.maximumReadSteps)
        #expect(over.test != .apply)
        #expect(over.runtime >= 400, "the runtime gives up too")
    }
}

/// A world a test can change between events; it records each batch of document names read.
final class ChangingWorld: DocumentGateway {
    let documents: Mutex<[FirestoreDocument]>
    let asked = Mutex<[[DocumentName]]>([])
    var isDryRun: Bool { true }

    init(_ documents: [FirestoreDocument]) { self.documents = Mutex(documents) }

    var snapshot: SnapshotGateway { SnapshotGateway(documents: documents.withLock { $0 }) }

    func setMembers(_ members: [String], addingUser user: String? = nil) {
        documents.withLock { documents in
            for index in documents.indices where documents[index].name.path.hasPrefix("conversations/") && !documents[index].name.path.contains("/messages/") {
                documents[index].fields["members"] = .array(members.map { .string($0) })
            }
            if let user, let any = documents.first(where: { $0.name.path.hasPrefix("users/") }) {
                var added = any
                added.name = try! DocumentName(project: any.name.project, path: "users/\(user)")
                added.fields = ["displayName": .string(user.capitalized), "fcmTokens": .array([.string("tok-\(user)-phone")])]
                documents.append(added)
            }
        }
    }

    func read(_ names: [DocumentName]) async throws -> DocumentsRead {
        asked.withLock { $0.append(names) }
        return try await snapshot.read(names)
    }
    func list(_ collections: [CollectionPath]) async throws -> [CollectionPath: [FirestoreDocument]] { try await snapshot.list(collections) }
    func lookUp(_ lookups: [ValueLookup]) async throws -> [ValueLookup: [FirestoreDocument]] { try await snapshot.lookUp(lookups) }
    func execute(_ plan: Plan, for event: DocumentChange, delivery: String) async throws -> EffectsReport.Outcome { .applied }
}
