import FirestoreModel
import GoogleClients
import HeraldCore
import HeraldHTTPClient
import Logging
import NIOSSL
import PushClients

/// What a function runs on: its documents (Firestore or a snapshot), FCM, and the project. The only
/// place a function is wired: `serve`, `invoke` and `sweep` assemble it, and its host
/// (`FunctionHost`) takes the function's events or runs its schedule on it.
public struct FunctionPlatform: Sendable {
    /// Where the documents come from.
    public enum Source: Sendable {
        /// A JSON snapshot file: fully offline, nothing written. `eventDocument`: the event's own document
        /// as the event carries it, for a snapshot without it or with an older version of it (functions
        /// read the changed document).
        case snapshot(path: String, eventDocument: FirestoreDocument?)
        /// Firestore and FCM through Application Default Credentials (or an emulator); `dryRun`: plan only.
        case google(dryRun: Bool)
    }

    /// A setting that cannot work (an unknown schema, a damaged schema file): the caller's to fix.
    public struct SettingsError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Where a scheduled function's sweeps read and write.
    enum Sweeping: Sendable {
        case snapshot([FirestoreDocument])
        case google(firestore: FirestoreClient, pushes: PushServices, ledger: String, dryRun: Bool)
    }

    /// Where the function reads (and, unless a dry run, writes), and the project it is in (a snapshot's: nil).
    let documents: any DocumentGateway
    let sweeping: Sweeping
    let project: String?
    let transport: HTTPTransport?

    /// Whether `document` is a later version than `stored` (or there is none): by update time, where both have one.
    static func isNewer(_ document: FirestoreDocument, than stored: FirestoreDocument?) -> Bool {
        guard let stored else { return true }
        guard let theirs = stored.updateTime, let ours = document.updateTime else { return false }
        return ours > theirs
    }

    /// - schema: overrides the configuration's (`--schema`).
    /// - metrics: what `serve` counts and serves at `/metrics` (none for one-off commands).
    public static func assemble<Function: ConfigurableFunction>(
        _: Function.Type, schema: String? = nil, configuration: RuntimeConfiguration, source: Source, logger: Logger,
        metrics: RuntimeMetrics? = nil
    ) async throws -> (Function, FunctionPlatform) {
        var settings = FunctionSettings(
            schema: schema ?? configuration.schema, database: configuration.database,
            environment: configuration.environment,
            timeZones: ZoneInfoDirectory.system(environment: configuration.environment).timeZones)
        let function: Function
        do {
            try settings.readSchemaFile()
            function = try Function(settings: settings)
        } catch { throw SettingsError(description: "\(error)") }
        switch source {
        case .snapshot(let path, let eventDocument):
            var gateway = try SnapshotGateway(contentsOf: path)
            // The function runs after the write its event reports: a snapshot without that document, or
            // with an older version of it, is read with the event's version.
            if let eventDocument, Self.isNewer(eventDocument, than: gateway.documents[eventDocument.name]) {
                var documents = gateway.documents
                documents[eventDocument.name] = eventDocument
                gateway = SnapshotGateway(documents: Array(documents.values))
            }
            return (
                function,
                FunctionPlatform(
                    documents: gateway, sweeping: .snapshot(Array(gateway.documents.values)), project: configuration.project, transport: nil)
            )
        case .google(let dryRun):
            // One transport for every Google API the function calls (its connections are per host).
            let transport = HTTPTransport()
            let credentials: ApplicationDefaultCredentials
            do {
                credentials = try await ApplicationDefaultCredentials.resolve(environment: configuration.environment, httpClient: transport)
            } catch let error as AuthError {
                switch error {
                case .notOnGoogleCloud, .missingSetting: throw StartupError(error.description)
                default: break
                }
                throw StartupError("cannot use the Google credentials configured: \(error) (or pass --documents FILE to run offline)")
            }
            let firestore = FirestoreClient(
                project: credentials.project, database: configuration.database,
                endpoint: credentials.firestoreEndpoint, credentials: credentials.firestore, httpClient: transport,
                requestTimeout: configuration.apiTimeout, observer: metrics?.observer(api: "firestore"))
            let fcm = FCMClient(
                project: credentials.project, endpoint: configuration.fcmEndpoint ?? FCMClient.productionEndpoint,
                credentials: credentials.messaging, httpClient: transport, requestTimeout: configuration.apiTimeout,
                observer: metrics?.observer(api: "fcm"))
            let expo = configuration.pushServices.expo.map {
                ExpoPushClient(
                    endpoint: $0.endpoint, accessToken: $0.accessToken, httpClient: transport, requestTimeout: configuration.apiTimeout,
                    observer: metrics?.observer(api: "expo"))
            }
            let apns = try configuration.pushServices.apns.map { settings in
                APNsClient(
                    endpoint: settings.endpoint, topic: settings.topic,
                    providerToken: APNsProviderToken(key: settings.key, keyID: settings.keyID, teamID: settings.teamID, now: { Timestamp.now().seconds }),
                    httpClient: try Self.transport(trusting: settings.trustedCertificatesFile, default: transport), requestTimeout: configuration.apiTimeout,
                    observer: metrics?.observer(api: "apns"))
            }
            let gateway = ExactlyOnceExecutor(
                firestore: firestore, fcm: fcm, expo: expo, apns: apns, functionName: Function.name, dryRun: dryRun, logger: logger,
                ledgerCollection: configuration.ledgerCollection, pushLease: configuration.pushLease, metrics: metrics)
            return (
                function,
                FunctionPlatform(
                    documents: gateway,
                    sweeping: .google(firestore: firestore, pushes: gateway.services, ledger: configuration.ledgerCollection, dryRun: dryRun),
                    project: credentials.project,
                    transport: transport)
            )
        }
    }

    /// The transport for a service whose certificate is trusted besides the system's roots (`herald
    /// dev`'s APNs stand-in), or the shared one.
    static func transport(trusting file: String?, default shared: HTTPTransport) throws -> HTTPTransport {
        guard let file else { return shared }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.file(file)]
        return HTTPTransport(tls: tls)
    }

    public func shutdown() async {
        await transport?.shutdown()
    }
}

/// Why a function cannot start: one line, without the usage text (the command line was fine).
struct StartupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
