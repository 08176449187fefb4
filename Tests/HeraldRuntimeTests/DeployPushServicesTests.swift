import Crypto
import Foundation
import HeraldTesting
import Testing

/// `herald deploy --expo --apns-…`: the functions that send pushes get Expo's and APNs's settings in
/// their manifests, the key as a Secret Manager reference that nothing prints; wrong settings are
/// refused before anything runs.
@Suite struct DeployPushServicesTests {
    @Test func pushingFunctionsGetTheSettingsAndTheKeyAsASecretReference() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("herald-deploy-push-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let key = P256.Signing.PrivateKey().pemRepresentation
        let keyFile = folder.appendingPathComponent("AuthKey_ABCDE12345.p8")
        try key.write(to: keyFile, atomically: true, encoding: .utf8)
        var environment = ProcessInfo.processInfo.environment
        environment["HERALD_RENDER_DIR"] = folder.appendingPathComponent("rendered").path
        let run = try await ProcessRunner.run(
            TestPaths.executable("herald"),
            [
                "deploy", "my-project", "europe-west1", "--expo-access-token-secret", "expo-push-token", "--apns-key-file", keyFile.path,
                "--apns-key-id", "ABCDE12345", "--apns-team-id", "TEAM123456", "--apns-topic", "com.example.chat", "--apns-environment", "sandbox",
                "--dry-run", "--package-path", TestPaths.packageRoot.path,
            ], environment: environment)
        #expect(run.status == 0, "\(run.stderr)")
        let output = run.stdoutText + run.stderr
        #expect(output.contains("gcloud secrets versions add herald-apns-key --data-file=\(keyFile.path)"), "\(output.suffix(3000))")
        #expect(output.contains("gcloud secrets add-iam-policy-binding expo-push-token --member=serviceAccount:herald-onmessagecreated@"))
        let body = key.split(separator: "\n").dropFirst().first.map(String.init) ?? "?"
        #expect(!output.contains(body), "the key's contents were printed")
        for function in ["onMessageCreated", "onReadReceipt", "tokenCleanup"] {
            let manifest = try String(contentsOf: folder.appendingPathComponent("rendered/\(function).yaml"), encoding: .utf8)
            #expect(manifest.contains("- name: HERALD_EXPO_PUSH\n              value: 'on'"), "\(function): \(manifest)")
            #expect(
                manifest.contains(
                    "- name: HERALD_EXPO_ACCESS_TOKEN\n              valueFrom:\n                secretKeyRef:\n                  name: expo-push-token\n                  key: latest"
                ), "\(function)")
            #expect(
                manifest.contains("- name: HERALD_APNS_KEY\n              valueFrom:\n                secretKeyRef:\n                  name: herald-apns-key"))
            #expect(manifest.contains("- name: HERALD_APNS_TOPIC\n              value: 'com.example.chat'"))
            #expect(manifest.contains("- name: HERALD_APNS_ENVIRONMENT\n              value: 'sandbox'"))
            #expect(!manifest.contains(body) && !manifest.contains("PUSH_SERVICES"))
        }
        let sweeper = try String(contentsOf: folder.appendingPathComponent("rendered/presenceSweeper.yaml"), encoding: .utf8)
        #expect(!sweeper.contains("HERALD_EXPO") && !sweeper.contains("HERALD_APNS"), "presenceSweeper sends no pushes")
    }

    @Test func wrongPushSettingsAreRefusedBeforeAnythingRuns() async throws {
        let notAKey = FileManager.default.temporaryDirectory.appendingPathComponent("not-a-key-\(UUID().uuidString).p8")
        try "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".write(to: notAKey, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: notAKey) }
        let cases: [([String], String)] = [
            (["--apns-key-id", "ABCDE12345"], "APNs needs --apns-key-file or --apns-key-secret, --apns-team-id, --apns-topic as well"),
            (
                ["--apns-key-file", notAKey.path, "--apns-key-id", "ABCDE12345", "--apns-team-id", "TEAM123456", "--apns-topic", "a.b"],
                "is not an APNs key"
            ),
            (["--apns-key-secret", "k", "--apns-key-id", "abc", "--apns-team-id", "TEAM123456", "--apns-topic", "a.b"], "10-character ids"),
            (["--expo-access-token-secret", "a secret"], "a secret's name is letters"),
            (["--apns-key-secret", "k", "--apns-key-id", "ABCDE12345", "--apns-team-id", "TEAM123456", "--apns-topic", "a;b"], "bundle id"),
        ]
        for (arguments, named) in cases {
            let run = try await ProcessRunner.run(
                TestPaths.executable("herald"),
                ["deploy", "my-project", "europe-west1"] + arguments + ["--dry-run", "--package-path", TestPaths.packageRoot.path])
            #expect(run.status == 64 && run.stderr.contains(named), "\(arguments): \(run.stderr)")
            #expect(!run.stdoutText.contains("+ "), "\(arguments): something ran")
        }
    }
}
