import AsyncHTTPClient
import ChatDemo
import FirestoreModel
import Foundation
import GoogleClients
import HeraldHTTPClient
import HeraldTesting
import Testing
import WireFormats

/// `herald dev --firestore` with Google's emulator as the store: the triggers registered with the
/// emulator as firebase-tools registers them, each write's event sent by the emulator itself — not
/// polled, where writes between two looks would be one event.
@Suite(.serialized) struct EmulatorTriggerTests {
    @Test func everyWriteToGooglesEmulatorIsOneEvent() async throws {
        guard GoogleFirestoreEmulator.isInstalled else { try skipTest("Google's Firestore emulator is not installed") }
        let port = try GoogleFirestoreEmulator.freePort()
        try await GoogleFirestoreEmulator.run(arguments: ["--functions_emulator=127.0.0.1:\(port)"]) { host in
            let dev = try await RunningDev.start(["--port", String(port), "--firestore", host, "--seed", "demo"])
            defer { dev.kill() }
            #expect(dev.output.contains("\(host) sends each write's event"), "\(dev.output.suffix(3000))")
            #expect(!dev.output.contains("polling"))
            try await dev.waitUntilIdle()
            let db = FirestoreClient(project: "e2e", endpoint: "http://\(host)", credentials: EmulatorCredentials(), httpClient: .shared)

            // Five updates of one document at once (a poll every 250 ms would see one or two): five events.
            let bob = try db.name("users/bob")
            let before = try await Self.events(dev, trigger: "tokenCleanup", document: "users/bob")
            let started = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for round in 0..<5 {
                    group.addTask {
                        _ = try await db.commit([Write(.update(bob, fields: ["lastSeenProbe": .integer(Int64(round))], mask: [FieldPath("lastSeenProbe")]))])
                    }
                }
                try await group.waitForAll()
            }
            let elapsed = ContinuousClock.now - started
            try await dev.waitUntilIdle()
            let after = try await Self.events(dev, trigger: "tokenCleanup", document: "users/bob")
            #expect(after - before == 5, "5 updates in \(elapsed) gave \(after - before) events")
            print("five updates of users/bob in \(elapsed): \(after - before) events")

            // Three messages at once: three sets of pushes.
            let texts = (1...3).map { "Burst \($0) at \(UUID().uuidString.prefix(6))" }
            let writes = try texts.enumerated().map { index, text in
                Write(
                    .update(
                        try db.name("conversations/family/messages/burst-\(index)-\(UUID().uuidString.prefix(8))"),
                        fields: [
                            "senderId": .string("alice"), "senderName": .string("Alice"), "text": .string(text), "type": .string("text"),
                            "status": .string("sending"), "timestamp": .timestamp(Timestamp.now()),
                        ], mask: nil))
            }
            let sent = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for write in writes { group.addTask { _ = try await db.commit([write]) } }
                try await group.waitForAll()
            }
            print("three messages written in \(ContinuousClock.now - sent)")
            try await dev.waitUntilIdle()
            let pushes = try await dev.pushes()
            for text in texts {
                let alerts = pushes.filter { $0["message"]?["notification"]?["body"]?.stringValue == "Family • Alice: \(text)" }
                #expect(Set(alerts.compactMap { $0["token"]?.stringValue }) == ["tok-bob-phone", DemoWorld.bobsIPad, DemoWorld.carolsPhone], "\(text)")
            }
            #expect(try await dev.deadLetters().isEmpty)

            // The console's Firestore view reads that store: the page learns where, and the emulator
            // answers the page's requests (CORS) with what it holds.
            let about = try JSONValue(
                parsing: Array(try await HTTPClient.shared.send("GET", "\(dev.base)/", headers: ["accept": "application/json"]).body.utf8))
            #expect(about["firestore"]?.stringValue == "http://\(host)")
            let query: JSONValue = ["structuredQuery": ["from": [["collectionId": "conversations"]]]]
            let listed = try await HTTPClient.shared.send(
                "POST", "http://\(host)/v1/projects/e2e/databases/(default)/documents:runQuery",
                headers: ["origin": dev.base, "content-type": "application/json"], body: Array(query.serialized().utf8))
            #expect(listed.headers["access-control-allow-origin"] == dev.base)
            #expect(listed.body.contains("/documents/conversations/family\""))
        }
    }

    /// A Firestore that takes triggers but sends their events elsewhere (Google's emulator started
    /// without `--functions_emulator`) is found out by the probe write, and polled, saying so.
    @Test func anEmulatorThatSendsNoEventsIsPolledAndSaysWhy() async throws {
        guard GoogleFirestoreEmulator.isInstalled else { try skipTest("Google's Firestore emulator is not installed") }
        try await GoogleFirestoreEmulator.run { host in
            let dev = try await RunningDev.start(["--firestore", host, "--seed", "demo", "--no-functions"])
            defer { dev.kill() }
            #expect(dev.output.contains("polling \(host) every 250 ms"), "\(dev.output.suffix(3000))")
            #expect(dev.output.contains("--functions_emulator"))
        }
    }

    /// `--firestore google`: herald dev starts Google's emulator itself, sending its events to it, seeds
    /// it, and stops it at the end.
    @Test func heraldDevStartsGooglesEmulatorItself() async throws {
        guard GoogleFirestoreEmulator.isInstalled else { try skipTest("Google's Firestore emulator is not installed") }
        let dev = try await RunningDev.start(["--firestore", "google", "--seed", "demo", "--send", "alice→family: Dinner at 6pm"])
        defer { dev.kill() }
        let output = dev.output
        let started = try #require(output.firstMatch(of: /starting Google.s Firestore emulator on (127\.0\.0\.1:\d+)/), "\(output.suffix(3000))")
        let host = String(started.output.1)
        #expect(output.contains("\(host) sends each write's event"), "\(output.suffix(3000))")
        try await dev.waitUntilIdle()
        let db = FirestoreClient(project: "e2e", endpoint: "http://\(host)", credentials: EmulatorCredentials(), httpClient: .shared)
        let family = try #require(try await db.get(try db.name("conversations/family")))
        #expect(family.value(at: ["lastMessage", "text"]) == .string("Dinner at 6pm"))
        #expect(try await dev.stop() == 0)
        var answered = true
        for _ in 0..<50 where answered {
            answered = (try? await HTTPClient.shared.send("GET", "http://\(host)/", timeout: .seconds(1))) != nil
            if answered { try await Task.sleep(for: .milliseconds(200)) }
        }
        #expect(!answered, "Google's emulator still answers after herald dev stopped")
    }

    static func events(_ dev: RunningDev, trigger: String, document: String) async throws -> Int {
        try await dev.deliveries(state: "delivered").filter { $0["trigger"]?.stringValue == trigger && $0["document"]?.stringValue == document }.count
    }
}
