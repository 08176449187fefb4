import AsyncHTTPClient
import Foundation
import Glibc
import HeraldTesting
import NIOCore
import NIOHTTP1
import Testing

/// Hostile inputs, round 3, class 3: `herald dev --host 0.0.0.0` (a phone on the Wi-Fi) serves other
/// machines the Firestore API and nothing else. The console, admin and replay endpoints, fault
/// injection, the FCM sink and its records, the OAuth, metadata and identity token endpoints and the
/// trace receiver answer only to this machine, known by the connection's peer address: a header saying
/// otherwise changes nothing. Reached here through this machine's own network address, which is not
/// loopback, as another machine's connection would be.
@Suite struct NetworkExposureTests {
    /// An address of this machine that is not loopback (eth0's), or nil.
    static func networkAddress() -> String? {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return nil }
        defer { freeifaddrs(list) }
        for entry in sequence(first: first, next: { $0.pointee.ifa_next }) {
            guard let address = entry.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET) else { continue }
            var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            let ip = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer -> String in
                var inet = pointer.pointee.sin_addr
                _ = inet_ntop(AF_INET, &inet, &text, socklen_t(text.count))
                return String(cString: text)
            }
            if !ip.hasPrefix("127.") { return ip }
        }
        return nil
    }

    static func request(_ method: HTTPMethod, _ url: String, headers: [String: String] = [:], body: String? = nil) async throws -> (status: Int, body: String) {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            request.headers.add(name: "content-type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        return (Int(response.status.code), String(buffer: try await response.body.collect(upTo: 1 << 20)))
    }

    @Test func onTheNetworkOnlyTheDocumentsAPIAnswersOtherMachines() async throws {
        guard let address = Self.networkAddress() else { try skipTest("this machine has no network address besides loopback") }
        let dev = try await RunningDev.start(["--seed", "demo", "--host", "0.0.0.0"])
        defer { dev.kill() }
        #expect(dev.output.contains("exposed on 0.0.0.0: other machines reach the Firestore API (REST, gRPC, WebChannel) only"), "\(dev.output.prefix(2000))")
        let port = dev.base.split(separator: ":").last.map(String.init) ?? ""
        let outside = "http://\(address):\(port)"
        // A forged claim of being this machine, in every header one could think of.
        let forged = ["x-forwarded-for": "127.0.0.1", "x-real-ip": "127.0.0.1", "forwarded": "for=127.0.0.1", "origin": "http://127.0.0.1:\(port)"]

        // The documents API answers: a read, a query, a write.
        let alice = try await Self.request(.GET, "\(outside)/v1/projects/e2e/databases/(default)/documents/users/alice")
        #expect(alice.status == 200 && alice.body.contains("Alice"), "\(alice)")
        let write = try await Self.request(
            .PATCH, "\(outside)/v1/projects/e2e/databases/(default)/documents/notes/n1", body: #"{"fields": {"text": {"stringValue": "from a phone"}}}"#)
        #expect(write.status == 200, "\(write)")

        // Everything else: 403, whatever the headers say.
        for (method, path, body) in [
            (HTTPMethod.GET, "/", nil), (.GET, "/herald/console/events", nil), (.GET, "/herald/fcm/messages", nil),
            (.GET, "/herald/deliveries?state=dead", nil), (.PUT, "/herald/faults", "{}"), (.POST, "/herald/auth/revoke", "{}"),
            (.POST, "/token", #"{"grant_type": "x"}"#), (.GET, "/computeMetadata/v1/instance/service-accounts/default/token", nil),
            (.GET, "/computeMetadata/v1/instance/service-accounts/default/identity?audience=x", nil),
            (.POST, "/v1/projects/e2e/messages:send", #"{"message": {"token": "t"}}"#), (.POST, "/herald/otlp/v1/traces", "{}"),
            (.GET, "/herald/export", nil), (.POST, "/herald/scheduler/jobs/presence-sweep:run", "{}"), (.PUT, "/herald/triggers", "[]"),
        ] {
            for headers in [[:], forged] {
                let answer = try await Self.request(method, outside + path, headers: headers.merging(["metadata-flavor": "Google"]) { a, _ in a }, body: body)
                #expect(
                    answer.status == 403 && answer.body.contains("answers this machine"), "\(method) \(path) \(headers.isEmpty ? "" : "(forged)"): \(answer)")
            }
        }
        // This machine itself still reaches all of it.
        #expect(try await Self.request(.GET, "\(dev.base)/herald/fcm/messages").status == 200)
        #expect(try await Self.request(.GET, "\(dev.base)/", headers: ["accept": "text/html"]).status == 200)
    }

    /// `--admin-from` names a network trusted like this machine (a container's bridge): its peers reach it all.
    @Test func aNetworkGivenWithAdminFromIsTrustedLikeThisMachine() async throws {
        guard let address = Self.networkAddress() else { try skipTest("this machine has no network address besides loopback") }
        let dev = try await RunningDev.start(["--host", "0.0.0.0", "--admin-from", "\(address)/32"])
        defer { dev.kill() }
        let port = dev.base.split(separator: ":").last.map(String.init) ?? ""
        #expect(try await Self.request(.GET, "http://\(address):\(port)/herald/fcm/messages").status == 200)
        let bad = try await ProcessRunner.run(TestPaths.executable("herald"), ["dev", "--admin-from", "everyone", "--ephemeral", "--port", "0"])
        #expect(bad.status != 0 && bad.stderr.contains("--admin-from takes ADDRESS/PREFIX"), "\(bad.stderr)")
    }
}
