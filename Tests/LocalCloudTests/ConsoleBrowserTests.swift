import AsyncHTTPClient
import FirestoreModel
import Foundation
import GoogleClients
import HeraldTesting
import Hummingbird
import Testing
import WireFormats

/// `herald dev`'s console in a real browser: Debian's Chromium driven by Playwright for Python
/// (`Tests/Python/console_check.py`). The screenshots it saves are in `.build/console-screenshots/`.
@Suite(.serialized) struct ConsoleBrowserTests {
    @Test func theConsoleDrivesTheWholeFlowAndShowsEachStep() async throws {
        let (python, chromium) = try await Browser.forTest()
        let answering = Router()
        answering.post("/") { _, _ in Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: .init(string: "{}"))) }
        answering.post("/refuse") { _, _ in Response(status: .internalServerError, body: .init(byteBuffer: .init(string: "not today"))) }
        try await withTestHTTPServer(answering) { port in
            let dev = try await RunningDev.start(["--seed", "demo", "--max-attempts", "1"])
            defer { dev.kill() }
            try await dev.pauseJobs()
            // A dead letter to replay: a trigger whose service fails, then answers.
            try await Self.registerProbe(dev, url: "http://127.0.0.1:\(port)/refuse")
            let probe = try DocumentName(project: "e2e", database: "(default)", path: "probes/p1")
            _ = try await dev.app.commit([Write(.update(probe, fields: ["n": .integer(1)], mask: nil))])
            var dead: [JSONValue] = []
            for _ in 0..<100 where dead.isEmpty {
                try await Task.sleep(for: .milliseconds(100))
                dead = try await dev.deadLetters()
            }
            let deadID = try #require(dead.first?.member("id")?.int64Value, "the probe's event was not dead-lettered:\n\(dev.output.suffix(2000))")
            try await Self.registerProbe(dev, url: "http://127.0.0.1:\(port)/")

            // The composer's actions refuse what the app would never write, with the reason.
            for (action, arguments, reason) in [
                ("send", ["from": "alice", "conversation": "family"], "text is required"),
                ("send", ["from": "alice", "conversation": "family", "text": String(repeating: "x", count: 10_001)], "at most 10,000 bytes"),
                ("send", ["from": "alice", "conversation": "../../x", "text": "hi"], "invalid path segment"),
                ("open", ["reader": "bob"], "conversation is required"),
                ("reboot", [:], "no action reboot"),
            ] {
                let body = JSONValue.object(arguments.mapValues { .string($0) }).serialized()
                let answer = try await HTTPClient.shared.post(
                    "\(dev.base)/herald/console/actions/\(action)", headers: ["content-type": "application/json"], body: Array(body.utf8))
                #expect(answer.status == 400 && answer.body.contains(reason), "\(action) \(arguments.keys.sorted()): \(answer.status) \(answer.body)")
            }

            let screenshots = TestPaths.packageRoot.appendingPathComponent(".build/console-screenshots").path
            let script = TestPaths.packageRoot.appendingPathComponent("Tests/Python/console_check.py").path
            let run = try await ProcessRunner.run(python, [script, dev.base, screenshots, chromium, String(deadID)])
            #expect(
                run.status == 0,
                "console check failed:\n\(run.stdoutText.suffix(3000))\n\(run.stderr.prefix(3000))…\(run.stderr.suffix(1000))\nherald dev:\n\(dev.output.suffix(3000))"
            )
            print("console screenshots: \(screenshots)")

            // What the page did, as the local cloud saw it.
            #expect(try await dev.deadLetters().isEmpty)
            let pushes = try await dev.pushes()
            #expect(pushes.contains { $0.member("token")?.stringValue == "tok-bob-phone" })
        }
    }

    static func registerProbe(_ dev: RunningDev, url: String) async throws {
        let trigger: JSONValue = ["name": "probe", "pattern": "probes/{id}", "kind": "created", "url": .string(url), "contentType": "json"]
        let response = try await HTTPClient.shared.post(
            "\(dev.base)/herald/triggers", headers: ["content-type": "application/json"], body: Array(trigger.serialized().utf8))
        #expect(response.status == 200)
    }
}
