import AsyncHTTPClient
import Foundation
import HeraldTesting
import Testing
import WireFormats

/// An app's sign-in and writes with Google's own Firebase JS SDK 12.17.0 (vendored, unmodified), in
/// Chromium, against `herald dev` alone: the `auth/…` errors its sign-up screen shows, a reload that
/// keeps the user, a forced token refresh, anonymous sign-in, a password reset, and a message whose
/// event names its writer.
@Suite(.serialized) struct FirebaseSDKBrowserTests {
    /// Where the vendored SDK is (beside the checkout), or a skip saying so.
    static func sdk() throws -> URL {
        let folder = TestPaths.packageRoot.deletingLastPathComponent().appendingPathComponent("shared/vendor/firebase-js-sdk-12.17.0")
        let configured = ProcessInfo.processInfo.environment["HERALD_FIREBASE_JS_SDK"].map { URL(fileURLWithPath: $0) }
        let found = [configured, folder].compactMap { $0 }.first {
            FileManager.default.fileExists(atPath: $0.appendingPathComponent("firebase-auth.js").path)
        }
        guard let found else {
            try skipTest("Google's Firebase JS SDK 12.17.0 is not at \(folder.path) (or HERALD_FIREBASE_JS_SDK): it is vendored beside the checkout")
        }
        return found
    }

    static func run(_ session: String, base: String) async throws -> JSONValue {
        let (python, chromium) = try await Browser.forTest()
        let script = TestPaths.packageRoot.appendingPathComponent("Tests/Python/firebase_sdk_check.py").path
        let run = try await ProcessRunner.run(python, [script, chromium, try sdk().path, base, "e2e", session])
        let line = run.stdoutText.split(separator: "\n").last.map(String.init) ?? ""
        guard run.status == 0, let result = try? JSONValue(parsing: Array(line.utf8)) else {
            throw FirebaseSDKError(description: "\(session): status \(run.status)\n\(run.stdoutText.suffix(3000))\n\(run.stderr.suffix(3000))")
        }
        return result
    }

    @Test func signUpSignInTheErrorsAnAppShowsARefreshAndAReload() async throws {
        _ = try Self.sdk()
        let dev = try await RunningDev.start(["--no-functions"])
        defer { dev.kill() }
        let result = try await Self.run("signIn", base: dev.base)
        let uid = try #require(result["createdUid"]?.stringValue)
        #expect(result["afterReload"]?.stringValue == "Ann", "\(result.serialized())")
        #expect(result["signedIn"]?["uid"]?.stringValue == uid && result["signedIn"]?["displayName"]?.stringValue == "Ann")
        // The codes Google's Auth emulator gives (email enumeration protection on: one code for a wrong password or an unknown email).
        #expect(
            result["errors"] == [
                "wrongPassword": "auth/invalid-credential", "unknownEmail": "auth/invalid-credential", "secondSignUp": "auth/email-already-in-use",
                "weakPassword": "auth/weak-password", "badEmail": "auth/invalid-email",
            ], "\(result["errors"]?.serialized() ?? "")")
        #expect(result["anonymous"]?["isAnonymous"]?.boolValue == true && result["anonymous"]?["uid"]?.stringValue != uid)
        #expect(result["tokenChanged"]?.boolValue == true)
        let claims = try #require(result["tokenClaims"])
        #expect(claims["iss"]?.stringValue == "https://securetoken.google.com/e2e" && claims["aud"]?.stringValue == "e2e")
        #expect(claims["sub"]?.stringValue == uid && claims["user_id"]?.stringValue == uid && claims["email"]?.stringValue == "ann@example.com")
        #expect(claims["firebase"]?["sign_in_provider"]?.stringValue == "password" && claims["name"]?.stringValue == "Ann")
        #expect(result["restored"]?["uid"]?.stringValue == uid, "a page reload restores the signed-in user")
        // The password was never stored or shown in clear.
        #expect(!dev.output.contains("secret123"))
        let users = try await HTTPClient.shared.get("\(dev.base)/herald/auth/export").body
        #expect(users.contains("ann@example.com") && !users.contains("secret123"))
    }

    /// Over WebChannel streaming (a browser) and long polling (React Native).
    @Test(arguments: ["chat", "chatLongPolling"])
    func aMessageAUserWritesIsPushedAndItsEventNamesTheWriter(session: String) async throws {
        _ = try Self.sdk()
        let dev = try await RunningDev.start(["--seed", "demo"])
        defer { dev.kill() }
        let result = try await Self.run(session, base: dev.base)
        let mode = session == "chat" ? "chat" : "poll"
        let ann = try #require(result["ann"]?.stringValue)
        #expect(result["messageText"]?.stringValue == "Hi Ben")
        #expect(result["lastMessageSeen"]?.stringValue == "Hi Ben", "Ben's listener sees the function's write")
        try await dev.waitUntilIdle()
        let pushes = try await dev.pushes().filter { $0["message"]?["token"]?.stringValue == "tok-ben-\(mode)" }
        #expect(pushes.contains { $0["message"]?["notification"]?["body"]?.stringValue?.contains("Hi Ben") == true }, "\(pushes)")
        let deliveries = try await dev.deliveries(state: "delivered")
        let event = deliveries.first {
            $0["trigger"]?.stringValue == "onMessageCreated" && $0["document"]?.stringValue?.hasSuffix("ann-ben-\(mode)/messages/m1") == true
        }
        let writer = "ann.\(mode)@example.com (uid \(ann))"
        #expect(event?["writer"]?.stringValue == writer, "\(deliveries.map { $0.serialized() })")
        #expect(await dev.waitForOutput(containing: "written by \(writer)"), "the event's log line names the writer")
    }

    @Test func aForgottenPasswordIsResetWithTheLinksCode() async throws {
        _ = try Self.sdk()
        let dev = try await RunningDev.start(["--no-functions"])
        defer { dev.kill() }
        let result = try await Self.run("passwordReset", base: dev.base)
        #expect(result["oldPassword"]?.stringValue == "auth/invalid-credential" && result["signedIn"]?.stringValue == "forgot@example.com", "\(result)")
        #expect(await dev.waitForOutput(containing: "password reset for forgot@example.com: \(dev.base)/emulator/action?mode=resetPassword"))
    }
}

struct FirebaseSDKError: Error, CustomStringConvertible {
    let description: String
}
