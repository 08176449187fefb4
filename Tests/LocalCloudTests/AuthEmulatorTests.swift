import AsyncHTTPClient
import FirestoreModel
import Foundation
import GoogleClients
import HeraldTesting
import NIOCore
import NIOHTTP1
import Testing
import WireFormats

@testable import LocalCloud

/// Firebase Auth on the local cloud's port, as the SDKs and the Admin SDKs call it: the errors in
/// Google's shape, the Admin SDK (firebase-admin) as a twin, hostile input answered with a clear 4xx,
/// users kept across a restart and carried by an export.
@Suite struct AuthEmulatorTests {
    struct Answer {
        var status: Int
        var json: JSONValue
        var error: String? { json["error"]?["message"]?.stringValue }
    }

    static func call(
        _ base: String, _ method: String, _ body: JSONValue, raw: [UInt8]? = nil, headers: [String: String] = [:], client: HTTPClient = .shared
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: "\(base)/identitytoolkit.googleapis.com/v1/\(method)?key=fake-api-key")
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/json")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: raw ?? Array(body.serialized().utf8)))
        let response = try await client.execute(request, timeout: .seconds(60))
        let text = try await response.body.collect(upTo: 4 << 20)
        return Answer(status: Int(response.status.code), json: (try? JSONValue(parsing: Array(buffer: text))) ?? .null)
    }

    static func refresh(_ base: String, _ token: String) async throws -> Answer {
        var request = HTTPClientRequest(url: "\(base)/securetoken.googleapis.com/v1/token?key=fake-api-key")
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(string: "grant_type=refresh_token&refresh_token=\(token)"))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let text = try await response.body.collect(upTo: 1 << 20)
        return Answer(status: Int(response.status.code), json: (try? JSONValue(parsing: Array(buffer: text))) ?? .null)
    }

    /// An unsigned token with these claims, as an emulator's (or a forger's).
    static func token(_ claims: JSONValue) -> String {
        Base64.encode(Array(#"{"alg":"none","typ":"JWT"}"#.utf8), urlSafe: true) + "." + Base64.encode(Array(claims.serialized().utf8), urlSafe: true) + "."
    }

    @Test func hostileInputGetsAClearErrorInGooglesShape() async throws {
        try await withLocalCloud { cloud in
            let base = cloud.baseURL
            let malformed = try await Self.call(base, "accounts:signUp", .null, raw: Array("{\"email\": ".utf8))
            #expect(malformed.status == 400 && malformed.error?.hasPrefix("INVALID_JSON") == true, "\(malformed.json)")
            #expect(malformed.json["error"]?["errors"]?.arrayValue?.first?["domain"]?.stringValue == "global")
            let huge = String(repeating: "p", count: 1 << 20)
            let longPassword = try await Self.call(base, "accounts:signUp", ["email": "a@example.com", "password": .string(huge)])
            #expect(longPassword.status == 400 && longPassword.error?.hasPrefix("WEAK_PASSWORD") == true)
            let longName = try await Self.call(base, "accounts:signUp", ["email": "b@example.com", "password": "secret123", "displayName": .string(huge)])
            #expect(longName.status == 400 && longName.error?.hasPrefix("INVALID_DISPLAY_NAME") == true)
            for (body, code) in [
                (["email": "c@example.com"] as JSONValue, "MISSING_PASSWORD"), (["password": "secret123"], "MISSING_EMAIL"),
                (["email": "c d@example.com", "password": "secret123"], "INVALID_EMAIL"),
            ] {
                #expect(try await Self.call(base, "accounts:signUp", body).error == code, "\(body)")
            }
            // A token of another project, or expired, or forged, is refused as Google's emulator refuses it.
            let now = Int64(Date().timeIntervalSince1970)
            let user = try await Self.call(base, "accounts:signUp", ["email": "d@example.com", "password": "secret123", "returnSecureToken": true])
            let uid = try #require(user.json["localId"]?.stringValue)
            let other = Self.token([
                "iss": "https://securetoken.google.com/another", "aud": "another", "sub": .string(uid), "user_id": .string(uid), "exp": .integer(now + 600),
            ])
            #expect(try await Self.call(base, "accounts:lookup", ["idToken": .string(other)]).error?.hasPrefix("INVALID_ID_TOKEN") == true)
            let expired = Self.token([
                "iss": "https://securetoken.google.com/herald-test", "aud": "herald-test", "sub": .string(uid), "user_id": .string(uid),
                "exp": .integer(now - 1),
            ])
            #expect(try await Self.call(base, "accounts:lookup", ["idToken": .string(expired)]).error == "TOKEN_EXPIRED")
            #expect(try await Self.call(base, "accounts:lookup", ["idToken": "not.a.token"]).error == "INVALID_ID_TOKEN")
            // A refresh token replayed after the account is deleted.
            let refreshToken = try #require(user.json["refreshToken"]?.stringValue)
            #expect(try await Self.refresh(base, refreshToken).status == 200)
            #expect(try await Self.call(base, "accounts:delete", ["idToken": user.json["idToken"] ?? .null]).status == 200)
            let replayed = try await Self.refresh(base, refreshToken)
            #expect(replayed.status == 400 && ["USER_NOT_FOUND", "INVALID_REFRESH_TOKEN"].contains(replayed.error ?? ""), "\(replayed.json)")
            #expect(try await Self.refresh(base, "made-up").error == "INVALID_REFRESH_TOKEN")
            // Still serving the documents.
            let document = try await cloud.firestore().get(try DocumentName(project: "herald-test", path: "users/nobody"))
            #expect(document == nil)
        }
    }

    /// One holder, a line of at most its limit served in order, and no one else kept waiting.
    @Test func hashTurnsHoldOneAndALineAndRefuseTheRest() async throws {
        let turns = HashTurns(waitingLimit: 2)
        #expect(await turns.take())
        let (served, order) = AsyncStream.makeStream(of: Int.self)
        /// Waits (sleeping, never spinning) until `count` are in line.
        func lineHolds(_ count: Int) async throws {
            for _ in 0..<2_000 where turns.waitingCount < count { try await Task.sleep(for: .milliseconds(5)) }
            try #require(turns.waitingCount == count)
        }
        let first = Task { if await turns.take() { order.yield(1) } }
        try await lineHolds(1)
        let second = Task { if await turns.take() { order.yield(2) } }
        try await lineHolds(2)
        #expect(await turns.take() == false, "a full line refuses at once")
        var next = served.makeAsyncIterator()
        turns.release()
        #expect(await next.next() == 1, "the first in line has the turn")
        turns.release()
        #expect(await next.next() == 2)
        turns.release()
        _ = await (first.value, second.value)
        #expect(await turns.take(), "after the last release the turn is free")
    }

    /// A burst of sign-ups hashes one password at a time, with a short line: the rest are told to try
    /// later at once, and the Firestore API answers meanwhile.
    @Test func aThousandSignUpsInABurstLeaveTheCloudServing() async throws {
        try await withLocalCloud { cloud in
            let base = cloud.baseURL
            let firestore = cloud.firestore()
            // 32 connections at once, as many phones would make (HTTPClient.shared keeps 8 to a host).
            let client = HTTPClient(configuration: .init(connectionPool: .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 32)))
            defer { _ = client.shutdown() }
            let counted = try await withThrowingTaskGroup(of: [String: Int].self) { group in
                for lane in 0..<32 {
                    group.addTask {
                        var outcomes: [String: Int] = [:]
                        for index in stride(from: lane, to: 1_000, by: 32) {
                            let answer = try await Self.call(
                                base, "accounts:signUp", ["email": .string("burst\(index)@example.com"), "password": "secret123"], client: client)
                            outcomes[answer.status == 200 ? "ok" : answer.error ?? "\(answer.status)", default: 0] += 1
                        }
                        return outcomes
                    }
                }
                group.addTask {
                    // The documents API, while the burst goes on.
                    let started = ContinuousClock.now
                    _ = try await firestore.get(try DocumentName(project: "herald-test", path: "users/nobody"))
                    #expect(ContinuousClock.now - started < .seconds(5))
                    return [:]
                }
                return try await group.reduce(into: [:]) { total, part in total.merge(part, uniquingKeysWith: +) }
            }
            #expect(Set(counted.keys).isSubset(of: ["ok", "TOO_MANY_ATTEMPTS_TRY_LATER"]), "\(counted)")
            // The first to come and the full line behind it are served.
            #expect(counted.values.reduce(0, +) == 1_000 && (counted["ok"] ?? 0) >= 9, "\(counted)")
            #expect(try await cloud.cloud.auth.archive.exportAccounts(project: "herald-test")["users"]?.arrayValue?.count == counted["ok"])
        }
    }

    /// firebase-admin, with FIREBASE_AUTH_EMULATOR_HOST: what it verifies, finds, lists and makes, the
    /// app's SDK calls see too.
    @Test func firebaseAdminWorksAgainstIt() async throws {
        let python = try await PythonReference.forTest(importing: "firebase_admin")
        try await withLocalCloud { cloud in
            let base = cloud.baseURL
            let user = try await Self.call(
                base, "accounts:signUp", ["email": "eve@example.com", "password": "secret123", "displayName": "Eve", "returnSecureToken": true])
            let idToken = try #require(user.json["idToken"]?.stringValue)
            let script = TestPaths.packageRoot.appendingPathComponent("Tests/Python/firebase_admin_auth.py").path
            let run = try await ProcessRunner.run(
                python, [script, "herald-test", idToken, "eve@example.com"],
                environment: ProcessInfo.processInfo.environment.merging(["FIREBASE_AUTH_EMULATOR_HOST": cloud.host]) { _, new in new })
            try #require(run.status == 0, "\(run.stderr)")
            let out = try JSONValue(parsing: Array(run.stdout))
            #expect(out["verified"]?["uid"] == user.json["localId"] && out["verified"]?["provider"]?.stringValue == "password", "\(out)")
            #expect(out["byEmail"]?["displayName"]?.stringValue == "Eve" && out["byEmail"]?["providers"] == ["password"])
            #expect(out["listed"] == ["eve@example.com"])
            #expect(out["claims"] == ["role": "moderator"] && out["disabled"]?.boolValue == true)
            #expect(out["forged"]?.stringValue != "accepted", "\(out)")
            // What the Admin SDK made, the app signs in as.
            let signIn = try await Self.call(base, "accounts:signInWithPassword", ["email": "made.by.admin@example.com", "password": "admin-secret"])
            #expect(signIn.status == 200 && signIn.json["localId"] == out["created"], "\(signIn.json)")
            let custom = try await Self.call(base, "accounts:signInWithCustomToken", ["token": out["customToken"] ?? .null, "returnSecureToken": true])
            let claims = try #require(
                custom.json["idToken"]?.stringValue.flatMap { Base64.decode($0.split(separator: ".")[1]) }.flatMap { try? JSONValue(parsing: $0) })
            #expect(claims["user_id"]?.stringValue == "custom-user-1" && claims["plan"]?.stringValue == "gold", "\(custom.json)")
        }
    }
}
