import FirestoreModel
import Foundation
import HeraldTesting
import Testing
import WireFormats

/// The web SDK's transport, WebChannel, in a real browser: a page served from its own loopback port
/// (as Expo web or Vite serve an app) runs a client that sends exactly what firebase-js-sdk sends
/// (`Tests/Python/webchannel/`, each request traced to the SDK file it mirrors) in Chromium.
@Suite(.serialized) struct WebChannelBrowserTests {
    enum Mode: String, CaseIterable { case streaming, longPolling }

    /// One scripted session (listen to a document and a query, write, delete, a document leaving the
    /// query, resume with a token) against Google's emulator and against herald's local cloud: at each
    /// step the listener's view (what onSnapshot shows) and the write's answer are the same. The
    /// messages that bring a view differ where the emulator re-sends a whole query after each change
    /// (RESET) while the local cloud sends the change, as Firestore does; both are Listen's protocol.
    /// Google's emulator runs the streaming session: in long polling it leaves the first write of a
    /// fresh instance unanswered (docs/webchannel.md), so herald's long-polling session is held to the
    /// emulator's streaming answers, which a view does not depend on.
    @Test func aSessionSeesWhatGooglesEmulatorShows() async throws {
        let (python, chromium) = try await Browser.forTest()
        guard GoogleFirestoreEmulator.isInstalled else { try skipTest("Google's Firestore emulator is not installed") }
        let google = try await FirestoreBackend.google.run { host in
            try await Self.session(python, chromium, base: "http://\(host)", project: "webchannel", session: "differential", mode: .streaming)
        }
        let expected = try #require(google["steps"]?.objectValue)
        for mode in Mode.allCases {
            let result = try await FirestoreBackend.herald.run { host in
                try await Self.session(python, chromium, base: "http://\(host)", project: "webchannel", session: "differential", mode: mode)
            }
            let herald = try #require(result["steps"]?.objectValue)
            #expect(expected.keys.sorted() == herald.keys.sorted())
            for step in expected.keys.sorted() {
                let want = Self.comparable(expected[step])
                let got = Self.comparable(herald[step])
                #expect(got == want, "\(mode) \(step): herald \(got.serialized()) vs Google's emulator \(want.serialized())")
            }
            // What the steps must show, whichever server: the message in the query, then out of it; the
            // delete emptied the document target; the resumed listener has what was written meanwhile.
            #expect(herald["create"]?["view"]?["4"]?["msgs/m1"]?["text"]?["stringValue"]?.stringValue == "Dinner at 6pm • 📷 Photo")
            #expect(herald["leaveQuery"]?["view"]?["4"]?["msgs/m1"] == nil)
            #expect(herald["delete"]?["view"]?["2"]?.objectValue?.isEmpty == true)
            #expect(herald["resumed"]?["view"]?["4"]?["msgs/m2"] != nil)
            #expect(herald["resumed"]?["filterMismatches"]?.int64Value == 0)
            // Long polling ends each back channel once it has answered: the client opens many.
            let backChannels = result["backChannels"]?.int64Value ?? 0
            #expect(mode == .longPolling ? backChannels > 6 : backChannels >= 3, "\(mode): \(backChannels) back channels")
        }
    }

    /// Bob's chat list in the browser changes when Alice writes to Family through the Write stream
    /// (with serverTimestamp(), as the SDK sends it): onMessageCreated's last message and Bob's unread
    /// count arrive over WebChannel, in both modes.
    @Test(arguments: Mode.allCases) func bobsChatListChangesWhenAliceWrites(_ mode: Mode) async throws {
        let (python, chromium) = try await Browser.forTest()
        let dev = try await RunningDev.start(["--seed", "demo"])
        defer { dev.kill() }
        let result = try await Self.session(python, chromium, base: dev.base, project: "e2e", session: "chatList", mode: mode)
        let family = try #require(result["family"], "\(result.serialized())\n\(dev.output.suffix(2000))")
        let text = try #require(result["text"]?.stringValue)
        #expect(family["lastMessage"]?["mapValue"]?["fields"]?["text"]?["stringValue"]?.stringValue == text)
        let unread = family["unreadCount"]?["mapValue"]?["fields"]?["bob"]?["integerValue"]?.stringValue
        #expect(unread.flatMap { Int($0) }.map { $0 >= 1 } == true, "Bob's unread count: \(String(describing: unread))")
        #expect(result["pageOrigin"]?.stringValue?.hasPrefix("http://localhost:") == true)
    }

    /// A step without what differs by server by design: the messages that brought the view.
    static func comparable(_ step: JSONValue?) -> JSONValue {
        guard case .object(var members)? = step else { return .null }
        members["messages"] = nil
        return .object(members)
    }

    static func session(_ python: URL, _ chromium: String, base: String, project: String, session: String, mode: Mode) async throws -> JSONValue {
        let script = TestPaths.packageRoot.appendingPathComponent("Tests/Python/webchannel_check.py").path
        let run = try await ProcessRunner.run(python, [script, chromium, base, project, session, mode.rawValue])
        let line = run.stdoutText.split(separator: "\n").last.map(String.init) ?? ""
        guard run.status == 0, let result = try? JSONValue(parsing: Array(line.utf8)) else {
            throw WebChannelTestError(
                description:
                    "webchannel_check.py \(session) \(mode) against \(base) failed (\(run.status)):\n\(run.stdoutText.suffix(4000))\n\(run.stderr.suffix(2000))"
            )
        }
        return result
    }
}
