import Foundation
import HeraldTesting
import Testing
import WireFormats

/// The local cloud's Expo and APNs stand-ins speak their services' APIs as those services' own
/// clients expect: Expo's Python SDK publishes and reads receipts; aioapns sends over HTTP/2 with a
/// provider token it signs itself.
@Suite struct StandInTwinTests {
    @Test func exposPythonSDKPublishesAndReadsItsReceipts() async throws {
        let python = try await PythonReference.forTest(importing: "exponent_server_sdk")
        try await withLocalCloud { cloud in
            try await cloud.markDead("ExponentPushToken[Gone]", at: .expo)
            try await cloud.markDead("ExponentPushToken[GoneLater]", at: .expo, when: "receipt")
            let script = TestPaths.packageRoot.appendingPathComponent("Tests/Python/expo_twin.py")
            let tokens = ["ExponentPushToken[Alive]", "ExponentPushToken[AliveToo]", "ExponentPushToken[Gone]", "ExponentPushToken[GoneLater]"]
            let run = try await ProcessRunner.run(python, [script.path, cloud.expoURL] + tokens)
            try #require(run.status == 0, "\(run.stderr)")
            let out = try JSONValue(parsing: Array(run.stdout))
            #expect(out["errors"]?.arrayValue?.isEmpty == true, "\(out)")
            let tickets = out["tickets"]?.arrayValue ?? []
            #expect(tickets.map { $0["status"]?.stringValue } == ["ok", "ok", "error", "ok"], "\(tickets)")
            #expect(tickets[2]["details"]?["error"]?.stringValue == "DeviceNotRegistered")
            let receipts = out["receipts"]?.objectValue ?? [:]
            #expect(receipts.count == 3)
            let goneLater = try #require(tickets[3]["id"]?.stringValue)
            #expect(receipts[goneLater]?["details"]?["error"]?.stringValue == "DeviceNotRegistered")
            #expect(receipts.filter { $0.value["status"]?.stringValue == "ok" }.count == 2)
            // What the SDK sent, field for field as Expo takes it.
            let recorded = try await cloud.pushRecords(.expo)
            #expect(recorded.count == 3)
            #expect(recorded[0].message["channelId"]?.stringValue == "messages")
            #expect(recorded[0].message["categoryId"]?.stringValue == "HERALD_MESSAGE")
        }
    }

    @Test func aioapnsSendsOverHTTP2WithAProviderTokenItSigns() async throws {
        let python = try await PythonReference.forTest(importing: "aioapns")
        try await withLocalCloud { cloud in
            let alive = String(repeating: "a1", count: 32)
            let gone = String(repeating: "b2", count: 32)
            try await cloud.markDead(gone, at: .apns)
            let credentials = cloud.apnsCredentials
            let script = TestPaths.packageRoot.appendingPathComponent("Tests/Python/apns_twin.py")
            let port = String(cloud.apnsURL.split(separator: ":").last ?? "")
            let run = try await ProcessRunner.run(
                python,
                [
                    script.path, port, credentials.authorityFile, credentials.keyFile, credentials.keyID, credentials.teamID, credentials.topic, alive, gone,
                    String(alive.dropLast()),
                ])
            try #require(run.status == 0, "\(run.stderr)")
            let results = try JSONValue(parsing: Array(run.stdout))["results"]?.arrayValue ?? []
            #expect(results.map { $0["status"]?.stringValue } == ["200", "410", "400"], "\(results)")
            #expect(results.map { $0["description"]?.stringValue ?? "" }.dropFirst() == ["Unregistered", "BadDeviceToken"])
            let recorded = try await cloud.pushRecords(.apns)
            #expect(recorded.map(\.token) == [alive])
            #expect(recorded.first?.headers["apns-collapse-id"]?.stringValue == "m1")
        }
    }
}
