import AsyncHTTPClient
import Foundation
import HeraldTesting
import Testing
import WireFormats

/// docs/deploying.md's security rules, as written there, in Google's Firestore emulator: a signed-in
/// client may write the app's documents and not the ledger; the functions' credentials are not subject
/// to rules and write it.
@Suite struct LedgerRulesTests {
    struct NoRulesBlock: Error, CustomStringConvertible {
        var description: String { "docs/deploying.md has no block fenced `rules`" }
    }

    /// The first block fenced `rules` in docs/deploying.md.
    static func documentedRules() throws -> String {
        let text = try String(contentsOf: TestPaths.packageRoot.appendingPathComponent("docs/deploying.md"), encoding: .utf8)
        guard let start = text.range(of: "```rules\n"), let end = text.range(of: "\n```", range: start.upperBound..<text.endIndex) else {
            throw NoRulesBlock()
        }
        return String(text[start.upperBound..<end.lowerBound])
    }

    /// An ID token the emulator takes for a signed-in user (unsigned, as the emulators accept).
    static func idToken(user: String, project: String) -> String {
        let now = Int(Date().timeIntervalSince1970)
        let header = Base64.encode(Array(#"{"alg":"none","typ":"JWT"}"#.utf8), urlSafe: true)
        let claims =
            #"{"iss":"https://securetoken.google.com/\#(project)","aud":"\#(project)","auth_time":\#(now),"user_id":"\#(user)","sub":"\#(user)","iat":\#(now),"exp":\#(now + 3600),"firebase":{"sign_in_provider":"custom","identities":{}}}"#
        return "\(header).\(Base64.encode(Array(claims.utf8), urlSafe: true))."
    }

    @Test func theDocumentedRulesKeepClientsOutOfTheLedger() async throws {
        guard GoogleFirestoreEmulator.isInstalled else {
            try skipTest("Google's Firestore emulator is not installed at \(GoogleFirestoreEmulator.launcher)")
        }
        let rules = FileManager.default.temporaryDirectory.appendingPathComponent("herald-ledger-\(UUID().uuidString).rules")
        try Self.documentedRules().write(to: rules, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: rules) }
        let project = "herald-rules"
        try await GoogleFirestoreEmulator.run(arguments: ["--rules=\(rules.path)"]) { host in
            let base = "http://\(host)/v1/projects/\(project)/databases/(default)/documents"
            let body = Array(#"{"fields":{"n":{"integerValue":"1"}}}"#.utf8)
            func write(_ path: String, as authorization: String?) async throws -> Int {
                var headers = ["content-type": "application/json"]
                if let authorization { headers["authorization"] = authorization }
                return try await HTTPClient.shared.send("PATCH", "\(base)/\(path)", headers: headers, body: body).status
            }
            let user = "Bearer \(Self.idToken(user: "u1", project: project))"
            let signedIn = try await write("users/u1", as: user)
            let anonymous = try await write("users/u1", as: nil)
            let ledgerWrite = try await write("_herald/events/ledger/e1", as: user)
            let ledgerRead = try await HTTPClient.shared.send("GET", "\(base)/_herald/events/ledger/e1", headers: ["authorization": user]).status
            let functions = try await write("_herald/events/ledger/e1", as: "Bearer owner")
            #expect(signedIn == 200, "a signed-in client writes the app's documents")
            #expect(anonymous == 403, "a client not signed in does not")
            #expect(ledgerWrite == 403, "no client writes the ledger")
            #expect(ledgerRead == 403, "nor reads it")
            #expect(functions == 200, "the functions' credentials are not subject to rules")
        }
    }
}
