import AsyncHTTPClient
import FirestoreEvents
import FirestoreModel
import Foundation
import GoogleClients
import HeraldHTTPClient
import HeraldTesting
import Hummingbird
import LocalCloud
import Synchronization
import Testing
import WireFormats

/// A function endpoint that decodes every event it is sent, and answers with a scripted status.
final class EventReceiver: Sendable {
    let events = Mutex<[DecodedEvent]>([])
    let calls = Counter()
    let answer: @Sendable (_ call: Int) -> HTTPResponse.Status

    init(answer: @escaping @Sendable (Int) -> HTTPResponse.Status = { _ in .ok }) { self.answer = answer }

    var router: Router<BasicRequestContext> {
        let router = Router()
        router.post("/") { request, _ in
            var request = request
            let body = try await request.collectBody(upTo: 1 << 20)
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            let call = self.calls.increment()
            let status = self.answer(call)
            if status == .ok, let event = try? EventDecoder.decode(EventRequest(headers: headers, body: Array(buffer: body))) {
                self.events.withLock { $0.append(event) }
            }
            return Response(status: status)
        }
        return router
    }

    var received: [DecodedEvent] { events.withLock { $0 } }

    /// Waits (up to 10 s) until `condition` holds.
    func wait(until condition: @Sendable ([DecodedEvent]) -> Bool) async throws {
        for _ in 0..<200 {
            if condition(received) { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("timed out; received \(received.map { "\($0.envelope.type) \($0.change.document.path)" })")
    }
}

/// Requests a test holds until it releases them, counting how many are held at once.
final class HeldRequests: Sendable {
    private let counts = Mutex((now: 0, most: 0))
    let release = Flag()

    func hold() async throws -> Response {
        counts.withLock {
            $0.now += 1
            $0.most = max($0.most, $0.now)
        }
        while !release.isSet { try await Task.sleep(for: .milliseconds(20)) }
        counts.withLock { $0.now -= 1 }
        return Response(status: .ok)
    }

    var now: Int { counts.withLock { $0.now } }
    var most: Int { counts.withLock { $0.most } }
}

@Suite struct TriggerDeliveryTests {
    /// A delivery being attempted is still pending: a script that waits for quiet on `?state=pending`
    /// must not stop while a slow function is still handling an event (the chaos suite once did).
    @Test func aDeliveryInFlightIsListedAsPending() async throws {
        let answering = Flag()
        let release = Flag()
        let slow = Router()
        slow.post("/") { _, _ -> Response in
            answering.set()
            while !release.isSet { try await Task.sleep(for: .milliseconds(20)) }
            return Response(status: .ok)
        }
        try await withTestHTTPServer(slow) { port in
            try await withLocalCloud { local in
                defer { release.set() }
                local.cloud.triggers.register(TriggerRegistration(name: "slow", pattern: "rooms/{r}", kind: .created, url: "http://127.0.0.1:\(port)/"))
                _ = try await local.firestore().commit([Write(.update(try local.firestore().name("rooms/r1"), fields: ["a": .integer(1)], mask: nil))])
                while !answering.isSet { try await Task.sleep(for: .milliseconds(10)) }
                let pending = try await local.cloud.deliveries(state: "pending")
                #expect(pending.map { $0["state"]?.stringValue } == ["in_flight"])
                release.set()
                #expect(try await local.cloud.waitUntilIdle(timeout: .seconds(30)))
                let after = try await local.cloud.deliveries(state: "pending")
                let delivered = try await local.cloud.deliveries(state: "delivered")
                #expect(after.isEmpty && delivered.count == 1)
            }
        }
    }

    /// Each service takes as many deliveries at once as Cloud Run gives it (its concurrency per instance
    /// times its instances), never more; a service whose events all wait holds back no other service's.
    @Test func eachServiceTakesItsConcurrencyTimesItsInstancesAndNoMore() async throws {
        let slow = HeldRequests()
        let fast = Counter()
        let router = Router()
        for path in ["/slow", "/slow-2"] { router.post(RouterPath(path)) { _, _ in try await slow.hold() } }
        router.post("/fast") { _, _ -> Response in
            fast.increment()
            return Response(status: .ok)
        }
        try await withTestHTTPServer(router) { port in
            try await withLocalCloud { local in
                var busy = TriggerRegistration(name: "slow", pattern: "rooms/{r}", kind: .created, url: "http://127.0.0.1:\(port)/slow")
                busy.instances = ["http://127.0.0.1:\(port)/slow-2"]
                busy.concurrency = 3
                local.cloud.triggers.register(busy)
                local.cloud.triggers.register(TriggerRegistration(name: "fast", pattern: "users/{u}", kind: .created, url: "http://127.0.0.1:\(port)/fast"))
                let db = local.firestore()
                // More than the local cloud's default of 16, so one shared limit would leave the other service none.
                _ = try await db.commit(try (0..<20).map { Write(.update(try db.name("rooms/r\($0)"), fields: ["n": .integer(1)], mask: nil)) })
                for _ in 0..<500 where slow.now < 6 { try await Task.sleep(for: .milliseconds(20)) }
                _ = try await db.commit([Write(.update(try db.name("users/u1"), fields: ["n": .integer(1)], mask: nil))])
                for _ in 0..<500 where fast.value == 0 { try await Task.sleep(for: .milliseconds(20)) }
                #expect(fast.value == 1, "the other service's event waited for the busy one")
                // A moment for any delivery beyond the limit to arrive.
                try await Task.sleep(for: .milliseconds(500))
                #expect(slow.most == 6, "\(slow.most) deliveries at once; 3 per instance × 2 instances is 6")
                slow.release.set()
                #expect(try await local.cloud.waitUntilIdle(timeout: .seconds(60)))
                #expect(try await local.cloud.deliveries(state: "delivered").count == 21)
                #expect(slow.most == 6)
            }
        }
    }

    /// A function process gets as many deliveries at once as its concurrency says (80 in the catalog),
    /// not as many as a general HTTP client keeps connections to one host (32): the read storm of
    /// `herald-bench busy-groups` ran at 32 per process and its commits carried 32 events each.
    @Test func oneInstanceTakesItsWholeConcurrencyAtOnce() async throws {
        let held = HeldRequests()
        let router = Router()
        router.post("/one") { _, _ in try await held.hold() }
        try await withTestHTTPServer(router) { port in
            try await withLocalCloud { local in
                var service = TriggerRegistration(name: "one", pattern: "rooms/{r}", kind: .created, url: "http://127.0.0.1:\(port)/one")
                service.concurrency = 80
                local.cloud.triggers.register(service)
                let db = local.firestore()
                _ = try await db.commit(try (0..<100).map { Write(.update(try db.name("rooms/r\($0)"), fields: ["n": .integer(1)], mask: nil)) })
                for _ in 0..<1_000 where held.now < 80 { try await Task.sleep(for: .milliseconds(20)) }
                // A moment for any delivery beyond the limit to arrive.
                try await Task.sleep(for: .milliseconds(300))
                #expect(held.most == 80, "\(held.most) deliveries at once to one instance of concurrency 80")
                held.release.set()
                #expect(try await local.cloud.waitUntilIdle(timeout: .seconds(60)))
                #expect(try await local.cloud.deliveries(state: "delivered").count == 100)
            }
        }
    }

    /// The total in flight (`totalConcurrency`) is charged with what is delivered, not with the room a
    /// service could take: a function whose own room is the whole total (five instances of concurrency
    /// 200 against herald dev's 1,000) with nothing due leaves it to the others. Before, the first
    /// service by name took the whole total every round and the others' events stayed pending for good.
    @Test func aServiceWhoseRoomIsTheWholeTotalStarvesNoOther() async throws {
        let received = Counter()
        let router = Router()
        router.post("/b") { _, _ -> Response in
            received.increment()
            return Response(status: .ok)
        }
        try await withTestHTTPServer(router) { port in
            var options = LocalCloudOptions.testing
            options.delivery.totalConcurrency = 4
            var idle = TriggerRegistration(name: "a", pattern: "quiet/{id}", kind: .created, url: "http://127.0.0.1:\(port)/a")
            idle.concurrency = 4
            var busy = TriggerRegistration(name: "b", pattern: "rooms/{id}", kind: .created, url: "http://127.0.0.1:\(port)/b")
            busy.concurrency = 4
            options.triggers = [idle, busy]
            try await withLocalCloud(options) { local in
                let db = local.firestore()
                _ = try await db.commit(try (0..<3).map { Write(.update(try db.name("rooms/r\($0)"), fields: ["n": .integer(1)], mask: nil)) })
                #expect(try await local.cloud.waitUntilIdle(timeout: .seconds(60)), "\(received.value) of 3 delivered")
                #expect(received.value == 3)
            }
        }
    }

    /// When the total is what binds, services take turns at it: a service with many events due does not
    /// hold back another's until all of its own are done.
    @Test func whenTheTotalBindsServicesTakeTurns() async throws {
        let order = Mutex<[String]>([])
        let router = Router()
        for path in ["a", "b"] {
            router.post(RouterPath("/\(path)")) { _, _ -> Response in
                order.withLock { $0.append(path) }
                try await Task.sleep(for: .milliseconds(50))
                return Response(status: .ok)
            }
        }
        try await withTestHTTPServer(router) { port in
            var options = LocalCloudOptions.testing
            options.delivery.totalConcurrency = 2
            options.triggers = ["a", "b"].map { name in
                var trigger = TriggerRegistration(name: name, pattern: "\(name)/{id}", kind: .created, url: "http://127.0.0.1:\(port)/\(name)")
                trigger.concurrency = 2
                return trigger
            }
            try await withLocalCloud(options) { local in
                let db = local.firestore()
                // All of a's events first, then b's, in one commit: both due at once.
                let names = try (0..<30).map { try db.name("a/e\($0)") } + (0..<3).map { try db.name("b/e\($0)") }
                _ = try await db.commit(names.map { Write(.update($0, fields: ["n": .integer(1)], mask: nil)) })
                #expect(try await local.cloud.waitUntilIdle(timeout: .seconds(60)))
                let delivered = order.withLock { $0 }
                #expect(delivered.count == 33)
                let lastOfB = try #require(delivered.lastIndex(of: "b"))
                // Taking turns, b's three go within its first rounds; behind all of a's they would be last.
                #expect(lastOfB < 20, "b's last delivery was number \(lastOfB + 1) of 33: \(delivered)")
            }
        }
    }

    /// Each delivery goes to an instance with the fewest in flight, as Cloud Run routes a request to an
    /// instance with a free slot: at concurrency 1 over two instances, neither ever holds two at once
    /// (sent at random, one would within a few of the eight rounds).
    @Test func eachDeliveryGoesToAnInstanceWithAFreeSlot() async throws {
        let load = Mutex<[String: (now: Int, most: Int, calls: Int)]>([:])
        let router = Router()
        for path in ["/a", "/b"] {
            router.post(RouterPath(path)) { _, _ -> Response in
                load.withLock { load in
                    var instance = load[path, default: (0, 0, 0)]
                    instance.now += 1
                    instance.most = max(instance.most, instance.now)
                    instance.calls += 1
                    load[path] = instance
                }
                // The function's work: long enough for the other delivery to be in flight meanwhile.
                try await Task.sleep(for: .milliseconds(50))
                load.withLock { $0[path]?.now -= 1 }
                return Response(status: .ok)
            }
        }
        try await withTestHTTPServer(router) { port in
            try await withLocalCloud { local in
                var service = TriggerRegistration(name: "rooms", pattern: "rooms/{r}", kind: .created, url: "http://127.0.0.1:\(port)/a")
                service.instances = ["http://127.0.0.1:\(port)/b"]
                service.concurrency = 1
                local.cloud.triggers.register(service)
                let db = local.firestore()
                _ = try await db.commit(try (0..<16).map { Write(.update(try db.name("rooms/r\($0)"), fields: ["n": .integer(1)], mask: nil)) })
                #expect(try await local.cloud.waitUntilIdle(timeout: .seconds(60)))
                #expect(try await local.cloud.deliveries(state: "delivered").count == 16)
                let seen = load.withLock { $0 }
                #expect(seen["/a"]?.most == 1 && seen["/b"]?.most == 1, "\(seen)")
                #expect((seen["/a"]?.calls ?? 0) + (seen["/b"]?.calls ?? 0) == 16, "\(seen)")
            }
        }
    }

    @Test func everyCommittedChangeProducesExactlyTheMatchingEvents() async throws {
        let receiver = EventReceiver()
        try await withTestHTTPServer(receiver.router) { port in
            try await withLocalCloud { local in
                let url = "http://127.0.0.1:\(port)/"
                local.cloud.triggers.register(TriggerRegistration(name: "created", pattern: "rooms/{r}/messages/{m}", kind: .created, url: url))
                local.cloud.triggers.register(
                    TriggerRegistration(name: "updated", pattern: "rooms/{r}/messages/{m}", kind: .updated, url: url, contentType: .json))
                local.cloud.triggers.register(TriggerRegistration(name: "written", pattern: "users/{u}", kind: .written, url: url))
                let db = local.firestore()
                let message = try db.name("rooms/r1/messages/m1")
                let user = try db.name("users/u1")
                _ = try await db.commit([
                    Write(.update(message, fields: ["text": .string("hi"), "meta": .map(["a": .integer(1), "b": .integer(2)])], mask: nil)),
                    Write(.update(user, fields: ["name": .string("U")], mask: nil)),
                ])
                // A write that changes nothing produces no event.
                _ = try await db.commit([Write(.update(user, fields: ["name": .string("U")], mask: nil))])
                _ = try await db.commit([Write(.update(message, fields: ["meta": .map(["a": .integer(1), "b": .integer(3)])], mask: [FieldPath("meta")]))])
                _ = try await db.commit([Write(.delete(user)), Write(.delete(message))])
                // Not matching any pattern.
                _ = try await db.commit([Write(.update(try db.name("rooms/r1"), fields: [:], mask: nil))])

                try await receiver.wait { $0.count >= 4 }
                try await Task.sleep(for: .milliseconds(300))
                let events = receiver.received.sorted { ($0.change.time, $0.change.document.path) < ($1.change.time, $1.change.document.path) }
                // The no-op write, the message's deletion (no `deleted` trigger) and rooms/r1 (no pattern) produce nothing.
                #expect(
                    events.map { "\($0.envelope.type.split(separator: ".").last!) \($0.change.document.path)" } == [
                        "created rooms/r1/messages/m1", "written users/u1", "updated rooms/r1/messages/m1", "written users/u1",
                    ])
                let update = try #require(events.first { $0.envelope.type.hasSuffix(".updated") })
                #expect(update.envelope.encoding == .binaryJSON)
                #expect(update.change.updateMask == ["meta.b"])
                #expect(update.change.oldDocument?["meta"] == .map(["a": .integer(1), "b": .integer(2)]))
                #expect(update.change.newDocument?["meta"] == .map(["a": .integer(1), "b": .integer(3)]))
                let created = try #require(events.first { $0.envelope.type.hasSuffix(".created") })
                #expect(created.envelope.encoding == .binaryProtobuf)
                #expect(created.change.newDocument?["text"] == .string("hi"))
                #expect(created.envelope.source == "//firestore.googleapis.com/projects/herald-test/databases/(default)")
                let deletion = try #require(events.last { $0.change.document == user })
                #expect(deletion.change.newDocument == nil && deletion.change.oldDocument?["name"] == .string("U"))
                #expect(Set(events.map(\.change.eventID)).count == 4)
            }
        }
    }

    @Test func failedDeliveriesAreRetriedThenDeadLettered() async throws {
        // The first two attempts fail (503, then 500); the third succeeds. A second trigger always fails.
        let flaky = EventReceiver { call in call <= 2 ? (call == 1 ? .serviceUnavailable : .internalServerError) : .ok }
        let broken = EventReceiver { _ in .badRequest }
        try await withTestHTTPServer(flaky.router) { flakyPort in
            try await withTestHTTPServer(broken.router) { brokenPort in
                var options = LocalCloudOptions.testing
                options.delivery.maximumAttempts = 3
                options.triggers = [
                    TriggerRegistration(name: "flaky", pattern: "a/{id}", kind: .created, url: "http://127.0.0.1:\(flakyPort)/"),
                    TriggerRegistration(name: "broken", pattern: "a/{id}", kind: .created, url: "http://127.0.0.1:\(brokenPort)/"),
                ]
                try await withLocalCloud(options) { local in
                    _ = try await local.firestore().commit([Write(.update(try local.firestore().name("a/1"), fields: [:], mask: nil))])
                    try await flaky.wait { $0.count == 1 }
                    #expect(flaky.calls.value == 3)
                    for _ in 0..<100 where try await local.cloud.deliveries(state: "dead").isEmpty { try await Task.sleep(for: .milliseconds(50)) }
                    let dead = try await local.cloud.deliveries(state: "dead")
                    #expect(dead.count == 1)
                    #expect(dead.first?["trigger"] == "broken" && dead.first?["attempts"] == 3)
                    #expect(dead.first?["lastError"]?.stringValue?.hasPrefix("HTTP 400") == true)
                    #expect(broken.calls.value == 3)
                    // The flaky trigger's delivery is marked done only after its answer, which its receiver
                    // has sent by now: on a busy machine the mark can come a little later.
                    #expect(try await local.cloud.waitUntilIdle(timeout: .seconds(30)))
                }
            }
        }
    }

    @Test func pendingDeliveriesSurviveARestart() async throws {
        let directory = NSTemporaryDirectory() + "herald-restart-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var options = LocalCloudOptions.testing
        options.dataDirectory = directory
        // First run: the function is down (nothing listens on the trigger's port), so the event stays pending.
        let unreachable = "http://127.0.0.1:1/"
        options.triggers = [TriggerRegistration(name: "fn", pattern: "a/{id}", kind: .created, url: unreachable)]
        options.delivery.maximumAttempts = 1000
        try await withLocalCloud(options) { local in
            _ = try await local.firestore().commit([Write(.update(try local.firestore().name("a/kept"), fields: ["v": .integer(1)], mask: nil))])
            try await Task.sleep(for: .milliseconds(200))
            #expect(try await local.cloud.pendingDeliveries() == 1)
        }
        // Second run on the same data: the document is still there, and the event is delivered once the function is up.
        let receiver = EventReceiver()
        let restart = options
        try await withTestHTTPServer(receiver.router) { port in
            var options = restart
            options.triggers = [TriggerRegistration(name: "fn", pattern: "a/{id}", kind: .created, url: "http://127.0.0.1:\(port)/")]
            try await withLocalCloud(options) { local in
                #expect(try await local.firestore().get(try local.firestore().name("a/kept"))?["v"] == .integer(1))
                try await receiver.wait { $0.count == 1 }
                #expect(receiver.received.first?.change.document.path == "a/kept")
            }
        }
    }

    @Test func injectedDuplicatesReachTheFunctionTwice() async throws {
        let receiver = EventReceiver()
        try await withTestHTTPServer(receiver.router) { port in
            var options = LocalCloudOptions.testing
            options.delivery.faults = DeliveryFaults(duplicateProbability: 1)
            options.triggers = [TriggerRegistration(name: "fn", pattern: "a/{id}", kind: .created, url: "http://127.0.0.1:\(port)/")]
            try await withLocalCloud(options) { local in
                _ = try await local.firestore().commit([Write(.update(try local.firestore().name("a/1"), fields: [:], mask: nil))])
                try await receiver.wait { $0.count == 2 }
                let ids = receiver.received.map(\.change.eventID)
                #expect(ids.count == 2 && ids[0] == ids[1], "a duplicate is the same event, as Eventarc redelivers it")
            }
        }
    }

    @Test func aDroppedAnswerMakesTheSameEventArriveAgain() async throws {
        let receiver = EventReceiver()
        try await withTestHTTPServer(receiver.router) { port in
            var options = LocalCloudOptions.testing
            options.delivery.faults = DeliveryFaults(dropResponseProbability: 1)
            options.delivery.maximumAttempts = 3
            options.triggers = [TriggerRegistration(name: "fn", pattern: "a/{id}", kind: .created, url: "http://127.0.0.1:\(port)/")]
            try await withLocalCloud(options) { local in
                _ = try await local.firestore().commit([Write(.update(try local.firestore().name("a/1"), fields: [:], mask: nil))])
                try await receiver.wait { $0.count == 3 }
                #expect(Set(receiver.received.map(\.change.eventID)).count == 1)
                for _ in 0..<100 where try await local.cloud.deliveries(state: "dead").isEmpty { try await Task.sleep(for: .milliseconds(50)) }
                #expect(try await local.cloud.deliveries(state: "dead").first?["lastError"]?.stringValue?.contains("injected") == true)
            }
        }
    }
}
