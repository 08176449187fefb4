import Foundation
import FirestoreEvents
import FirestoreModel
import HeraldCore
import HeraldRuntime
import HeraldTesting
import Logging
import Testing

@testable import ChatFunctions

/// A gateway that counts the Firestore requests a function's reads and commit would make.
struct CountingGateway: DocumentGateway {
    let inner: SnapshotGateway
    let requests = Counter()
    var isDryRun: Bool { true }
    func read(_ names: [DocumentName]) async throws -> DocumentsRead { requests.increment(); return try await inner.read(names) }
    func list(_ collections: [CollectionPath]) async throws -> [CollectionPath: [FirestoreDocument]] {
        requests.increment()
        return try await inner.list(collections)
    }
    func lookUp(_ lookups: [ValueLookup]) async throws -> [ValueLookup: [FirestoreDocument]] {
        requests.increment()
        return try await inner.lookUp(lookups)
    }
    func execute(_ plan: Plan, for event: DocumentChange) async throws -> EffectsReport.Outcome { requests.increment(); return .applied }
}

/// A plan reads top to bottom, step by step; the runtime still reads each step in one request, and a warm
/// instance reads a conversation's members together with the conversation.
@Suite struct ReadStepsTests {
    @Test(arguments: Schema.presets.keys.sorted()) func aMessageEventTakesAtMostThreeFirestoreRequests(preset: String) async throws {
        let function = try OnMessageCreated(settings: FunctionSettings(schema: preset))
        let gateway = CountingGateway(inner: try SnapshotGateway(contentsOf: TestPaths.fixture("\(preset)/documents.json")))
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
