import Crypto
import EmbeddedFirestore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// The push services besides FCM, each on a port of its own as their real hosts are: Expo's push API
/// over HTTP/1.1 and APNs over HTTP/2 with TLS. What they take is kept in the local cloud's database.
public struct PushStandIns: Sendable {
    public let records: PushStandInRecords
    public let expo: ExpoSink
    public let apns: APNsSink
    public let credentials: APNsStandInCredentials
    let expoPort: Int
    let apnsPort: Int
    let logger: Logger

    init(
        database: LocalDatabase, directory: String, options: LocalCloudOptions, logger: Logger,
        onRecord: @escaping @Sendable (PushStandInRecords.Recorded) -> Void
    ) async throws {
        records = PushStandInRecords(database: database, onRecord: onRecord)
        expo = ExpoSink(records: records)
        apns = APNsSink(records: records)
        credentials = try await APNsStandInCredentials.load(directory: directory)
        apns.register(
            keyID: credentials.keyID,
            APNsSink.Key(teamID: credentials.teamID, publicKey: credentials.signingKey.publicKey, topics: [credentials.topic]))
        expoPort = options.expoPort
        apnsPort = options.apnsPort
        self.logger = logger
    }

    /// The settings that point a function at these stand-ins, as a deployment's point it at Expo and
    /// Apple: Expo on, and APNs with the stand-in's team key, its topic and its certificate authority.
    public var functionEnvironment: [String: String] {
        [
            "HERALD_EXPO_PUSH": "on", "HERALD_EXPO_ENDPOINT": "http://127.0.0.1:\(expoPort)",
            "HERALD_APNS_KEY_FILE": credentials.keyFile, "HERALD_APNS_KEY_ID": credentials.keyID, "HERALD_APNS_TEAM_ID": credentials.teamID,
            "HERALD_APNS_TOPIC": credentials.topic, "HERALD_APNS_ENDPOINT": "https://127.0.0.1:\(apnsPort)",
            "HERALD_APNS_CA_FILE": credentials.authorityFile,
        ]
    }

    /// Expo's push API on `LocalCloudOptions.expoPort`, as Expo serves it at exp.host.
    public func expoApplication(onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) -> some ApplicationProtocol {
        let router = Router(context: PeerRequestContext.self)
        let expo = self.expo
        for method in [HTTPRequest.Method.get, .post] {
            router.on("**", method: method) { request, _ in Response(await expo.handle(try await Self.local(request))) }
        }
        return Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: expoPort), serverName: "herald-expo-push"),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? 0) }, logger: logger)
    }

    /// APNs on `LocalCloudOptions.apnsPort`: HTTP/2 over TLS with the stand-in's certificate.
    public func apnsApplication(onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) throws -> some Service {
        APNsServer(sink: apns, tls: credentials.certificates.server, port: apnsPort, logger: logger, onRunning: onRunning)
    }

    /// A stand-in's request as its handler reads it (bodies of at most 4 MiB).
    static func local(_ request: Request) async throws -> LocalRequest {
        var request = request
        var headers: [String: String] = [:]
        for field in request.headers where headers[field.name.canonicalName] == nil { headers[field.name.canonicalName] = field.value }
        let body = try await request.collectBody(upTo: 4 << 20)
        return LocalRequest(method: request.method.rawValue, path: request.uri.path, query: request.uri.query, headers: headers, body: Array(buffer: body))
    }
}

/// What `herald dev`'s functions need to reach the APNs stand-in as a deployment reaches Apple: the
/// team's `.p8` key (made once, kept in the data directory), its key id and team id, the topic (the
/// demo app's bundle id) and the stand-in's certificate authority to trust.
public struct APNsStandInCredentials: Sendable {
    public static let keyID = "HERALDKEY1"
    public static let teamID = "HERALDTEAM"
    public static let topic = "app.herald.demo"

    public let keyFile: String
    public var keyID: String { Self.keyID }
    public var teamID: String { Self.teamID }
    public var topic: String { Self.topic }
    public var authorityFile: String { certificates.authorityFile }
    let signingKey: P256.Signing.PrivateKey
    let certificates: StandInCertificates

    static func load(directory: String) async throws -> APNsStandInCredentials {
        let certificates = try await StandInCertificates.load(directory: directory)
        let keyFile = (directory as NSString).appendingPathComponent("AuthKey_\(keyID).p8")
        let key: P256.Signing.PrivateKey
        if let pem = try? String(contentsOfFile: keyFile, encoding: .utf8), let kept = try? P256.Signing.PrivateKey(pemRepresentation: pem) {
            key = kept
        } else {
            key = P256.Signing.PrivateKey()
            // PKCS#8 (`BEGIN PRIVATE KEY`), as Apple's .p8 files are.
            try PrivateFiles.write(key.pemRepresentation, to: keyFile)
        }
        return APNsStandInCredentials(keyFile: keyFile, signingKey: key, certificates: certificates)
    }
}
