import AsyncHTTPClient
import ChatFunctions
import Foundation
import GoogleClients
import HeraldCore
import HeraldHTTPClient
import HeraldRuntime
import LocalCloud
import Logging

#if canImport(Testing)
import Testing
#endif

/// Herald's local cloud running in the test's own process on a free port, with a temporary database.
public struct TestLocalCloud: Sendable {
    public let cloud: LocalCloud
    public let port: Int
    public var host: String { "127.0.0.1:\(port)" }
    public var baseURL: String { "http://\(host)" }

    /// A Firestore client for a project of this cloud, as the functions see it in emulator mode.
    public func firestore(project: String = "herald-test") -> FirestoreClient {
        FirestoreClient(project: project, endpoint: baseURL, credentials: EmulatorCredentials(), httpClient: .shared)
    }
}

extension TestLocalCloud {
    /// How a function process reaches this cloud in emulator mode: Firestore, FCM and tokens at its address.
    public func functionEnvironment(project: String = "herald-test", schema: String = "default") -> [String: String] {
        [
            "FIRESTORE_EMULATOR_HOST": host, "GOOGLE_CLOUD_PROJECT": project, "FCM_ENDPOINT": baseURL,
            "GOOGLE_APPLICATION_CREDENTIALS": "", "GCE_METADATA_HOST": host, "HERALD_SCHEMA": schema,
        ].merging(pushServiceEnvironment) { _, new in new }
    }

    /// Expo's push API and APNs at this cloud's stand-ins, as `herald dev` points its functions at them.
    public var pushServiceEnvironment: [String: String] { cloud.pushStandIns.functionEnvironment }

    /// Expo's push API (`/--/api/v2/push/send`) and APNs (`/3/device/…`, HTTP/2 over TLS) of this cloud.
    public var expoURL: String { "http://127.0.0.1:\(cloud.options.expoPort)" }
    public var apnsURL: String { "https://127.0.0.1:\(cloud.options.apnsPort)" }

    /// A function's real executable serving this cloud, behind the trigger the catalog declares for it
    /// (as `herald dev` wires one). Stop it when done.
    public func serve(_ name: String, schema: String = "default") async throws -> ServingProcess {
        guard let declaration = FunctionCatalog.named(name) else { throw RawHTTPError("no function \(name) in the catalog") }
        let trigger = try declaration.trigger(settings: try FunctionSettings.reading(schema: schema))
        let process = try await ServingProcess.start(name, arguments: [], environment: functionEnvironment(schema: schema))
        if let trigger {
            cloud.triggers.register(function: name, pattern: trigger.pattern, kinds: trigger.kinds, url: "http://127.0.0.1:\(process.port)/")
        }
        return process
    }
}

extension LocalCloudOptions {
    /// Ephemeral, on a free port, with quick retries so delivery tests don't wait.
    public static var testing: LocalCloudOptions {
        var options = LocalCloudOptions()
        options.port = 0
        options.dataDirectory = nil
        options.project = "herald-test"
        options.delivery.minimumBackoff = .milliseconds(50)
        options.delivery.maximumBackoff = .milliseconds(400)
        options.delivery.timeout = .seconds(10)
        return options
    }
}

/// Starts a local cloud (HTTP server and trigger delivery), runs `body`, stops it and removes its state.
public func withLocalCloud<Result: Sendable>(
    _ options: LocalCloudOptions = .testing,
    onDelivery: @escaping @Sendable (DeliveryReport) -> Void = { _ in },
    onJob: @escaping @Sendable (JobRunReport) -> Void = { _ in },
    _ body: @Sendable (TestLocalCloud) async throws -> Result
) async throws -> Result {
    let logger = Logger(label: "local-cloud") { _ in SwiftLogNoOpLogHandler() }
    var options = options
    if options.identityKeyPEM == nil { options.identityKeyPEM = try await TestKeys.rsaPEM() }
    if options.expoPort == 0 { options.expoPort = try freeLoopbackPort() }
    if options.apnsPort == 0 { options.apnsPort = try freeLoopbackPort() }
    let cloud = try await LocalCloud(options: options, logger: logger, onDelivery: onDelivery, onJob: onJob)
    defer { cloud.close() }
    // The Expo and APNs stand-ins listen before the test begins.
    let (standIns, listening) = AsyncStream.makeStream(of: Int.self)
    let expo = cloud.pushStandIns.expoApplication { listening.yield($0) }
    let apns = try cloud.pushStandIns.apnsApplication { listening.yield($0) }
    return try await withRunningApplication(
        logger: logger, alongside: cloud.services + [expo, apns],
        { onRunning in
            cloud.application(onRunning: onRunning)
        },
        { port, _ in
            var started = standIns.makeAsyncIterator()
            for _ in 0..<2 { _ = await started.next() }
            return try await body(TestLocalCloud(cloud: cloud, port: port))
        })
}

/// The Firestore servers tests run against: Herald's own local cloud, and Google's emulator where installed.
public enum FirestoreBackend: String, CaseIterable, Sendable, CustomStringConvertible {
    case herald, google

    public var description: String { self == .herald ? "Herald's local cloud" : "Google's Firestore emulator" }

    /// Runs `body` with the backend's `HOST:PORT`; a backend not on this machine skips the test.
    public func run<T: Sendable>(_ body: @Sendable (String) async throws -> T) async throws -> T {
        switch self {
        case .herald:
            return try await withLocalCloud { try await body($0.host) }
        case .google:
            guard GoogleFirestoreEmulator.isInstalled else {
                try skipTest("\(description) is not installed at \(GoogleFirestoreEmulator.launcher)")
            }
            return try await GoogleFirestoreEmulator.run(body)
        }
    }
}
