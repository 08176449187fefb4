import AsyncHTTPClient
import FirestoreModel
import Foundation
import HeraldTesting
import Supervision
import Testing
import WireFormats

/// Hostile inputs, round 3, class 4: WebChannel under abuse, on a running `herald dev`. Session ids
/// are unpredictable (128 random bits); ten thousand handshakes, a million tiny messages, an offset
/// that lies, and a megabyte of `req` entries each get a bounded answer while another session keeps
/// working and the process's memory stays bounded. (A back channel held by a client that never reads
/// is WebChannelTests.aClientThatNeverReadsHoldsTheStreamBack.)
@Suite(.serialized) struct WebChannelAbuseTests {
    struct Channel {
        let base: String
        var url: String { "\(base)/google.firestore.v1.Firestore/Listen/channel" }
        static let database = "projects%2Fe2e%2Fdatabases%2F(default)"

        func post(_ query: String, _ body: String) async throws -> TestResponse {
            try await HTTPClient.shared.post(
                "\(url)?VER=8&database=\(Self.database)&\(query)", headers: ["content-type": "application/x-www-form-urlencoded"], body: Array(body.utf8))
        }

        static func target(_ path: String, id: Int) -> String {
            let json =
                #"{"database":"projects/e2e/databases/(default)","addTarget":{"documents":{"documents":["projects/e2e/databases/(default)/documents/\#(path)"]},"targetId":\#(id)}}"#
            return json.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        }

        /// A handshake with one listen target: the session id, or nil with the answer.
        func open(_ n: Int) async throws -> (id: String?, answer: TestResponse) {
            let answer = try await post("RID=\(n)&CVER=22", "count=1&ofs=0&req0___data__=\(Self.target("users/alice", id: 2))")
            guard answer.status == 200, let frame = answer.body.split(separator: "\n", maxSplits: 1).last,
                let json = try? JSONValue(parsing: Array(frame.utf8)), let id = json.arrayValue?.first?.arrayValue?.last?.arrayValue?[1].stringValue
            else { return (nil, answer) }
            return (id, answer)
        }
    }

    static func residentMegabytes(_ pid: Int32) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) / 1024
    }

    @Test func handshakesMessagesAndLiesGetBoundedAnswers() async throws {
        let dev = try await RunningDev.start(["--seed", "demo", "--no-functions"])
        defer { dev.kill() }
        let channel = Channel(base: dev.base)
        let (kept, _) = try await channel.open(0)
        let keptID = try #require(kept)
        // A session id is base64 ('+', '/', '='): in a query it is percent-encoded, as the browser's client does.
        let sid = try #require(keptID.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
        let before = Self.residentMegabytes(dev.process.pid)

        // Ten thousand handshakes: every answer bounded, the ones past the cap a 503 that says when to come back.
        var ids: Set<String> = [keptID]
        var refused = 0
        try await withThrowingTaskGroup(of: (String?, TestResponse).self) { group in
            var next = 1
            func start() {
                let n = next
                group.addTask { try await channel.open(n) }
                next += 1
            }
            for _ in 0..<8 { start() }
            for try await (id, answer) in group {
                if let id {
                    #expect(ids.insert(id).inserted, "session ids are never handed out twice")
                } else {
                    #expect(answer.status == 503 && answer.headers["retry-after"] != nil, "\(answer.status) \(answer.body.prefix(200))")
                    refused += 1
                }
                if next <= 10_000 { start() }
                // The kept session is heard from now and then, as a browser's would be (a slow machine's storm
                // may outlast the idle timeout), and answers meanwhile.
                if (ids.count + refused) % 500 == 0 {
                    let heard = try await channel.post("SID=\(sid)&RID=1&AID=0", "count=0&ofs=0")
                    #expect(heard.status == 200, "the kept session, during the storm: \(heard.status) \(heard.body.prefix(200))")
                }
            }
        }
        #expect(refused > 0 && ids.count + refused == 10_001, "\(ids.count) opened, \(refused) refused")
        // 128 random bits each: 16 bytes, base64.
        #expect(ids.allSatisfy { Data(base64Encoded: $0)?.count == 16 }, "\(ids.first ?? "")")

        // An offset that would overflow the messages' ids, and a count that lies: 400, and the process lives.
        let overflow = try await channel.post("SID=\(sid)&RID=2&AID=0", "count=2&ofs=9223372036854775807&req0___data__=%7B%7D&req1___data__=%7B%7D")
        #expect(overflow.status == 400 && overflow.body.contains("ofs must be 0 to"), "\(overflow.status) \(overflow.body)")
        let lying = try await channel.post("SID=\(sid)&RID=3&AID=0", "count=1000&ofs=1&req0___data__=%7B%7D")
        #expect(lying.status == 400, "\(lying.body)")

        // A megabyte of req entries in one POST: refused whole or taken within the session's bounds.
        let megabyte = (0..<1000).map { "req\($0)___data__=\(Channel.target("users/\(String(repeating: "x", count: 900))\($0)", id: 10 + $0))" }.joined(
            separator: "&")
        #expect(megabyte.utf8.count > 1_000_000)
        let big = try await channel.post("SID=\(sid)&RID=4&AID=0", "count=1000&ofs=1&" + megabyte)
        #expect([200, 400, 503].contains(big.status), "\(big.status) \(big.body.prefix(200))")

        // A million tiny messages, as fast as they can be posted: each answer bounded, the queue never past its limit.
        var answered: [Int: Int] = [:]
        var offset = 2000
        for _ in 0..<1000 {
            let body = "count=1000&ofs=\(offset)&" + (0..<1000).map { "req\($0)___data__=%7B%7D" }.joined(separator: "&")
            let answer = try await channel.post("SID=\(sid)&RID=\(offset)&AID=0", body)
            answered[answer.status, default: 0] += 1
            offset += 1000
            if answer.status == 400 { break }  // the stream ended over the junk: the session is gone, as it should be
        }
        #expect(Set(answered.keys).isSubset(of: [200, 400, 503]), "\(answered)")

        // Meanwhile another session still works, end to end: a handshake and its first snapshot.
        let (fresh, freshAnswer) = try await Channel(base: dev.base).open(99_999)
        #expect(fresh != nil || freshAnswer.status == 503, "\(freshAnswer.status)")
        let health = try await HTTPClient.shared.get("\(dev.base)/v1/projects/e2e/databases/(default)/documents/users/alice")
        #expect(health.status == 200, "the documents API still answers")
        let after = Self.residentMegabytes(dev.process.pid)
        #expect(after - before < 400, "resident memory grew from \(before) MB to \(after) MB")
        #expect(!dev.process.hasExited)
    }
}
